package scenarios

import (
	"encoding/binary"

	"github.com/cloudprofiler-go/cp/wire"
)

// Tuple is the receiver's object for one tuple. Byte fields are sub-slices
// of the message buffer they were decoded from (zero copy): they stay valid
// until the bucket that holds the tuple is recycled.
type Tuple struct {
	ID         uint64
	IntendedNs int64 // intended emission time, Unix nanoseconds
	Ad         AdEvent
	Payload    []byte // synthetic: the payload; raw: the remaining fields as msgpack
	Window     Window
}

// Window is a windowed count (SchemaWindow): the tuple's id and intended
// time are the latest counted tuple's.
type Window struct {
	Key   []byte
	EndMs int64 // the window's end, Unix ms (exclusive)
	Count int64
	// NoIdentity: a JSON window without a counted event's identity; the
	// tuple's intended time is its latest event's, or else its end.
	NoIdentity bool
}

// AdEvent is the Yahoo streaming benchmark event.
type AdEvent struct {
	UserID, PageID, AdID []byte // 16-byte UUIDs
	AdType, EventType    []byte
	EventTimeMs          int64
	IP                   []byte
}

// Decoder decodes one msgpack tuple at off into t and returns the offset
// after it. Implementations do not allocate.
type Decoder func(b []byte, off int, t *Tuple) (int, error)

// DecoderFor returns the decoder of a schema name.
func DecoderFor(schema string) (Decoder, bool) {
	switch schema {
	case SchemaAdEvent:
		return DecodeAdEvent, true
	case SchemaSynthetic:
		return DecodeSynthetic, true
	case SchemaRaw:
		return DecodeRaw, true
	case SchemaWindow:
		return DecodeWindow, true
	}
	return nil, false
}

// decodeHead reads the array header, tuple id and intended time.
func decodeHead(b []byte, off int, t *Tuple, minFields int) (fields, next int, err error) {
	n, off, err := wire.ReadArrayLen(b, off)
	if err != nil {
		return 0, off, err
	}
	if n < minFields {
		return 0, off, wire.ErrTupleFields
	}
	if t.ID, off, err = wire.ReadUint(b, off); err != nil {
		return 0, off, err
	}
	if t.IntendedNs, off, err = wire.ReadInt(b, off); err != nil {
		return 0, off, err
	}
	return n, off, nil
}

// skipExtra passes over fields a newer producer may have appended.
func skipExtra(b []byte, off, extra int) (int, error) {
	var err error
	for ; extra > 0; extra-- {
		if off, err = wire.Skip(b, off); err != nil {
			return off, err
		}
	}
	return off, nil
}

// The fast paths below recognise the exact layout dgsend writes (fixed-width
// integers, bin 8 ids, short strings) in straight-line code and report
// false on anything else, which then goes through the general msgpack
// readers: same results, a fraction of the branches and calls.

// fastHead reads a fixarray of n fields starting with a 9-byte uint id and
// a 9-byte int time.
func fastHead(b []byte, off, n int, t *Tuple) bool {
	if off+19 > len(b) || b[off] != 0x90|byte(n) || b[off+1] != 0xcf || b[off+10] != 0xd3 {
		return false
	}
	t.ID = binary.BigEndian.Uint64(b[off+2:])
	t.IntendedNs = int64(binary.BigEndian.Uint64(b[off+11:]))
	return true
}

// fastStr reads a fixstr or bin 8 at off.
func fastStr(b []byte, off int) ([]byte, int, bool) {
	if off >= len(b) {
		return nil, off, false
	}
	c := b[off]
	start, n := off+1, int(c&0x1f)
	switch {
	case c&0xe0 == 0xa0:
	case c == 0xc4 && off+1 < len(b):
		start, n = off+2, int(b[off+1])
	default:
		return nil, off, false
	}
	end := start + n
	if end > len(b) {
		return nil, off, false
	}
	return b[start:end:end], end, true
}

func fastAdEvent(b []byte, off int, t *Tuple) (int, bool) {
	if !fastHead(b, off, 9, t) {
		return off, false
	}
	a := &t.Ad
	p, ok := off+19, false
	if a.UserID, p, ok = fastStr(b, p); !ok {
		return off, false
	}
	if a.PageID, p, ok = fastStr(b, p); !ok {
		return off, false
	}
	if a.AdID, p, ok = fastStr(b, p); !ok {
		return off, false
	}
	if a.AdType, p, ok = fastStr(b, p); !ok {
		return off, false
	}
	if a.EventType, p, ok = fastStr(b, p); !ok {
		return off, false
	}
	if p+9 > len(b) || b[p] != 0xd3 {
		return off, false
	}
	a.EventTimeMs = int64(binary.BigEndian.Uint64(b[p+1:]))
	if a.IP, p, ok = fastStr(b, p+9); !ok {
		return off, false
	}
	return p, validAdEvent(a)
}

// DecodeAdEvent decodes [id, intended_ns, user_id, page_id, ad_id, ad_type,
// event_type, event_time_ms, ip_address, ...].
// The ids must be 16 bytes and ad_type and event_type one of the YSB's
// values (docs/wire.md); event_time_ms (any integer) and ip_address (any
// string) are opaque.
func DecodeAdEvent(b []byte, off int, t *Tuple) (int, error) {
	if next, ok := fastAdEvent(b, off, t); ok {
		return next, nil
	}
	return decodeAdEventGeneric(b, off, t) // also what the fast path refuses, to say why
}

// validAdEvent checks the fields the wire format constrains. Every
// accepted value has a length of its own (the two 6-byte ad types differ
// in their first byte), so one length test picks the one comparison to
// make, done on integers: a string comparison costs more than the decode.
func validAdEvent(a *AdEvent) bool {
	if len(a.UserID) != 16 || len(a.PageID) != 16 || len(a.AdID) != 16 {
		return false
	}
	t := a.AdType
	switch len(t) {
	case 4:
		if le(t) != wordMail {
			return false
		}
	case 5:
		if le(t) != wordModal {
			return false
		}
	case 6:
		if w := le(t); w != wordBanner && w != wordMobile {
			return false
		}
	case 16:
		if le(t[:8]) != wordSponsored0 || le(t[8:]) != wordSponsored1 {
			return false
		}
	default:
		return false
	}
	e := a.EventType
	switch len(e) {
	case 4:
		return le(e) == wordView
	case 5:
		return le(e) == wordClick
	case 8:
		return le(e) == wordPurchase
	}
	return false
}

// le is up to 8 bytes as a little-endian integer.
func le(b []byte) uint64 {
	switch len(b) {
	case 8:
		return binary.LittleEndian.Uint64(b)
	case 6:
		return uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint16(b[4:]))<<32
	case 5:
		return uint64(binary.LittleEndian.Uint32(b)) | uint64(b[4])<<32
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	var w uint64
	for i := len(b) - 1; i >= 0; i-- {
		w = w<<8 | uint64(b[i])
	}
	return w
}

// The YSB's values as le sees them (constants, computed once).
var (
	wordMail, wordModal, wordBanner, wordMobile = le([]byte("mail")), le([]byte("modal")), le([]byte("banner")), le([]byte("mobile"))
	wordSponsored0, wordSponsored1              = le([]byte("sponsore")), le([]byte("d-search"))
	wordView, wordClick, wordPurchase           = le([]byte("view")), le([]byte("click")), le([]byte("purchase"))
)

func decodeAdEventGeneric(b []byte, off int, t *Tuple) (int, error) {
	n, off, err := decodeHead(b, off, t, 9)
	if err != nil {
		return off, err
	}
	a := &t.Ad
	if a.UserID, off, err = wire.ReadBytes(b, off); err != nil {
		return off, err
	}
	if a.PageID, off, err = wire.ReadBytes(b, off); err != nil {
		return off, err
	}
	if a.AdID, off, err = wire.ReadBytes(b, off); err != nil {
		return off, err
	}
	if a.AdType, off, err = wire.ReadBytes(b, off); err != nil {
		return off, err
	}
	if a.EventType, off, err = wire.ReadBytes(b, off); err != nil {
		return off, err
	}
	if a.EventTimeMs, off, err = wire.ReadInt(b, off); err != nil {
		return off, err
	}
	if a.IP, off, err = wire.ReadBytes(b, off); err != nil {
		return off, err
	}
	if !validAdEvent(a) {
		return off, wire.ErrTupleValue
	}
	return skipExtra(b, off, n-9)
}

// DecodeSynthetic decodes [id, intended_ns, payload, ...].
func DecodeSynthetic(b []byte, off int, t *Tuple) (int, error) {
	if fastHead(b, off, 3, t) {
		p := off + 19
		if p+2 <= len(b) && b[p] == 0xc4 {
			if end := p + 2 + int(b[p+1]); end <= len(b) {
				t.Payload = b[p+2 : end : end]
				return end, nil
			}
		}
	}
	return decodeSyntheticGeneric(b, off, t)
}

func decodeSyntheticGeneric(b []byte, off int, t *Tuple) (int, error) {
	n, off, err := decodeHead(b, off, t, 3)
	if err != nil {
		return off, err
	}
	if t.Payload, off, err = wire.ReadBytes(b, off); err != nil {
		return off, err
	}
	return skipExtra(b, off, n-3)
}

// DecodeRaw decodes [id, intended_ns, ...] and keeps the rest undecoded.
func DecodeRaw(b []byte, off int, t *Tuple) (int, error) {
	n, off, err := decodeHead(b, off, t, 2)
	if err != nil {
		return off, err
	}
	start := off
	if off, err = skipExtra(b, off, n-2); err != nil {
		return off, err
	}
	t.Payload = b[start:off:off]
	return off, nil
}

// MaxWindowCount bounds one window's count: more tuples than 256 streams
// could send in a year at 10 M/s each. Every count the harness adds up is
// below it, so that no sum of them wraps (a job writing counts that add up
// to 2^64 once passed as exact).
const MaxWindowCount = 1 << 47

// DecodeWindow decodes [id, intended_ns, key, window_end_ms, count, ...]:
// a key of at most 256 bytes and a count from 0 to MaxWindowCount.
func DecodeWindow(b []byte, off int, t *Tuple) (int, error) {
	n, off, err := decodeHead(b, off, t, 5)
	if err != nil {
		return off, err
	}
	w := &t.Window
	if w.Key, off, err = wire.ReadBytes(b, off); err != nil {
		return off, err
	}
	if w.EndMs, off, err = wire.ReadInt(b, off); err != nil {
		return off, err
	}
	if w.Count, off, err = wire.ReadInt(b, off); err != nil {
		return off, err
	}
	if len(w.Key) > 256 || w.Count < 0 || w.Count > MaxWindowCount {
		return off, wire.ErrTupleValue
	}
	return skipExtra(b, off, n-5)
}

// EachTuple decodes the tuples of a data bucket with decode and hands each
// to f (the tuple is reused: copy what is kept); an end marker has none.
// A malformed bucket is an error, after the tuples before the fault.
func EachTuple(msg []byte, decode Decoder, f func(*Tuple)) error {
	h, err := wire.ParseHeader(msg)
	if err != nil || h.Kind != wire.KindData {
		return err
	}
	off := wire.HeaderSize
	var t Tuple
	for range h.Count {
		if off, err = decode(msg, off, &t); err != nil {
			return err
		}
		f(&t)
	}
	if off != len(msg) {
		return wire.ErrTupleCount
	}
	return nil
}
