package receiver

import (
	"slices"

	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/scenarios"
)

// windowTally adds up a windowed job's counts per key and window, as the
// consumer consumed them, for the comparison with what each window owes
// (docs/sut.md). A window already seen costs two map lookups and no
// allocation; a new one (a key's window per window size) costs its cell.
type windowTally struct {
	ids        map[string]int32
	keys       []string
	cells      map[windowCell]uint64
	notTallied uint64 // windows' counts beyond tally.MaxWindows
}

type windowCell struct {
	key   int32
	endMs int64
}

func newWindowTally() *windowTally {
	return &windowTally{ids: map[string]int32{}, cells: map[windowCell]uint64{}}
}

// add counts one window tuple.
func (w *windowTally) add(win *scenarios.Window) {
	id, ok := w.ids[string(win.Key)]
	if !ok {
		if len(w.keys) >= tally.MaxWindows {
			w.notTallied++
			return
		}
		id = int32(len(w.keys))
		w.keys = append(w.keys, string(win.Key))
		w.ids[w.keys[id]] = id
	}
	c := windowCell{id, win.EndMs}
	if _, ok := w.cells[c]; !ok && len(w.cells) >= tally.MaxWindows {
		w.notTallied++
		return
	}
	w.cells[c] = satAdd(w.cells[c], uint64(max(win.Count, 0))) // a job may write a window any number of times
}

// counts are the windows in the order of their ends and keys.
func (w *windowTally) counts() []scenarios.WindowCount {
	out := make([]scenarios.WindowCount, 0, len(w.cells))
	for c, n := range w.cells {
		out = append(out, scenarios.WindowCount{WindowKey: scenarios.WindowKey{Key: w.keys[c.key], EndMs: c.endMs}, Count: n})
	}
	slices.SortFunc(out, scenarios.CompareWindows)
	return out
}
