package profiler

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/klauspost/compress/zstd"
)

// Corruption describes damaged bytes the reader skipped.
type Corruption struct {
	Offset int64  `json:"offset"`
	Reason string `json:"reason"`
}

func (c Corruption) Error() string { return fmt.Sprintf("offset %d: %s", c.Offset, c.Reason) }

// ReadBlocks reads a binary log: it calls fn with the records of every
// intact block, in order and in pieces of at most ReadChunk, and skips
// damaged bytes (resynchronising on the next block magic), returning what
// it skipped. Only an I/O error stops it. recs is reused after fn returns.
func ReadBlocks(r io.Reader, fn func(recs []Record) error) ([]Corruption, error) {
	br := NewBlockReader(r)
	var recs []Record
	for {
		var err error
		recs, err = br.Next(recs[:0])
		if err == io.EOF {
			return br.Corruptions, nil
		}
		if err != nil {
			return br.Corruptions, err
		}
		if err := fn(recs); err != nil {
			return br.Corruptions, err
		}
	}
}

// BlockReader reads a binary log block by block, streaming: memory is one
// block's bytes and ReadChunk records, however long the file and however
// many records a block holds. Damaged bytes are skipped (it
// resynchronises on the next block magic) and listed in Corruptions.
type BlockReader struct {
	r           *bufio.Reader
	off         int64
	zdec        *zstd.Decoder
	payload     []byte
	raw         []byte
	Corruptions []Corruption
	// Blocks counts the intact blocks read so far (a large one comes in
	// several Next calls).
	Blocks int
	// The block being handed out, chunk records at a time: its decoder
	// and the rest of its current run.
	cur              runDecoder
	runT, runID, run uint64
	chunk            int
}

// ReadChunk bounds the records one Next returns: a block of a million
// records (the buffered handler's default) or 16 million (its largest)
// is handed out in pieces, so a reader's memory does not grow with the
// writer's block size.
const ReadChunk = 1 << 13

// NewBlockReader reads blocks from r.
func NewBlockReader(r io.Reader) *BlockReader {
	size := 1 << 20
	// A small file needs no 1 MiB buffer: the analyses hold every log of a
	// run open at once, and a run directory from elsewhere may hold many.
	if st, ok := r.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() < int64(size) {
			size = int(fi.Size()) + 1
		}
	}
	return newBlockReaderSize(r, size)
}

// newBlockReaderSize reads through a buffer of size bytes (at least a
// block header): the tests move the buffer's edge across blocks with it.
func newBlockReaderSize(r io.Reader, size int) *BlockReader {
	// DecodeAll may write no further than its destination's capacity,
	// which inflate sets from what the block may hold.
	zdec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecodeAllCapLimit(true))
	return &BlockReader{r: bufio.NewReaderSize(r, max(size, 2*blockHeader)), zdec: zdec, chunk: ReadChunk}
}

// Next appends the next records of the file's intact blocks to dst: at
// most ReadChunk, all from one block; io.EOF at the end. A damaged block
// is skipped whole: none of its records is ever handed out.
func (br *BlockReader) Next(dst []Record) ([]Record, error) {
	if br.run > 0 || br.cur.left > 0 {
		return br.emit(dst), nil
	}
	for {
		h, err := br.r.Peek(blockHeader)
		if len(h) == 0 && err == io.EOF {
			br.zdec.Close()
			return dst, io.EOF
		}
		if err != nil && err != io.EOF {
			return dst, fmt.Errorf("read log: %w", err)
		}
		if !br.validHeader(h) {
			continue
		}
		// Every header field is copied now: payloadOf peeks again, which
		// can slide the buffer under h.
		n := int(binary.LittleEndian.Uint32(h[8:]))
		plen := int(binary.LittleEndian.Uint32(h[12:]))
		version, codec, crc := h[4], h[5], binary.LittleEndian.Uint32(h[16:])
		if plen > maxBlockPayload || n > maxBlockRecords || (version >= 2 && n > MaxBlockSize) {
			br.damaged(fmt.Sprintf("implausible block: %d records in %d bytes", n, plen))
			continue
		}
		whole, payload, ok, err := br.payloadOf(plen, crc)
		if err != nil {
			return dst, err
		}
		if !ok {
			continue
		}
		raw := payload
		switch codec {
		case CodecZstd:
			if err := br.inflate(payload, n); err != nil {
				br.skipped(len(whole), blockHeader+plen, "zstd: "+err.Error())
				continue
			}
			raw = br.raw
		case CodecNone:
		default:
			br.skipped(len(whole), blockHeader+plen, fmt.Sprintf("unknown codec %d", codec))
			continue
		}
		if n <= br.chunk { // one pass: decoded, or damaged and dropped whole
			start := len(dst)
			out, err := decodeRecords(dst, raw, n, version)
			if err != nil {
				br.skipped(len(whole), blockHeader+plen, err.Error())
				dst = dst[:start]
				continue
			}
			br.consume(whole, plen)
			br.Blocks++
			return out, nil
		}
		// A larger block is checked whole first, then handed out a chunk
		// at a time.
		if err := checkRecords(raw, n, version); err != nil {
			br.skipped(len(whole), blockHeader+plen, err.Error())
			continue
		}
		if codec == CodecNone { // raw is the read buffer's: keep a copy for the next chunks
			br.raw = append(br.raw[:0], raw...)
		}
		br.cur = runDecoder{b: br.raw, left: n, version: version}
		br.consume(whole, plen)
		br.Blocks++
		return br.emit(dst), nil
	}
}

// maxEntryBytes is the most bytes one record's entry takes: three
// uvarints of at most 10 bytes each (version 1 has two).
const maxEntryBytes = 30

// undeclaredLimit bounds a frame that does not declare its size.
const undeclaredLimit = 64 << 10

// inflate decompresses a block's payload into br.raw, refusing to write
// more than its n records can take: a frame's declared size must fit n
// entries, and the decoder may not write past it. A frame that does not
// declare its size (the writer leaves it out below 256 bytes) may inflate
// to undeclaredLimit. A small block that inflates to gigabytes is damage,
// never an allocation.
func (br *BlockReader) inflate(payload []byte, n int) error {
	var h zstd.Header
	if err := h.Decode(payload); err != nil {
		return err
	}
	size := min(uint64(n)*maxEntryBytes, undeclaredLimit)
	if h.HasFCS {
		if limit := uint64(n) * maxEntryBytes; h.FrameContentSize > limit {
			return fmt.Errorf("the frame declares %d bytes, more than %d records can take (%d)", h.FrameContentSize, n, limit)
		}
		size = h.FrameContentSize
	}
	if uint64(cap(br.raw)) < size {
		br.raw = make([]byte, 0, size)
	}
	out, err := br.zdec.DecodeAll(payload, br.raw[:0:size])
	if err != nil {
		return err
	}
	br.raw = out
	return nil
}

// consume moves past a block that was still in the read buffer (one read
// out of it already is).
func (br *BlockReader) consume(whole []byte, plen int) {
	if len(whole) >= blockHeader+plen {
		_, _ = br.r.Discard(blockHeader + plen)
		br.off += int64(blockHeader + plen)
	}
}

// emit appends the current block's next records (at most a chunk). The
// block was checked whole, so its entries decode.
func (br *BlockReader) emit(dst []Record) []Record {
	for k := 0; k < br.chunk; {
		if br.run == 0 {
			if br.cur.left == 0 {
				break
			}
			t, id, n, err := br.cur.next()
			if err != nil { // cannot happen after checkRecords
				br.cur.left = 0
				break
			}
			br.runT, br.runID, br.run = t, id, n
		}
		take := min(br.run, uint64(br.chunk-k))
		for i := uint64(0); i < take; i++ {
			dst = append(dst, Record{TSC: br.runT, ID: br.runID + i})
		}
		br.runID += take
		br.run -= take
		k += int(take)
	}
	return dst
}

// validHeader checks a block header; a bad one is recorded as damage and
// the reader resynchronises past it.
func (br *BlockReader) validHeader(h []byte) bool {
	switch {
	case len(h) < blockHeader:
		br.damaged(fmt.Sprintf("truncated block header (%d bytes)", len(h)))
	case [4]byte(h[:4]) != blockMagic:
		br.damaged("not a block header")
	case binary.LittleEndian.Uint32(h[20:]) != crc32.Checksum(h[:20], crcTable):
		br.damaged("block header checksum mismatch")
	case h[4] < 1 || h[4] > blockVersion:
		br.damaged(fmt.Sprintf("unsupported block version %d", h[4]))
	default:
		return true
	}
	return false
}

// payloadOf reads the payload of the block at the reader's position and
// checks it against crc. The whole block is peeked when it fits the
// buffer, so that a damaged one can be resynchronised from its second
// byte (whole is then the peeked block, still to be discarded); a larger
// one is read out. ok is false when the block was damaged (recorded).
func (br *BlockReader) payloadOf(plen int, crc uint32) (whole, payload []byte, ok bool, err error) {
	whole, err = br.r.Peek(blockHeader + plen)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return nil, nil, false, fmt.Errorf("read log: %w", err)
	}
	if err != bufio.ErrBufferFull {
		if len(whole) < blockHeader+plen {
			br.damaged(fmt.Sprintf("truncated block: %d payload bytes announced, %d present", plen, len(whole)-blockHeader))
			return whole, nil, false, nil
		}
		payload = whole[blockHeader:]
		if crc32.Checksum(payload, crcTable) != crc {
			br.damaged("block payload checksum mismatch")
			return whole, nil, false, nil
		}
		return whole, payload, true, nil
	}
	br.payload = append(br.payload[:0], make([]byte, blockHeader+plen)...)
	got, rerr := io.ReadFull(br.r, br.payload)
	if rerr != nil {
		br.off += int64(got)
		br.Corruptions = append(br.Corruptions, Corruption{Offset: br.off - int64(got), Reason: fmt.Sprintf("truncated block: %d payload bytes announced, %d present", plen, got-blockHeader)})
		return whole, nil, false, nil
	}
	payload = br.payload[blockHeader:]
	if crc32.Checksum(payload, crcTable) != crc {
		br.Corruptions = append(br.Corruptions, Corruption{Offset: br.off, Reason: "block payload checksum mismatch"})
		br.off += int64(blockHeader + plen)
		return whole, nil, false, nil
	}
	br.off += int64(blockHeader + plen)
	return whole, payload, true, nil
}

// Blocks larger than these are damage, not data (1 M records of at most
// 20 varint bytes each).
const (
	maxBlockRecords = 1 << 26
	maxBlockPayload = 1 << 30
)

// damaged records a corruption at the current offset and moves one byte
// on, to the next block magic.
func (br *BlockReader) damaged(reason string) {
	br.Corruptions = append(br.Corruptions, Corruption{Offset: br.off, Reason: reason})
	_, _ = br.r.Discard(1)
	br.off++
	for {
		b, err := br.r.Peek(4)
		if len(b) < 4 {
			n, _ := br.r.Discard(len(b))
			br.off += int64(n)
			if err != nil {
				return
			}
			continue
		}
		if [4]byte(b) == blockMagic {
			return
		}
		_, _ = br.r.Discard(1)
		br.off++
	}
}

// skipped records a block that framed correctly but did not decode; if it
// is still buffered it is skipped like damage, else it was consumed.
func (br *BlockReader) skipped(buffered, size int, reason string) {
	if buffered >= size {
		br.damaged(reason)
		return
	}
	br.Corruptions = append(br.Corruptions, Corruption{Offset: br.off - int64(size), Reason: reason})
}
