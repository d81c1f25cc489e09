package sender

import (
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/scenarios"
)

// TestWindowTallyAddsWithoutAllocating: the emission loop's share of the
// per-window count, a stamp per batch item and an add per bucket sent,
// allocates nothing; a bucket whose window lies outside the run's cells
// is counted as outside (an instrument error), never written astray.
func TestWindowTallyAddsWithoutAllocating(t *testing.T) {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC).UnixNano()
	w := newWindowTally(time.Second, 100, 16, start, start+10*int64(time.Second))
	kc := []scenarios.KeyCount{{Campaign: 3, N: 2}, {Campaign: 99, N: 1}}
	at := start
	if a := testing.AllocsPerRun(10_000, func() {
		w.stamp(5, at)
		w.add(5, kc)
		at += int64(time.Millisecond)
	}); a != 0 {
		t.Errorf("%v allocations per bucket", a)
	}
	w.stamp(0, start-int64(time.Second))
	w.add(0, kc)
	w.stamp(1, start+20*int64(time.Second))
	w.add(1, kc)
	var inside uint64
	for _, n := range w.cells {
		inside += n
	}
	if inside != 3*10_001 || w.outside != 6 { // AllocsPerRun runs once more to warm up
		t.Errorf("%d counted inside, %d outside; want %d and 6", inside, w.outside, 3*10_001)
	}
}

// BenchmarkWindowTallyAdd is the emission loop's cost of a declared window
// per bucket of 100 ad events: a stamp and an add of its campaigns' counts
// (about 30 campaigns have views in a bucket of the ad-event scenario).
func BenchmarkWindowTallyAdd(b *testing.B) {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC).UnixNano()
	w := newWindowTally(time.Second, 100, 16, start, start+int64(time.Hour))
	kc := make([]scenarios.KeyCount, 30)
	for i := range kc {
		kc[i] = scenarios.KeyCount{Campaign: int32(3 * i), N: 1}
	}
	at := start
	b.ReportAllocs()
	for b.Loop() {
		w.stamp(0, at)
		w.add(0, kc)
		at += 1000 // 1 µs per bucket: an hour holds 3.6 G of them
	}
}
