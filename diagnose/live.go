package diagnose

import (
	"sync"
	"time"

	"github.com/cloudprofiler-go/cp/stage"
)

// LogStalls diagnoses one process's stages live, at every sample of set: it
// publishes each stage's label (cp_stage_label) and logs a stall when it
// is confirmed (confirm consecutive snapshots) and when it ends. The
// process's own graph is its lanes into its consumer, or its sender
// threads alone: the network between processes is diagnosed afterwards
// (cpsweep diagnose), from both sides' series.
func LogStalls(set *stage.Set, confirm int, logf func(format string, args ...any)) {
	w := &watcher{set: set, confirm: confirm, logf: logf}
	set.OnSample(w.sample)
}

type watcher struct {
	set     *stage.Set
	confirm int
	logf    func(format string, args ...any)

	once   sync.Once
	g      *Graph
	acct   []int // module -> account index in the snapshot
	d      *Diagnoser
	live   *Live
	out    []Label
	total  []uint64
	wait   []uint64
	queue  []int64
	events []Event
	first  uint64 // TSC of the first snapshot
}

// build makes the local graph from the accounts present at the first
// sample (threads, lanes and the consumer exist from the start).
func (w *watcher) build(s stage.Snapshot) {
	var mods []Module
	var edges [][2]int
	consumer := -1
	for i, a := range s.Accounts {
		switch a.Kind() {
		case stage.Sender, stage.Lane:
			mods = append(mods, Module{Name: a.Name(), Kind: a.Kind(), HasWait: true, HasQueue: true})
		case stage.Consumer:
			mods = append(mods, Module{Name: a.Name(), Kind: a.Kind(), HasQueue: true})
			consumer = len(mods) - 1
		default:
			continue
		}
		w.acct = append(w.acct, i)
	}
	for m := range mods {
		if mods[m].Kind == stage.Lane && consumer >= 0 {
			edges = append(edges, [2]int{m, consumer})
		}
	}
	w.g, _ = NewGraph(mods, edges) // the edges are in range by construction
	n := len(mods)
	w.d, w.live = NewDiagnoser(w.g), NewLive(n, w.confirm)
	w.out, w.total, w.wait, w.queue = make([]Label, n), make([]uint64, n), make([]uint64, n), make([]int64, n)
	w.first = s.TSC
}

func (w *watcher) sample(s stage.Snapshot) {
	w.once.Do(func() { w.build(s) })
	for m, i := range w.acct {
		r := &s.Readings[i]
		w.total[m], w.queue[m] = r.Items, r.Queue
		w.wait[m] = 0
		for j, st := range stage.States(w.g.Modules[m].Kind) {
			if st.Class == stage.Blocked {
				w.wait[m] += r.Ticks[j]
			}
		}
	}
	if !w.d.Step(w.total, w.wait, w.queue, w.out) {
		return
	}
	labels := make(map[string]string, len(w.out))
	for m, l := range w.out {
		labels[w.g.Modules[m].Name] = l.String()
	}
	w.set.SetLabels(labels)
	if w.logf == nil {
		return
	}
	period := w.set.Period()
	w.events = w.live.Step(w.out, w.events[:0])
	for _, e := range w.events {
		name := w.g.Modules[e.Module].Name
		length := time.Duration(e.Snapshots) * period
		if e.Started {
			w.logf("%s STALLED: no progress for %v with work waiting (diagnosis: docs/diagnosis.md)", name, length)
		} else {
			w.logf("%s stall ended after %v", name, length)
		}
	}
}
