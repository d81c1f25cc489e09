package wire

import (
	"testing"
)

// TestSealTagIsSipHash: the tag is SipHash-2-4, checked against the
// reference vector of its paper (key and message 00 01 ... 0f).
func TestSealTagIsSipHash(t *testing.T) {
	k := SealKey{0x0706050403020100, 0x0f0e0d0c0b0a0908}
	if got := k.tag(0x0706050403020100, 0x0f0e0d0c0b0a0908); got != 0x3f2acc7f57c29bdb {
		t.Fatalf("SipHash-2-4 of the reference vector: %#x, want 0x3f2acc7f57c29bdb", got)
	}
}

// TestSealCatchesARewrite: a sealed time unseals to itself within 256 ns;
// the same time under another identity, a time moved by any amount, or a
// time carried to another tuple fails its tag but for about 1 in 256; the
// zero key seals nothing.
func TestSealCatchesARewrite(t *testing.T) {
	k := SealKey{0x1234, 0xabcdef}
	const n = 100000
	var slipped int
	for i := uint64(0); i < n; i++ {
		id := TupleID(uint32(i%7), i)
		intended := int64(1_700_000_000_000_000_000 + i*1_000_003)
		s := k.Seal(id, intended)
		got, ok := k.Unseal(id, s)
		if !ok || got > intended || intended-got >= 1<<SealBits {
			t.Fatalf("tuple %d: unsealed %d (%v) from %d", i, got, ok, intended)
		}
		// a job holding the tuple 300 ms and writing the time it writes
		if _, ok := k.Unseal(id, s+300_000_000); ok {
			slipped++
		}
		if _, ok := k.Unseal(id+1, s); ok { // carried to the next tuple
			slipped++
		}
	}
	// 2n tries at 1/256 each: 781 expected, far below 2n/100
	if slipped > 2*n/100 || slipped == 0 {
		t.Errorf("%d of %d rewrites kept a valid tag, want about %d", slipped, 2*n, 2*n/256)
	}
	var zero SealKey
	if s := zero.Seal(7, 123456789); s != 123456789 {
		t.Errorf("the zero key changed the time: %d", s)
	}
	if got, ok := zero.Unseal(7, 99); !ok || got != 99 {
		t.Errorf("the zero key: %d %v", got, ok)
	}
}

func BenchmarkSeal(b *testing.B) {
	k := SealKey{1, 2}
	var sink int64
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		sink += k.Seal(uint64(i), int64(i)<<20)
	}
	_ = sink
}

func BenchmarkUnseal(b *testing.B) {
	k := SealKey{1, 2}
	s := k.Seal(5, 1<<40)
	var ok bool
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_, ok = k.Unseal(5, s)
	}
	_ = ok
}
