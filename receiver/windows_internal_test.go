package receiver

import (
	"fmt"
	"math"
	"testing"

	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/scenarios"
)

// TestWindowTallyIsBounded: a window already seen is added without an
// allocation; a job writing ever new keys fills at most tally.MaxWindows
// cells, the rest counted as not tallied.
func TestWindowTallyIsBounded(t *testing.T) {
	w := newWindowTally()
	win := scenarios.Window{Key: []byte("campaign-0001"), EndMs: 1000, Count: 3}
	w.add(&win)
	if a := testing.AllocsPerRun(1000, func() { w.add(&win) }); a != 0 {
		t.Errorf("%v allocations per window already seen", a)
	}
	for i := range tally.MaxWindows + 10 {
		w.add(&scenarios.Window{Key: fmt.Appendf(nil, "forged-%d", i), EndMs: 1000, Count: 1})
	}
	got := w.counts()
	if len(got) != tally.MaxWindows || w.notTallied != 11 || got[0].Key != "campaign-0001" || got[0].Count != 3*1002 {
		t.Errorf("%d windows, %d not tallied, first %+v; want %d, 11, campaign-0001 counting %d", len(got), w.notTallied, got[0], tally.MaxWindows, 3*1002)
	}
}

// TestWindowTallySaturates: a window written more times than its counts
// can add up to stays at the largest count, never wraps to a small one.
func TestWindowTallySaturates(t *testing.T) {
	w := newWindowTally()
	win := &scenarios.Window{Key: []byte("campaign-0001"), EndMs: 1000, Count: scenarios.MaxWindowCount}
	for range 1<<17 + 1 {
		w.add(win)
	}
	if got := w.counts(); len(got) != 1 || got[0].Count != math.MaxUint64 {
		t.Errorf("%+v, want one window at the largest count", got)
	}
}
