package activity

import (
	"math"
	"sort"
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
