package wire

import (
	"bytes"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// FuzzSkip: Skip never reads past the input or panics, and where it
// accepts a value and the reference decoder reads one too, they end at the
// same byte. (The reference runs only on what Skip accepted: given a
// count above what the input holds, it allocates for it first.)
func FuzzSkip(f *testing.F) {
	for _, v := range []any{1, -1, int64(1) << 40, "text", []byte("bin"), []any{1, "a", []any{2.5}}, map[string]any{"k": []int{1, 2}}, nil, true} {
		b, _ := msgpack.Marshal(v)
		f.Add(b)
	}
	f.Add([]byte{0xc7, 0x01, 0x05, 0xff})
	f.Add([]byte{0xdd, 0x00, 0x00, 0x00, 0x02, 0x01, 0x02})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := Skip(b, 0)
		if n < 0 || n > len(b) {
			t.Fatalf("Skip returned offset %d for %d bytes", n, len(b))
		}
		if err != nil {
			return
		}
		r := bytes.NewReader(b)
		dec := msgpack.NewDecoder(r)
		if _, rerr := dec.DecodeInterface(); rerr == nil {
			want := len(b) - r.Len()
			if n != want {
				t.Fatalf("% x: Skip %d, %v; the reference read %d bytes", b, n, err, want)
			}
		}
	})
}
