package sender

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/trialcfg"
)

// windowProblem says what is wrong with a declared window ("": nothing).
func (c *Config) windowProblem() string {
	w := c.ExpectWindow
	switch {
	case w == 0:
		return ""
	case w < time.Millisecond || w > trialcfg.MaxExpectWindow || w%time.Millisecond != 0:
		return fmt.Sprintf("--expect-window must be whole milliseconds from 1ms to %v, got %v", trialcfg.MaxExpectWindow, w)
	case c.Duration <= 0:
		return "--expect-window needs a --duration: a run's windows are counted in cells made before it starts"
	case c.Scenario != nil && c.Scenario.Schema == scenarios.SchemaEvents && c.Scenario.KeyField == "":
		return "--expect-window over your events counts per key: name the key field (--events-key FIELD)"
	case c.Scenario != nil && c.Scenario.Schema != scenarios.SchemaAdEvent && c.Scenario.Schema != scenarios.SchemaEvents:
		return fmt.Sprintf("--expect-window counts per campaign: it needs the %s scenario's ads, not %s", scenarios.SchemaAdEvent, c.Scenario.Schema)
	}
	return ""
}

// windowTally counts, per campaign and event-time window, the tuples one
// emission thread sent that a windowed job owes (docs/sut.md). Its cells
// are made before the loop, which only adds to them: an event's time is
// its bucket's intended time, so each bucket adds its template's counts,
// taken once before the run, to one window.
type windowTally struct {
	ms      int64            // the window's size
	first   int64            // the run's first window (Unix ms / ms)
	keys    int              // campaigns
	cells   []uint64         // window-major: cells[(w - first) * keys + campaign]
	row     []int            // per batch item: its window's first cell (-1: outside)
	name    func(int) string // a key's name (nil: scenarios.CampaignID)
	outside uint64           // tuples whose window lies outside the run: an instrument error
}

// startWindows makes the thread's window cells for the run from start to
// end (ticks), when a window is declared (Validate: then end is finite).
func (t *thread) startWindows(s *Sender, start, end uint64) {
	if t.keys != nil && end != math.MaxUint64 {
		clock := s.cfg.Clock
		t.win = newWindowTally(s.cfg.ExpectWindow, s.join.Len(), len(t.items), clock.UnixNano(start), clock.UnixNano(end))
		t.win.name = s.join.Name
	}
}

// newWindowTally counts the windows of size w from startNs to endNs (Unix
// ns) for keys campaigns and a batch of items.
func newWindowTally(w time.Duration, keys, items int, startNs, endNs int64) *windowTally {
	ms := w.Milliseconds()
	first, last := startNs/1e6/ms, endNs/1e6/ms
	n := int(last-first) + 2 // a slot due at the end is sent a little after it, stamped with its due time
	return &windowTally{ms: ms, first: first, keys: keys, cells: make([]uint64, n*keys), row: make([]int, items)}
}

// stamp notes batch item i's window from its intended time (Unix ns).
func (w *windowTally) stamp(i int, intendedNs int64) {
	win := intendedNs/1e6/w.ms - w.first
	w.row[i] = -1
	if win >= 0 && int(win+1)*w.keys <= len(w.cells) {
		w.row[i] = int(win) * w.keys
	}
}

// add counts batch item i's bucket, whose campaigns are kc.
func (w *windowTally) add(i int, kc []scenarios.KeyCount) {
	r := w.row[i]
	if r < 0 {
		for _, c := range kc {
			w.outside += uint64(c.N)
		}
		return
	}
	for _, c := range kc {
		w.cells[r+int(c.Campaign)] += uint64(c.N)
	}
}

// addTo adds the thread's counts into into (window end, campaign).
func (w *windowTally) addTo(into map[scenarios.WindowKey]uint64) {
	for i, n := range w.cells {
		if n > 0 {
			win, c := int64(i/w.keys), i%w.keys
			name := scenarios.CampaignID
			if w.name != nil {
				name = w.name
			}
			into[scenarios.WindowKey{Key: name(c), EndMs: (w.first + win + 1) * w.ms}] += n
		}
	}
}

// countKeys takes, per template, its campaigns' counts of the tuples the
// declared filter keeps (before the run: the loop only adds them up).
func (t *thread) countKeys(join *scenarios.Campaigns, p *scenarios.Predicate) error {
	if join == nil {
		return nil
	}
	t.keys = make([][]scenarios.KeyCount, len(t.tpls))
	for i := range t.tpls {
		kc, err := join.Count(t.tpls[i].Msg, p)
		if err != nil {
			return fmt.Errorf("count the campaigns of bucket template %d: %w", i, err)
		}
		t.keys[i] = kc
	}
	return nil
}

// windowCounts are the threads' counts, merged, in the order of their
// windows' ends and keys.
func windowCounts(threads []*thread) ([]scenarios.WindowCount, uint64) {
	merged := map[scenarios.WindowKey]uint64{}
	var outside uint64
	for _, t := range threads {
		if t.win != nil {
			t.win.addTo(merged)
			outside += t.win.outside
		}
	}
	out := make([]scenarios.WindowCount, 0, len(merged))
	for k, n := range merged {
		out = append(out, scenarios.WindowCount{WindowKey: k, Count: n})
	}
	slices.SortFunc(out, scenarios.CompareWindows)
	return out, outside
}
