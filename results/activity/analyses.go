package activity

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Share is an activity's share of something in one window, by worker and
// kind (a remote edge counts for its sender).
type Share struct {
	Worker string  `json:"worker"`
	Kind   string  `json:"kind"`
	Value  float64 `json:"value"`
}

// Metric is one window × worker × activity: count, total time and items
// (ST2's metrics command, §3.6.1). Pieces of an activity split by a
// window's boundary count in both windows.
type Metric struct {
	Window  int    `json:"window"`
	Worker  string `json:"worker"`
	Kind    string `json:"kind"`
	Waiting bool   `json:"waiting"`
	Count   int    `json:"count"`
	TotalNs int64  `json:"total_ns"`
	Items   uint64 `json:"items"`
}

// Result is one window's analysis.
type Result struct {
	Window         int     `json:"window"`
	StartNs, EndNs int64   `json:"-"`
	From           int64   `json:"start_ns"`
	To             int64   `json:"end_ns"`
	LogPaths       float64 `json:"log_paths"` // ln of the start-to-end paths; -Inf (as null) when none
	HasPath        bool    `json:"has_path"`
	// CP is the critical participation per worker and kind, largest
	// first; CPByKind per kind. Both add up to 1 when the window has a
	// path, 0 when it has none.
	CP        []Share  `json:"critical_participation"`
	CPByKind  []Share  `json:"critical_participation_by_kind"`
	Metrics   []Metric `json:"metrics"`
	Ambiguous int      `json:"ambiguous_messages"`
}

// Summarize turns a window's edges into its result.
func Summarize(tr *Trace, w *Window) Result {
	r := Result{Window: w.Index, StartNs: w.StartNs, EndNs: w.EndNs, From: w.StartNs, To: w.EndNs,
		LogPaths: w.Paths, HasPath: !math.IsInf(w.Paths, -1)}
	if !r.HasPath {
		r.LogPaths = 0
	}
	type key struct {
		wk   int
		kind Kind
		wait bool
	}
	cp := map[key]float64{}
	byKind := map[Kind]float64{}
	met := map[key]*Metric{}
	for i := range w.Edges {
		e := &w.Edges[i]
		if e.Ambiguous {
			r.Ambiguous++
		}
		k := key{e.Src, e.Kind, e.Waiting}
		if e.CP > 0 {
			cp[key{e.Src, e.Kind, false}] += e.CP
			byKind[e.Kind] += e.CP
		}
		m := met[k]
		if m == nil {
			m = &Metric{Window: w.Index, Worker: tr.Workers[e.Src], Kind: e.Kind.String(), Waiting: e.Waiting}
			met[k] = m
		}
		m.Count++
		m.TotalNs += e.Duration()
		m.Items += uint64(e.Items)
	}
	for k, v := range cp {
		r.CP = append(r.CP, Share{Worker: tr.Workers[k.wk], Kind: k.kind.String(), Value: v})
	}
	for k, v := range byKind {
		r.CPByKind = append(r.CPByKind, Share{Kind: k.String(), Value: v})
	}
	sortShares(r.CP)
	sortShares(r.CPByKind)
	for _, m := range met {
		r.Metrics = append(r.Metrics, *m)
	}
	sort.Slice(r.Metrics, func(i, j int) bool {
		a, b := r.Metrics[i], r.Metrics[j]
		if a.Worker != b.Worker {
			return a.Worker < b.Worker
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return !a.Waiting && b.Waiting
	})
	return r
}

func sortShares(s []Share) {
	sort.Slice(s, func(i, j int) bool {
		if s[i].Value != s[j].Value {
			return s[i].Value > s[j].Value
		}
		if s[i].Worker != s[j].Worker {
			return s[i].Worker < s[j].Worker
		}
		return s[i].Kind < s[j].Kind
	})
}

// Hop is what k-hops found at one depth: the edges that led, hop by hop,
// to the end of a waiting activity, counted (unweighted) and by their time
// (weighted), per worker and kind.
type Hop struct {
	Depth   int    `json:"depth"`
	Worker  string `json:"worker"`
	Kind    string `json:"kind"`
	Count   int    `json:"count"`
	TotalNs int64  `json:"total_ns"`
}

// hopGraph is a window's edges indexed by vertex, for walking back.
// Slices indexed by vertex, not maps: k-hops was half of analyze --pag's
// time with maps.
type hopGraph struct {
	intoAt []int32 // CSR: the edges ending at v are edges[intoAt[v]:intoAt[v+1]]
	edges  []int32
	next   []int32 // a local edge's start vertex -> that edge (-1: none)
}

func newHopGraph(w *Window) *hopGraph {
	nv := int32(0)
	for i := range w.Edges {
		nv = max(nv, w.Edges[i].from+1, w.Edges[i].to+1)
	}
	g := &hopGraph{intoAt: make([]int32, nv+1), next: make([]int32, nv)}
	for v := range g.next {
		g.next[v] = -1
	}
	for i := range w.Edges {
		e := &w.Edges[i]
		if e.to >= 0 && !e.Ambiguous {
			g.intoAt[e.to+1]++
		}
		if e.Src == e.Dst && e.Kind != Message && e.from >= 0 {
			g.next[e.from] = int32(i)
		}
	}
	for v := int32(0); v < nv; v++ {
		g.intoAt[v+1] += g.intoAt[v]
	}
	g.edges = make([]int32, g.intoAt[nv])
	fill := append([]int32(nil), g.intoAt[:nv]...)
	for i := range w.Edges {
		if e := &w.Edges[i]; e.to >= 0 && !e.Ambiguous {
			g.edges[fill[e.to]] = int32(i)
			fill[e.to]++
		}
	}
	return g
}

// into are the edges ending at v.
func (g *hopGraph) into(v int32) []int32 { return g.edges[g.intoAt[v]:g.intoAt[v+1]] }

// KHops walks back from every waiting local edge of a window for up to k
// hops (ST2 §3.6.1, Listing 3.7): the first hop is the remote edges that
// end where the wait ends, or inside the busy activity that follows it
// (a message becomes visible only when it is processed); every further hop
// is the edges ending where the previous hop's edges start. An edge is
// counted once per depth. Ambiguous edges are not walked.
func KHops(tr *Trace, w *Window, k int) []Hop {
	if k < 1 {
		return nil
	}
	g := newHopGraph(w)
	edgesInto, next := g.into, g.next
	type acc struct {
		count int
		ns    int64
	}
	nw := len(tr.Workers)
	found := make([]acc, (k+1)*nw*int(numKinds))
	seen := make([]int32, len(w.Edges)) // the depth an edge was last put in a frontier
	var frontier, nextFrontier []int32
	for i := range w.Edges { // the first hop
		e := &w.Edges[i]
		if e.Src != e.Dst || !e.Waiting || e.to < 0 {
			continue
		}
		ends := [2]int32{e.to, -1}
		if n := next[e.to]; n >= 0 && !w.Edges[n].Waiting && w.Edges[n].to >= 0 {
			ends[1] = w.Edges[n].to
		}
		for _, v := range ends {
			if v < 0 {
				continue
			}
			for _, ri := range edgesInto(v) {
				if w.Edges[ri].Kind == Message && seen[ri] != 1 {
					seen[ri] = 1
					frontier = append(frontier, ri)
				}
			}
		}
	}
	for depth := 1; depth <= k && len(frontier) > 0; depth++ {
		nextFrontier = nextFrontier[:0]
		for _, ei := range frontier {
			e := &w.Edges[ei]
			a := &found[(depth*nw+e.Src)*int(numKinds)+int(e.Kind)]
			a.count++
			a.ns += e.Duration()
			if e.from >= 0 {
				for _, pi := range edgesInto(e.from) {
					if seen[pi] != int32(depth+1) {
						seen[pi] = int32(depth + 1)
						nextFrontier = append(nextFrontier, pi)
					}
				}
			}
		}
		frontier, nextFrontier = nextFrontier, frontier
	}
	var out []Hop
	for i, a := range found {
		if a.count == 0 {
			continue
		}
		depth, rest := i/(nw*int(numKinds)), i%(nw*int(numKinds))
		out = append(out, Hop{Depth: depth, Worker: tr.Workers[rest/int(numKinds)], Kind: Kind(rest % int(numKinds)).String(), Count: a.count, TotalNs: a.ns})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Depth != out[j].Depth {
			return out[i].Depth < out[j].Depth
		}
		if out[i].TotalNs != out[j].TotalNs {
			return out[i].TotalNs > out[j].TotalNs
		}
		return out[i].Worker+out[i].Kind < out[j].Worker+out[j].Kind
	})
	return out
}

// Limits are the invariants (ST2 §5.1.3); 0 leaves one out.
type Limits struct {
	MessageMaxNs  int64 `json:"message_max_ns,omitempty"`  // a message's time, by its lower bound
	OperatorMaxNs int64 `json:"operator_max_ns,omitempty"` // one busy activity's length
	ProgressMaxNs int64 `json:"progress_max_ns,omitempty"` // the longest time without progress on the progress worker
	// ProgressWorker's busy activities are progress (the consumer: tuples
	// leaving the pipeline); -1: no progress invariants.
	ProgressWorker int `json:"progress_worker"`
	// EveryWindow: at least one progress event per window (needs
	// ProgressWorker).
	EveryWindow bool  `json:"progress_every_window,omitempty"`
	WindowNs    int64 `json:"window_ns"`
}

// Violation is one invariant that did not hold.
type Violation struct {
	Invariant string `json:"invariant"` // message-max, operator-max, progress-max, progress-per-window
	Worker    string `json:"worker"`
	FromNs    int64  `json:"from_ns"`
	ToNs      int64  `json:"to_ns"`
	// ValueNs is what was measured (a message: its lower bound; progress:
	// the gap), LimitNs the limit it broke.
	ValueNs int64  `json:"value_ns"`
	LimitNs int64  `json:"limit_ns"`
	Detail  string `json:"detail"`
}

// Check tests the invariants over a whole trace. A message's limit fires
// only when the lower bound of its time (RecvNs − SentNs − ErrNs) is above
// it: the clocks' error can never raise a false alarm. Ambiguous messages
// are never over a positive limit by their lower bound.
func Check(tr *Trace, l Limits) []Violation {
	var out []Violation
	if l.MessageMaxNs > 0 {
		for _, x := range tr.Transfers {
			if lo := x.RecvNs - x.SentNs - x.ErrNs; lo > l.MessageMaxNs {
				out = append(out, Violation{Invariant: "message-max", Worker: tr.Workers[x.From] + " -> " + tr.Workers[x.To],
					FromNs: x.SentNs, ToNs: x.RecvNs, ValueNs: lo, LimitNs: l.MessageMaxNs,
					Detail: fmt.Sprintf("a bucket took at least %d ns (%d ± %d)", lo, x.RecvNs-x.SentNs, x.ErrNs)})
			}
		}
	}
	if l.OperatorMaxNs > 0 {
		for wk, acts := range tr.Activities {
			for _, a := range acts {
				if processingKind(a.Kind) && a.EndNs-a.StartNs > l.OperatorMaxNs {
					out = append(out, Violation{Invariant: "operator-max", Worker: tr.Workers[wk], FromNs: a.StartNs, ToNs: a.EndNs,
						ValueNs: a.EndNs - a.StartNs, LimitNs: l.OperatorMaxNs, Detail: fmt.Sprintf("one %s activity lasted %d ns", a.Kind, a.EndNs-a.StartNs)})
				}
			}
		}
	}
	if l.ProgressWorker >= 0 && l.ProgressWorker < len(tr.Activities) && (l.ProgressMaxNs > 0 || l.EveryWindow) {
		out = append(out, checkProgress(tr, l)...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].FromNs < out[j].FromNs })
	return out
}

// checkProgress: progress is an item finished by the progress worker
// (Trace.Progress), or else the end of one of its busy activities that
// processed items. Progress is expected only while data
// enters the pipeline: from the first message sent (anywhere) to the last
// one, or, in a trace without messages, from the first progress event to
// the last. Inside that span no gap between progress events (nor from its
// start to the first, nor from the last to its end) may exceed
// ProgressMaxNs, and each window that begins in it needs one. Before the first
// bucket and after the input stops, a consumer idles by design.
func checkProgress(tr *Trace, l Limits) []Violation {
	name := tr.Workers[l.ProgressWorker]
	var progress []int64
	if l.ProgressWorker < len(tr.Progress) && len(tr.Progress[l.ProgressWorker]) > 0 {
		progress = tr.Progress[l.ProgressWorker]
	} else {
		for _, a := range tr.Activities[l.ProgressWorker] {
			if processingKind(a.Kind) && a.Items > 0 {
				progress = append(progress, a.EndNs)
			}
		}
	}
	var s0, s1 int64 = math.MaxInt64, math.MinInt64
	for _, x := range tr.Transfers {
		s0, s1 = min(s0, x.SentNs), max(s1, x.SentNs)
	}
	if s0 > s1 {
		if len(progress) == 0 {
			return nil
		}
		s0, s1 = progress[0], progress[len(progress)-1]
	}
	var out []Violation
	gap := func(from, to int64, what string) {
		if l.ProgressMaxNs > 0 && to-from > l.ProgressMaxNs {
			out = append(out, Violation{Invariant: "progress-max", Worker: name, FromNs: from, ToNs: to, ValueNs: to - from,
				LimitNs: l.ProgressMaxNs, Detail: fmt.Sprintf("no progress for %s%s", time.Duration(to-from), what)})
		}
	}
	prev := s0
	for _, p := range progress {
		if p <= s0 {
			continue
		}
		gap(prev, p, "")
		if prev = p; p >= s1 {
			break
		}
	}
	if prev < s1 { // no progress since, up to the end of the trace
		gap(prev, s1, " (up to the last bucket sent; none after it)")
	}
	if l.EveryWindow && l.WindowNs > 0 {
		// The graph's windows (from the trace's start), those that begin
		// while data enters the pipeline.
		t0 := int64(math.MaxInt64)
		for _, acts := range tr.Activities {
			if len(acts) > 0 {
				t0 = min(t0, acts[0].StartNs)
			}
		}
		t0 = min(t0, s0)
		j := 0
		for w0 := t0; w0 < s1; w0 += l.WindowNs {
			if w0 < s0 {
				continue
			}
			for j < len(progress) && progress[j] < w0 {
				j++
			}
			if j == len(progress) || progress[j] >= w0+l.WindowNs {
				out = append(out, Violation{Invariant: "progress-per-window", Worker: name, FromNs: w0, ToNs: w0 + l.WindowNs,
					LimitNs: l.WindowNs, Detail: "no progress event in this window"})
			}
		}
	}
	return out
}
