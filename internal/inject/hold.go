package inject

import (
	"sync/atomic"
	"time"

	"github.com/cloudprofiler-go/cp/internal/osthread"
)

// Clock is the time the injected stalls and work are counted in: the
// stages' own TSC (tsc.Clock satisfies it). inject is a leaf helper and
// imports no measuring package, so the clock is handed in.
type Clock interface {
	Ticks(d time.Duration) uint64
	Now() uint64
}

// Holds are one stage's stalls in TSC ticks, checked by the stage's own
// loop with one comparison per call when none is due.
type Holds struct {
	w     [][2]uint64
	next  int
	clock Clock
}

// NewHolds places a stage's stall windows (offsets from the run's start)
// at start ticks on clock.
func NewHolds(windows [][2]time.Duration, start uint64, clock Clock) Holds {
	h := Holds{clock: clock}
	for _, w := range windows {
		h.w = append(h.w, [2]uint64{start + clock.Ticks(w[0]), start + clock.Ticks(w[1])})
	}
	return h
}

// Any says whether there are stalls left.
func (h *Holds) Any() bool { return h.next < len(h.w) }

// Due says whether a stall is due at now (Hold would hold).
func (h *Holds) Due(now uint64) bool { return h.next < len(h.w) && now >= h.w[h.next][0] }

// Hold stops the calling stage while a stall is due at now: it naps (in
// short slices, so a stop is noticed) until the stall's end, and returns
// whether it held.
func (h *Holds) Hold(now uint64, stop *atomic.Bool) bool {
	if h.next >= len(h.w) || now < h.w[h.next][0] {
		return false
	}
	end := h.w[h.next][1]
	h.next++
	for h.clock.Now() < end && !stop.Load() {
		osthread.Nap(time.Millisecond)
	}
	return true
}

// Spin busy-waits for ticks as now counts them (tsc.ReadFast): the
// emulated cost of work on this thread.
func Spin(now func() uint64, ticks uint64) {
	for until := now() + ticks; now() < until; {
	}
}
