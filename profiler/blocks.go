package profiler

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/klauspost/compress/zstd"
)

// The binary log format: a file is a sequence of self-contained blocks, so
// a crash loses at most the unflushed tail and a damaged block never hides
// the ones after it.
//
//	offset size field (little-endian)
//	0      4    magic "CPLB"
//	4      1    version (2; 1 is still read)
//	5      1    codec: 0 none, 1 zstd
//	6      2    reserved (0)
//	8      4    records in the block
//	12     4    payload length in bytes (as stored)
//	16     4    CRC-32C of the stored payload
//	20     4    CRC-32C of bytes 0..19
//	24     ...  payload: records encoded as deltas, then compressed by the codec
//
// Records are (TSC, tuple id) pairs. A version 1 payload is, per record,
// the uvarint TSC delta to the previous record (the first from 0) and the
// zigzag varint id delta: small numbers that compress well. Version 2 adds
// a uvarint to each entry: how many more records follow it with the same
// TSC and the next ids (a bucket logged at one instant is one entry, not
// a hundred); the deltas are to the previous entry's first record.
const (
	blockHeader  = 24
	blockVersion = 2
	CodecNone    = 0
	CodecZstd    = 1
)

// run is consecutive records at one TSC: ids ID, ID+1, ..., ID+N-1 (N >=
// 1). The buffered handler keeps its blocks as runs, so a bucket logged at
// one instant costs one entry on the logging thread and in the file.
type run struct {
	TSC, ID, N uint64
}

var blockMagic = [4]byte{'C', 'P', 'L', 'B'}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Record is one logged event.
type Record struct {
	TSC uint64
	ID  uint64
}

// encodeRuns appends the version 2 delta encoding of runs to dst.
func encodeRuns(dst []byte, runs []run) []byte {
	var prevT, prevID uint64
	for _, r := range runs {
		dst = binary.AppendUvarint(dst, r.TSC-prevT)
		dst = binary.AppendVarint(dst, int64(r.ID-prevID))
		dst = binary.AppendUvarint(dst, r.N-1)
		prevT, prevID = r.TSC, r.ID
	}
	return dst
}

// runDecoder walks the entries of a version 1 or 2 payload announcing n
// records. A version 2 entry may not announce more records than the block
// has left, so a few bytes can never expand past the block's count.
type runDecoder struct {
	b       []byte
	t, id   uint64
	left    int // records the block still announces
	version byte
}

// next decodes the next entry: n records at TSC t with ids id, id+1, ...
func (d *runDecoder) next() (t, id, n uint64, err error) {
	dt, k := binary.Uvarint(d.b)
	if k <= 0 {
		return 0, 0, 0, errors.New("record truncated")
	}
	d.b = d.b[k:]
	did, k := binary.Varint(d.b)
	if k <= 0 {
		return 0, 0, 0, errors.New("record truncated")
	}
	d.b = d.b[k:]
	d.t, d.id = d.t+dt, d.id+uint64(did)
	more := uint64(0)
	if d.version >= 2 {
		if more, k = binary.Uvarint(d.b); k <= 0 {
			return 0, 0, 0, errors.New("record truncated")
		}
		d.b = d.b[k:]
		if more >= uint64(d.left) {
			return 0, 0, 0, fmt.Errorf("a run of %d records where the block has %d left", more+1, d.left)
		}
	}
	d.left -= int(more) + 1
	return d.t, d.id, more + 1, nil
}

// end says whether the payload held exactly the records it announced.
func (d *runDecoder) end() error {
	if len(d.b) != 0 {
		return errors.New("bytes after the last record")
	}
	return nil
}

// decodeRecords appends the n records of a payload to dst in one pass
// (a block that fits in one chunk).
func decodeRecords(dst []Record, raw []byte, n int, version byte) ([]Record, error) {
	d := runDecoder{b: raw, left: n, version: version}
	for d.left > 0 {
		t, id, k, err := d.next()
		if err != nil {
			return dst, err
		}
		for i := uint64(0); i < k; i++ {
			dst = append(dst, Record{TSC: t, ID: id + i})
		}
	}
	return dst, d.end()
}

// checkRecords walks a whole payload without expanding it: an error says
// why the block is damaged, before any of its records is handed out.
func checkRecords(raw []byte, n int, version byte) error {
	d := runDecoder{b: raw, left: n, version: version}
	for d.left > 0 {
		if _, _, _, err := d.next(); err != nil {
			return err
		}
	}
	return d.end()
}

// blockEncoder turns records into framed blocks (one per worker).
type blockEncoder struct {
	zenc *zstd.Encoder
	raw  []byte
}

func newBlockEncoder(codec int) (*blockEncoder, error) {
	e := &blockEncoder{}
	if codec == CodecZstd {
		z, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		e.zenc = z
	}
	return e, nil
}

// encode appends one framed block holding runs (records in all) to dst.
func (e *blockEncoder) encode(dst []byte, runs []run, records int) []byte {
	e.raw = encodeRuns(e.raw[:0], runs)
	codec, payload := byte(CodecNone), e.raw
	if e.zenc != nil {
		codec, payload = CodecZstd, e.zenc.EncodeAll(e.raw, nil)
	}
	return appendBlock(dst, codec, payload, records)
}

// appendBlock appends payload framed as a block of records records
// encoded with codec. The header is built in place in dst: a local array
// would escape through crc32 and cost an allocation per block (per record
// for the identity handler).
func appendBlock(dst []byte, codec byte, payload []byte, records int) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, blockHeader)...)
	h := dst[start : start+blockHeader]
	copy(h, blockMagic[:])
	h[4], h[5] = blockVersion, codec
	binary.LittleEndian.PutUint32(h[8:], uint32(records))
	binary.LittleEndian.PutUint32(h[12:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[16:], crc32.Checksum(payload, crcTable))
	binary.LittleEndian.PutUint32(h[20:], crc32.Checksum(h[:20], crcTable))
	return append(dst, payload...)
}
