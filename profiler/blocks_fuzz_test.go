package profiler

import (
	"bytes"
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
