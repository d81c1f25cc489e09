package wire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Version is the format version this code writes and the only one it reads.
const Version = 1

// HeaderSize is the length of the fixed bucket header in bytes.
const HeaderSize = 24

// Magic is the first two bytes of every message ("CP").
const (
	Magic0 = 'C'
	Magic1 = 'P'
)

// Kind says what a message carries.
type Kind uint8

const (
	// KindData is a bucket of tuples.
	KindData Kind = 1
	// KindEnd is an end-of-stream marker with the stream's final counts.
	KindEnd Kind = 2
)

// Header is the fixed part of every message. All integers are little-endian.
//
//	offset size field
//	0      2    magic "CP"
//	2      1    version (1)
//	3      1    kind (1 data, 2 end of stream)
//	4      4    stream id
//	8      8    bucket sequence number (0, 1, 2, ... per stream; for an end
//	            marker: the number of data buckets the stream sent)
//	16     4    tuple count (0 for an end marker)
//	20     4    body length in bytes (the message length minus 24)
type Header struct {
	Kind    Kind
	Stream  uint32
	Seq     uint64
	Count   uint32
	BodyLen uint32
}

// Errors returned by the decoders. They are values, not wrapped, so the hot
// receive path can classify a malformed message without allocating.
var (
	ErrShort       = errors.New("message shorter than the 24-byte header")
	ErrMagic       = errors.New("bad magic: not a Cloudprofiler message")
	ErrVersion     = errors.New("unsupported format version")
	ErrKind        = errors.New("unknown message kind")
	ErrBodyLen     = errors.New("body length in header does not match message length")
	ErrTruncated   = errors.New("msgpack value truncated")
	ErrType        = errors.New("unexpected msgpack type")
	ErrTupleCount  = errors.New("bucket holds fewer or more tuples than its header says")
	ErrTupleFields = errors.New("tuple is not an array of at least [tuple_id, intended_ns]")
	ErrStream      = errors.New("stream id above 0xffff (its upper 16 bits must be 0)")
	ErrTupleValue  = errors.New("tuple field out of its schema's range")
)

// PutHeader writes h into the first HeaderSize bytes of b.
func PutHeader(b []byte, h Header) {
	_ = b[HeaderSize-1]
	b[0], b[1], b[2], b[3] = Magic0, Magic1, Version, byte(h.Kind)
	binary.LittleEndian.PutUint32(b[4:], h.Stream)
	binary.LittleEndian.PutUint64(b[8:], h.Seq)
	binary.LittleEndian.PutUint32(b[16:], h.Count)
	binary.LittleEndian.PutUint32(b[20:], h.BodyLen)
}

// PutSeq patches the sequence number of an encoded header in place.
func PutSeq(b []byte, seq uint64) { binary.LittleEndian.PutUint64(b[8:], seq) }

// ParseHeader validates and decodes the header of a whole message.
func ParseHeader(msg []byte) (Header, error) {
	if len(msg) < HeaderSize {
		return Header{}, ErrShort
	}
	if msg[0] != Magic0 || msg[1] != Magic1 {
		return Header{}, ErrMagic
	}
	if msg[2] != Version {
		return Header{}, ErrVersion
	}
	h := Header{
		Kind:    Kind(msg[3]),
		Stream:  binary.LittleEndian.Uint32(msg[4:]),
		Seq:     binary.LittleEndian.Uint64(msg[8:]),
		Count:   binary.LittleEndian.Uint32(msg[16:]),
		BodyLen: binary.LittleEndian.Uint32(msg[20:]),
	}
	if h.Kind != KindData && h.Kind != KindEnd {
		return Header{}, ErrKind
	}
	if h.Stream > MaxStream {
		return Header{}, ErrStream
	}
	if uint64(h.BodyLen) != uint64(len(msg)-HeaderSize) {
		return Header{}, ErrBodyLen
	}
	return h, nil
}

// MaxStream is the largest stream id: the id's upper 16 bits are 0, so
// that stream << 48 | n stays a unique 64-bit tuple id.
const MaxStream = 0xffff

// StreamID builds a stream id from a sender id and a sender thread.
func StreamID(sender uint8, thread uint8) uint32 { return uint32(sender)<<8 | uint32(thread) }

// TupleID builds the unique 64-bit tuple id: the stream id in the top 16
// bits and the per-stream tuple sequence in the low 48 bits (2.8e14 tuples
// per stream: 325 days at 10 M tuples/s).
func TupleID(stream uint32, seq uint64) uint64 { return uint64(stream&0xffff)<<48 | seq&(1<<48-1) }

// SplitTupleID is the inverse of TupleID.
func SplitTupleID(id uint64) (stream uint32, seq uint64) { return uint32(id >> 48), id & (1<<48 - 1) }

// End is the body of an end-of-stream marker (a msgpack map with these keys),
// the stream's final counts as the sender saw them.
type End struct {
	Tuples         uint64 `msgpack:"tuples"`          // tuples in data buckets sent
	Buckets        uint64 `msgpack:"buckets"`         // data buckets sent (= next sequence number)
	DroppedBuckets uint64 `msgpack:"dropped_buckets"` // buckets not sent (overflow policy drop)
	DroppedTuples  uint64 `msgpack:"dropped_tuples"`
	Reason         string `msgpack:"reason"` // "completed", "interrupted" or "error"
}

// AppendEnd appends a complete end-of-stream message for stream to dst.
func AppendEnd(dst []byte, stream uint32, e End) ([]byte, error) {
	body, err := msgpack.Marshal(&e)
	if err != nil {
		return dst, fmt.Errorf("encode end marker: %w", err)
	}
	var h [HeaderSize]byte
	PutHeader(h[:], Header{Kind: KindEnd, Stream: stream, Seq: e.Buckets, BodyLen: uint32(len(body))})
	return append(append(dst, h[:]...), body...), nil
}

// MaxEndBody bounds an end marker's body: five counts and a short reason
// take well under it, so anything longer is malformed.
const MaxEndBody = 1024

// MaxCount is the largest count an end marker may carry (2^63 - 1): every
// count must also fit a signed 64-bit integer, so that no implementation
// reads a negative number and no total wraps.
const MaxCount = 1<<63 - 1

// Errors of end markers (all counted as malformed, reason end_marker).
var (
	ErrEndCount   = errors.New("end marker count is negative, above 2^63-1 or not an integer")
	ErrEndKeys    = errors.New("end marker lacks a required key (tuples, buckets)")
	ErrEndHeader  = errors.New("end marker header's tuple count is not 0")
	ErrEndBuckets = errors.New("end marker's buckets disagree with its header's sequence number")
)

// ParseEnd decodes and checks an end marker whose header was parsed: the
// header's count is 0, the body holds the required keys with counts in
// range, and its buckets equal the header's sequence number.
func ParseEnd(msg []byte) (End, error) {
	if binary.LittleEndian.Uint32(msg[16:]) != 0 {
		return End{}, ErrEndHeader
	}
	body := msg[HeaderSize:]
	if len(body) > MaxEndBody {
		return End{}, fmt.Errorf("decode end marker: body of %d bytes is longer than %d", len(body), MaxEndBody)
	}
	var raw map[string]any
	if err := msgpack.Unmarshal(body, &raw); err != nil {
		return End{}, fmt.Errorf("decode end marker: %w", err)
	}
	var e End
	for key, dst := range map[string]*uint64{"tuples": &e.Tuples, "buckets": &e.Buckets, "dropped_buckets": &e.DroppedBuckets, "dropped_tuples": &e.DroppedTuples} {
		v, ok := raw[key]
		if !ok {
			if key == "tuples" || key == "buckets" {
				return End{}, fmt.Errorf("%w: %s", ErrEndKeys, key)
			}
			continue
		}
		n, ok := count(v)
		if !ok {
			return End{}, fmt.Errorf("%w: %s", ErrEndCount, key)
		}
		*dst = n
	}
	if r, ok := raw["reason"]; ok {
		str, isStr := r.(string)
		if !isStr {
			return End{}, errors.New("decode end marker: reason is not a string")
		}
		e.Reason = str
	}
	if e.Buckets != binary.LittleEndian.Uint64(msg[8:]) {
		return End{}, ErrEndBuckets
	}
	return e, nil
}

// count is v as a count in [0, MaxCount].
func count(v any) (uint64, bool) {
	switch n := v.(type) {
	case int8:
		return uint64(n), n >= 0
	case int16:
		return uint64(n), n >= 0
	case int32:
		return uint64(n), n >= 0
	case int64:
		return uint64(n), n >= 0
	case uint8:
		return uint64(n), true
	case uint16:
		return uint64(n), true
	case uint32:
		return uint64(n), true
	case uint64:
		return n, n <= MaxCount
	}
	return 0, false
}
