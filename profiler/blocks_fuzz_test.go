package profiler

import (
	"bytes"
	"io"
	"testing"
)

// FuzzBlockReader: any bytes are read without a panic or a runaway
// allocation, and a valid block after the garbage is still found whole.
func FuzzBlockReader(f *testing.F) {
	enc, _ := newBlockEncoder(CodecNone)
	zenc, _ := newBlockEncoder(CodecZstd)
	runs := []run{{TSC: 10, ID: 1, N: 1}, {TSC: 25, ID: 2, N: 1}, {TSC: 26, ID: 7, N: 3}}
	recs := []Record{{TSC: 10, ID: 1}, {TSC: 25, ID: 2}, {TSC: 26, ID: 7}, {TSC: 26, ID: 8}, {TSC: 26, ID: 9}}
	good := enc.encode(nil, runs, len(recs))
	f.Add(good)
	f.Add(zenc.encode(nil, runs, len(recs)))
	f.Add(v1Block(recs[:3]))
	f.Add(append([]byte("CPLB"), good[4:20]...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var n int
		if _, err := ReadBlocks(bytes.NewReader(data), func(r []Record) error { n += len(r); return nil }); err != nil {
			t.Fatal(err)
		}
		var tail []Record
		in := append(append([]byte(nil), data...), good...)
		if _, err := ReadBlocks(bytes.NewReader(in), func(r []Record) error { tail = append(tail[:0], r...); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(tail) != len(recs) || tail[4] != recs[4] {
			t.Fatalf("the valid block after %d garbage bytes was not read whole: %v", len(data), tail)
		}
	})
}

// FuzzBlocksAcrossBufferEdges: valid blocks read the same through any
// buffer size, wherever the buffer's edge falls (a header or payload
// split by it, read out or slid), and in pieces of any size (a run split
// between two of them); every record comes back in order.
func FuzzBlocksAcrossBufferEdges(f *testing.F) {
	f.Add([]byte{3, 1, 2, 0, 200, 7, 7, 7, 1, 1, 1, 1}, uint16(100), false)
	f.Add(bytes.Repeat([]byte{1, 2, 0}, 300), uint16(48), true)
	plain, _ := newBlockEncoder(CodecNone)
	zenc, _ := newBlockEncoder(CodecZstd)
	f.Fuzz(func(t *testing.T, seed []byte, size uint16, zstd bool) {
		enc := plain
		if zstd {
			enc = zenc
		}
		// The seed's bytes are the blocks' lengths and their records' steps.
		var file []byte
		var want []Record
		var tsc, id uint64
		for i := 0; i < len(seed); {
			n := int(seed[i])%40 + 1
			i++
			var rs []run
			for k := 0; k < n; k++ {
				step := uint64(1)
				if i < len(seed) {
					step = uint64(seed[i])
					i++
				}
				tsc, id = tsc+step, id+1
				rs = append(rs, run{TSC: tsc, ID: id, N: 1})
				want = append(want, Record{TSC: tsc, ID: id})
			}
			file = enc.encode(file, rs, n)
		}
		br := newBlockReaderSize(bytes.NewReader(file), int(size))
		br.chunk = 1 + int(size)%97 // blocks handed out in pieces of any size
		var got []Record
		for {
			recs, err := br.Next(nil)
			if len(recs) > br.chunk {
				t.Fatalf("%d records from one Next, at most %d", len(recs), br.chunk)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, recs...)
		}
		if len(br.Corruptions) > 0 || len(got) != len(want) {
			t.Fatalf("buffer %d: %d of %d records, damage %v", size, len(got), len(want), br.Corruptions)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("buffer %d: record %d is %+v, want %+v", size, i, got[i], want[i])
			}
		}
	})
}
