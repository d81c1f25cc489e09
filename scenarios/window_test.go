package scenarios

import (
	"errors"
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/wire"
)

func windowTuple(key string, end, count int64) []byte {
	b := wire.AppendArrayLen(nil, 5)
	b = wire.AppendUint64Fixed(b, 7)
	b = wire.AppendInt64Fixed(b, 8)
	b = wire.AppendStr(b, key)
	b = wire.AppendInt64Fixed(b, end)
	return wire.AppendInt64Fixed(b, count)
}

// TestDecodeWindow: a window decodes to its key, end and count; a long
// key, a negative count, a missing field or a wrong type is refused.
func TestDecodeWindow(t *testing.T) {
	var tp Tuple
	if n, err := DecodeWindow(windowTuple("campaign-0001", 2000, 12), 0, &tp); err != nil || n != len(windowTuple("campaign-0001", 2000, 12)) ||
		tp.ID != 7 || tp.IntendedNs != 8 || string(tp.Window.Key) != "campaign-0001" || tp.Window.EndMs != 2000 || tp.Window.Count != 12 {
		t.Errorf("decoded %+v, %d, %v", tp, n, err)
	}
	short := wire.AppendArrayLen(nil, 4)
	short = wire.AppendUint64Fixed(short, 1)
	short = wire.AppendInt64Fixed(short, 2)
	short = wire.AppendStr(short, "k")
	short = wire.AppendInt64Fixed(short, 3)
	for name, b := range map[string][]byte{
		"a long key":       windowTuple(strings.Repeat("k", 257), 1, 1),
		"a negative count": windowTuple("k", 1, -1),
		"four fields":      short,
		"truncated":        windowTuple("k", 1, 1)[:20],
	} {
		if _, err := DecodeWindow(b, 0, &tp); err == nil {
			t.Errorf("%s: accepted", name)
		} else if !errors.Is(err, wire.ErrTupleValue) && !errors.Is(err, wire.ErrTupleFields) && !errors.Is(err, wire.ErrTruncated) && !errors.Is(err, wire.ErrType) {
			t.Errorf("%s: %v is not one of the wire's errors", name, err)
		}
	}
}

// FuzzDecodeWindow: any bytes decode or are refused, never a panic, and
// what decodes is within the schema's bounds.
func FuzzDecodeWindow(f *testing.F) {
	f.Add(windowTuple("campaign-0001", 2000, 12))
	f.Add(windowTuple("", 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		var tp Tuple
		n, err := DecodeWindow(b, 0, &tp)
		if err != nil {
			return
		}
		if n > len(b) || len(tp.Window.Key) > 256 || tp.Window.Count < 0 {
			t.Fatalf("decoded out of bounds: %d of %d bytes, %+v", n, len(b), tp.Window)
		}
	})
}
