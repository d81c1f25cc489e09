package sender

import (
	"math"
	"testing"
)

func TestPacerDue(t *testing.T) {
	for _, tc := range []struct {
		name       string
		hz, rate   float64
		bucketSize int
		k          uint64
		want       uint64
	}{
		{"1 GHz, 1 M/s: 1000 ticks per slot", 1e9, 1e6, 1, 7, 7000},
		{"buckets of 100 at 5 M/s: 20 us", 1e9, 5e6, 100, 3, 60000},
		{"fractional slot 333.33 ticks", 1e9, 3e6, 1, 3, 1000},
		{"fractional slot floors", 1e9, 3e6, 1, 1, 333},
		{"no drift after 1e9 slots", 2.5e9, 3e6, 1, 1_000_000_000, 833_333_333_333},
		{"fractional rate", 1e9, 0.5, 1, 2, 4_000_000_000},
		{"huge k saturates", 3e9, 1, 1, math.MaxUint64, math.MaxUint64},
	} {
		p, err := NewConstantSchedule(0, tc.hz, tc.bucketSize, tc.rate)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := p.Due(tc.k); got != tc.want {
			t.Errorf("%s: Due(%d) = %d, want %d", tc.name, tc.k, got, tc.want)
		}
	}
}

func TestPacerStartOffsetAndSlotsBefore(t *testing.T) {
	p, _ := NewConstantSchedule(1000, 1e9, 10, 1e6) // 10 us slots starting at tick 1000
	if p.Due(0) != 1000 || p.Due(1) != 11000 {
		t.Fatalf("Due(0)=%d Due(1)=%d", p.Due(0), p.Due(1))
	}
	if p.SlotTicks() != 10000 {
		t.Fatalf("slot %f ticks", p.SlotTicks())
	}
	for _, tc := range []struct{ end, want uint64 }{{0, 0}, {1000, 0}, {1001, 1}, {11000, 1}, {11001, 2}, {1000 + 1e9, 100000}} {
		if got := p.SlotsBefore(tc.end); got != tc.want {
			t.Errorf("SlotsBefore(%d) = %d, want %d", tc.end, got, tc.want)
		}
		// consistency with Due: every counted slot is due before end, the next is not
		if n := p.SlotsBefore(tc.end); n > 0 && (p.Due(n-1) >= tc.end || p.Due(n) < tc.end) {
			t.Errorf("SlotsBefore(%d)=%d inconsistent with Due", tc.end, n)
		}
	}
}

func TestPacerRejects(t *testing.T) {
	for _, tc := range []struct {
		rate       float64
		bucketSize int
	}{{0, 1}, {-5, 1}, {math.NaN(), 1}, {math.Inf(1), 1}, {1e6, 0}, {2e9, 1}} {
		if _, err := NewConstantSchedule(0, 1e9, tc.bucketSize, tc.rate); err == nil {
			t.Errorf("rate %v with buckets of %d accepted", tc.rate, tc.bucketSize)
		}
	}
}

func BenchmarkPacerDue(b *testing.B) {
	p, _ := NewConstantSchedule(0, 2.5e9, 1, 3e6)
	var s uint64
	for i := 0; i < b.N; i++ {
		s += p.Due(uint64(i))
	}
	_ = s
}
