package wire

import (
	"bytes"
	"math"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestHeaderRoundTrip(t *testing.T) {
	h := Header{Kind: KindData, Stream: 0x0102, Seq: 1<<40 + 5, Count: 100, BodyLen: 3}
	msg := make([]byte, HeaderSize+3)
	PutHeader(msg, h)
	got, err := ParseHeader(msg)
	if err != nil || got != h {
		t.Fatalf("got %+v, %v; want %+v", got, err, h)
	}
	PutSeq(msg, 9)
	if got, _ := ParseHeader(msg); got.Seq != 9 {
		t.Fatalf("PutSeq: seq %d", got.Seq)
	}
}

func TestParseHeaderErrors(t *testing.T) {
	good := make([]byte, HeaderSize+2)
	PutHeader(good, Header{Kind: KindData, BodyLen: 2})
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for _, tc := range []struct {
		name string
		msg  []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"short", good[:10], ErrShort},
		{"magic", mut(func(b []byte) []byte { b[0] = 'X'; return b }), ErrMagic},
		{"version", mut(func(b []byte) []byte { b[2] = 2; return b }), ErrVersion},
		{"kind", mut(func(b []byte) []byte { b[3] = 9; return b }), ErrKind},
		{"truncated body", good[:HeaderSize+1], ErrBodyLen},
		{"extra bytes", append(append([]byte(nil), good...), 0), ErrBodyLen},
	} {
		if _, err := ParseHeader(tc.msg); err != tc.want {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestEndMarkerRoundTrip(t *testing.T) {
	e := End{Tuples: 12345, Buckets: 124, DroppedBuckets: 2, DroppedTuples: 200, Reason: "interrupted"}
	msg, err := AppendEnd(nil, 7, e)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ParseHeader(msg)
	if err != nil || h.Kind != KindEnd || h.Stream != 7 || h.Seq != 124 {
		t.Fatalf("header %+v %v", h, err)
	}
	got, err := ParseEnd(msg)
	if err != nil || got != e {
		t.Fatalf("got %+v %v", got, err)
	}
	// The body is a plain msgpack map a foreign reader can decode.
	var m map[string]any
	if err := msgpack.Unmarshal(msg[HeaderSize:], &m); err != nil || m["reason"] != "interrupted" {
		t.Fatalf("generic decode: %v %v", m, err)
	}
}

func TestTupleID(t *testing.T) {
	id := TupleID(StreamID(2, 3), 42)
	if s, q := SplitTupleID(id); s != 0x0203 || q != 42 {
		t.Fatalf("split %x -> %x %d", id, s, q)
	}
}

// TestIntegersAgainstReference encodes values with the reference library in
// every width and reads them back with ours.
// compact encodes v as a Python or Java producer would: the shortest form
// (vmihailenco's Marshal writes every integer in 9 bytes).
func compact(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestIntegersEveryWidth reads every msgpack integer width, in the
// shortest form a reference encoder writes, and checks that the width is
// the one meant (so that each branch of the readers runs).
func TestIntegersEveryWidth(t *testing.T) {
	for _, tc := range []struct {
		v     int64
		width int // encoded bytes
		first byte
	}{
		{0, 1, 0x00}, {127, 1, 0x7f}, {-1, 1, 0xff}, {-32, 1, 0xe0},
		{128, 2, 0xcc}, {255, 2, 0xcc}, {-33, 2, 0xd0}, {-128, 2, 0xd0},
		{256, 3, 0xcd}, {65535, 3, 0xcd}, {-129, 3, 0xd1}, {-32768, 3, 0xd1},
		{65536, 5, 0xce}, {math.MaxUint32, 5, 0xce}, {-32769, 5, 0xd2}, {math.MinInt32, 5, 0xd2},
		{math.MaxUint32 + 1, 9, 0xcf}, {math.MaxInt64, 9, 0xcf}, {math.MinInt32 - 1, 9, 0xd3}, {math.MinInt64, 9, 0xd3},
	} {
		b := compact(t, tc.v)
		if len(b) != tc.width || b[0] != tc.first {
			t.Fatalf("reference encoded %d as % x: want %d bytes starting %#x", tc.v, b, tc.width, tc.first)
		}
		got, off, err := ReadInt(b, 0)
		if err != nil || got != tc.v || off != tc.width {
			t.Errorf("ReadInt(% x) = %d, %d, %v", b, got, off, err)
		}
		u, off, err := ReadUint(b, 0)
		if tc.v >= 0 && (err != nil || u != uint64(tc.v) || off != tc.width) || tc.v < 0 && err == nil {
			t.Errorf("ReadUint(% x) = %d, %d, %v", b, u, off, err)
		}
	}
}

func TestIntegersAgainstReference(t *testing.T) {
	for _, v := range []int64{0, 1, 127, 128, 255, 256, 65535, 65536, math.MaxInt32, math.MaxInt32 + 1, math.MaxInt64, -1, -32, -33, -128, -129, -32768, -32769, math.MinInt32, math.MinInt64} {
		b, _ := msgpack.Marshal(v)
		got, off, err := ReadInt(b, 0)
		if err != nil || got != v || off != len(b) {
			t.Errorf("ReadInt(%d) = %d, %d, %v", v, got, off, err)
		}
		_, _, uerr := ReadUint(b, 0)
		if (v < 0) != (uerr != nil) {
			t.Errorf("ReadUint(%d): err %v", v, uerr)
		}
	}
	for _, v := range []uint64{0, 200, 1 << 16, 1 << 33, math.MaxUint64} {
		b, _ := msgpack.Marshal(v)
		got, off, err := ReadUint(b, 0)
		if err != nil || got != v || off != len(b) {
			t.Errorf("ReadUint(%d) = %d, %d, %v", v, got, off, err)
		}
		// the fixed form the sender writes
		fixed := AppendUint64Fixed(nil, v)
		var ref uint64
		if err := msgpack.Unmarshal(fixed, &ref); err != nil || ref != v {
			t.Errorf("reference reads fixed %d as %d, %v", v, ref, err)
		}
	}
	if _, _, err := ReadInt(AppendUint64Fixed(nil, math.MaxUint64), 0); err == nil {
		t.Error("ReadInt accepted a uint64 above MaxInt64")
	}
}

func TestBytesAndSkipAgainstReference(t *testing.T) {
	values := []any{
		"", "short", string(bytes.Repeat([]byte("x"), 40)), string(bytes.Repeat([]byte("y"), 300)), string(bytes.Repeat([]byte("z"), 70000)),
		[]byte{}, []byte{1, 2, 3}, bytes.Repeat([]byte{7}, 300), bytes.Repeat([]byte{8}, 70000),
		nil, true, false, 1.5, float32(2.5), map[string]any{"a": []any{1, "b", nil}}, make([]int, 20), make([]int, 70000),
		map[int]int{1: 2, 3: 4}, msgpack.RawMessage{0xd4, 1, 2}, msgpack.RawMessage{0xd8, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	}
	for _, v := range values {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		off, err := Skip(b, 0)
		if err != nil || off != len(b) {
			t.Errorf("Skip(%T len %d) = %d, %v", v, len(b), off, err)
		}
		if _, err := Skip(b[:len(b)-1], 0); err == nil && len(b) > 1 {
			t.Errorf("Skip accepted truncated %T", v)
		}
		switch x := v.(type) {
		case string:
			got, off, err := ReadBytes(b, 0)
			if err != nil || string(got) != x || off != len(b) {
				t.Errorf("ReadBytes(str %d) err %v", len(x), err)
			}
		case []byte:
			got, _, err := ReadBytes(b, 0)
			if err != nil || !bytes.Equal(got, x) {
				t.Errorf("ReadBytes(bin %d) err %v", len(x), err)
			}
			if ours := AppendBin(nil, x); !bytes.Equal(ours, b) {
				t.Errorf("AppendBin(%d) differs from reference", len(x))
			}
		}
	}
	for _, n := range []int{0, 15, 16, 65535, 65536} {
		ours := AppendArrayLen(nil, n)
		got, off, err := ReadArrayLen(append(ours, make([]byte, n)...), 0)
		if err != nil || got != n || off != len(ours) {
			t.Errorf("array len %d: %d %d %v", n, got, off, err)
		}
	}
}

func TestSkipBoundsNesting(t *testing.T) {
	deep := bytes.Repeat([]byte{0x91}, 100)
	deep = append(deep, 0x01)
	if _, err := Skip(deep, 0); err == nil {
		t.Fatal("Skip accepted 100 levels of nesting")
	}
	if _, err := Skip([]byte{0xc1}, 0); err != ErrType {
		t.Fatal("Skip accepted the never-used byte 0xc1")
	}
}

// TestEndMarkerCounts: counts that are negative, above 2^63-1 or not
// integers make an end marker malformed; valid widths decode exactly.
func TestEndMarkerCounts(t *testing.T) {
	marker := func(fields map[string]any) []byte {
		if _, ok := fields["buckets"]; !ok {
			fields["buckets"] = 0
		}
		if _, ok := fields["tuples"]; !ok {
			fields["tuples"] = 0
		}
		body, err := msgpack.Marshal(fields)
		if err != nil {
			t.Fatal(err)
		}
		var h [HeaderSize]byte
		PutHeader(h[:], Header{Kind: KindEnd, Stream: 1, BodyLen: uint32(len(body))})
		return append(h[:], body...)
	}
	for _, tc := range []struct {
		name   string
		fields map[string]any
		ok     bool
		want   uint64
	}{
		{"small", map[string]any{"tuples": int8(5), "reason": "completed"}, true, 5},
		{"max", map[string]any{"tuples": uint64(MaxCount)}, true, MaxCount},
		{"above 2^63-1", map[string]any{"tuples": uint64(1 << 63)}, false, 0},
		{"negative", map[string]any{"tuples": int64(-1)}, false, 0},
		{"negative buckets", map[string]any{"buckets": int8(-3)}, false, 0},
		{"float", map[string]any{"tuples": 1.5}, false, 0},
		{"string", map[string]any{"tuples": "7"}, false, 0},
		{"reason not a string", map[string]any{"reason": 3}, false, 0},
	} {
		e, err := ParseEnd(marker(tc.fields))
		if (err == nil) != tc.ok || (tc.ok && e.Tuples != tc.want) {
			t.Errorf("%s: %+v, %v", tc.name, e, err)
		}
	}
	long := make([]byte, HeaderSize+MaxEndBody+1)
	if _, err := ParseEnd(long); err == nil {
		t.Error("an oversized end marker body was accepted")
	}
}
