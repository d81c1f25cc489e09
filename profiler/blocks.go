package profiler

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/zstd"
)

// The binary log format: a file is a sequence of self-contained blocks, so
// a crash loses at most the unflushed tail and a damaged block never hides
// the ones after it.
//
//	offset size field (little-endian)
//	0      4    magic "CPLB"
//	4      1    version (1)
//	5      1    codec: 0 none, 1 zstd
//	6      2    reserved (0)
//	8      4    records in the block
//	12     4    payload length in bytes (as stored)
//	16     4    CRC-32C of the stored payload
//	20     4    CRC-32C of bytes 0..19
//	24     ...  payload: records encoded as deltas, then compressed by the codec
//
// Records are (TSC, tuple id) pairs. The payload is the uvarint TSC delta
// to the previous record (the first from 0) and the zigzag varint id delta,
// per record: small numbers that compress well.
const (
	blockHeader  = 24
	blockVersion = 1
	CodecNone    = 0
	CodecZstd    = 1
)

var blockMagic = [4]byte{'C', 'P', 'L', 'B'}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Record is one logged event.
type Record struct {
	TSC uint64
	ID  uint64
}

// encodeRecords appends the delta encoding of recs to dst.
func encodeRecords(dst []byte, recs []Record) []byte {
	var prevT, prevID uint64
	for _, r := range recs {
		dst = binary.AppendUvarint(dst, r.TSC-prevT)
		dst = binary.AppendVarint(dst, int64(r.ID-prevID))
		prevT, prevID = r.TSC, r.ID
	}
	return dst
}

func decodeRecords(dst []Record, b []byte, n int) ([]Record, error) {
	var t, id uint64
	for i := 0; i < n; i++ {
		dt, k := binary.Uvarint(b)
		if k <= 0 {
			return dst, errors.New("record truncated")
		}
		b = b[k:]
		did, k := binary.Varint(b)
		if k <= 0 {
			return dst, errors.New("record truncated")
		}
		b = b[k:]
		t, id = t+dt, id+uint64(did)
		dst = append(dst, Record{TSC: t, ID: id})
	}
	if len(b) != 0 {
		return dst, errors.New("bytes after the last record")
	}
	return dst, nil
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

// encode appends one framed block holding recs to dst.
func (e *blockEncoder) encode(dst []byte, recs []Record) []byte {
	e.raw = encodeRecords(e.raw[:0], recs)
	codec, payload := byte(CodecNone), e.raw
	if e.zenc != nil {
		codec, payload = CodecZstd, e.zenc.EncodeAll(e.raw, nil)
	}
	// The header is built in place in dst: a local array would escape
	// through crc32 and cost an allocation per block (per record for the
	// identity handler).
	start := len(dst)
	dst = append(dst, make([]byte, blockHeader)...)
	h := dst[start : start+blockHeader]
	copy(h, blockMagic[:])
	h[4], h[5] = blockVersion, codec
	binary.LittleEndian.PutUint32(h[8:], uint32(len(recs)))
	binary.LittleEndian.PutUint32(h[12:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[16:], crc32.Checksum(payload, crcTable))
	binary.LittleEndian.PutUint32(h[20:], crc32.Checksum(h[:20], crcTable))
	return append(dst, payload...)
}

// Corruption describes damaged bytes the reader skipped.
type Corruption struct {
	Offset int64  `json:"offset"`
	Reason string `json:"reason"`
}

func (c Corruption) Error() string { return fmt.Sprintf("offset %d: %s", c.Offset, c.Reason) }

// ReadBlocks reads a binary log: it calls fn for every intact block and
// skips damaged bytes (resynchronising on the next block magic), returning
// what it skipped. Only an I/O error stops it.
func ReadBlocks(r io.Reader, fn func(recs []Record) error) ([]Corruption, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read log: %w", err)
	}
	var bad []Corruption
	zdec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	defer zdec.Close()
	var recs []Record
	off := 0
	skip := func(reason string) {
		bad = append(bad, Corruption{Offset: int64(off), Reason: reason})
		next := indexMagic(data[off+1:])
		if next < 0 {
			off = len(data)
		} else {
			off += 1 + next
		}
	}
	for off < len(data) {
		h := data[off:]
		switch {
		case len(h) < blockHeader:
			skip(fmt.Sprintf("truncated block header (%d bytes)", len(h)))
			continue
		case [4]byte(h[:4]) != blockMagic:
			skip("not a block header")
			continue
		case binary.LittleEndian.Uint32(h[20:]) != crc32.Checksum(h[:20], crcTable):
			skip("block header checksum mismatch")
			continue
		case h[4] != blockVersion:
			skip(fmt.Sprintf("unsupported block version %d", h[4]))
			continue
		}
		n := int(binary.LittleEndian.Uint32(h[8:]))
		plen := int(binary.LittleEndian.Uint32(h[12:]))
		if plen > len(h)-blockHeader {
			skip(fmt.Sprintf("truncated block: %d payload bytes announced, %d present", plen, len(h)-blockHeader))
			continue
		}
		payload := h[blockHeader : blockHeader+plen]
		if binary.LittleEndian.Uint32(h[16:]) != crc32.Checksum(payload, crcTable) {
			skip("block payload checksum mismatch")
			continue
		}
		raw := payload
		if h[5] == CodecZstd {
			if raw, err = zdec.DecodeAll(payload, nil); err != nil {
				skip("zstd: " + err.Error())
				continue
			}
		} else if h[5] != CodecNone {
			skip(fmt.Sprintf("unknown codec %d", h[5]))
			continue
		}
		if recs, err = decodeRecords(recs[:0], raw, n); err != nil {
			skip(err.Error())
			continue
		}
		if err := fn(recs); err != nil {
			return bad, err
		}
		off += blockHeader + plen
	}
	return bad, nil
}

func indexMagic(b []byte) int {
	for i := 0; i+4 <= len(b); i++ {
		if b[i] == 'C' && b[i+1] == 'P' && b[i+2] == 'L' && b[i+3] == 'B' {
			return i
		}
	}
	return -1
}
