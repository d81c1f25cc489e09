package activity

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"sort"
)

// Options are the analysis's settings.
type Options struct {
	WindowNs int64 // the fixed window (SnailTrail 1)
	// WaitNs: a gap between two logged activities longer than this is
	// waiting, shorter is busy (ST2's 15 µs).
	WaitNs int64
	// MessageDelayNs, if positive, clips every message longer than this
	// (and than its error bound) to end that long after it was sent, as
	// SnailTrail's PAG construction does with its message delay: a bucket
	// that sat in a queue while its receiver was busy did not hold the
	// receiver up; its edge then joins the receiver's timeline inside
	// what the receiver was doing, and paths follow that. The invariants
	// always see the measured times.
	MessageDelayNs int64
}

// DefaultMessageDelayNs is the default clip: above a loopback or LAN
// transit, far below the queueing of an overloaded pipeline.
const DefaultMessageDelayNs = 1_000_000

// DefaultWaitNs is ST2's waiting threshold.
const DefaultWaitNs = 15_000

// Edge is one edge of a window's graph. A local edge lies on one worker
// (Src == Dst); a remote edge (Kind Message) goes from Src's send to Dst's
// receive and may start before the window (FromSource) or end after it
// (ToSink): it is split at the boundary.
type Edge struct {
	Src, Dst       int // workers
	Kind           Kind
	StartNs, EndNs int64
	Waiting        bool
	Ambiguous      bool // a remote edge whose order is ambiguous: marked, never traversed
	ErrNs          int64
	Items          uint32
	// CP is the edge's critical participation in its window.
	CP float64
	// from, to are vertex indices in the window (source, sink: the
	// window's start and end; none for an ambiguous edge).
	from, to int32
}

// Duration is the edge's length in ns.
func (e Edge) Duration() int64 { return e.EndNs - e.StartNs }

// Window is the graph of one fixed window and its critical participation.
type Window struct {
	Index          int
	StartNs, EndNs int64
	Edges          []Edge
	// Paths is the natural logarithm of the number of start-to-end paths
	// (−Inf: none, so every CP is 0).
	Paths float64
}

const (
	source = -1 // the window's start
	sink   = -2 // the window's end
	none   = -3 // an ambiguous edge: no vertex
)

// Builder builds windows one at a time, so memory stays bounded by one
// window's graph (the scratch is reused).
type Builder struct {
	tr   *Trace
	opt  Options
	next []int   // per worker, its first activity not wholly before the window
	byW  [][]int // per window index relative to cursor: transfers touching it
	xfer []int   // transfers sorted by SentNs
	xi   int
	t0   int64
	end  int64
	n    int
	// scratch
	cuts   [][]int64 // per worker: its activities' cut points
	xcuts  [][]int64 // per worker: its transfers' cut points
	vtime  []int64
	vwork  []int32
	order  []int32
	logF   []float64
	logB   []float64
	indeg  []int32
	outAt  []int32 // CSR: vertex v's traversable out-edges are outE[outAt[v]:outAt[v+1]]
	outE   []int32
	first  []int32 // per worker, its first and last vertex in the window (-1: none)
	last   []int32
	offset []int32
}

// NewBuilder checks the trace and the options and returns a builder whose
// windows start at the earliest activity or transfer.
func NewBuilder(tr *Trace, opt Options) (*Builder, error) {
	if opt.WindowNs <= 0 || opt.WaitNs < 0 {
		return nil, errors.New("activity: the window must be positive and the waiting threshold not negative")
	}
	if err := tr.Validate(); err != nil {
		return nil, err
	}
	if opt.MessageDelayNs > 0 {
		tr = clipped(tr, opt.MessageDelayNs)
	}
	b := &Builder{tr: tr, opt: opt, next: make([]int, len(tr.Workers)), t0: math.MaxInt64, end: math.MinInt64}
	for _, acts := range tr.Activities {
		if len(acts) > 0 {
			b.t0, b.end = min(b.t0, acts[0].StartNs), max(b.end, acts[len(acts)-1].EndNs)
		}
	}
	b.xfer = make([]int, len(tr.Transfers))
	for i, x := range tr.Transfers {
		b.xfer[i] = i
		b.t0, b.end = min(b.t0, x.SentNs, x.RecvNs), max(b.end, x.SentNs, x.RecvNs)
	}
	slices.SortStableFunc(b.xfer, func(i, j int) int { return cmp.Compare(tr.Transfers[i].SentNs, tr.Transfers[j].SentNs) })
	b.cuts, b.xcuts = make([][]int64, len(tr.Workers)), make([][]int64, len(tr.Workers))
	b.first, b.last, b.offset = make([]int32, len(tr.Workers)), make([]int32, len(tr.Workers)), make([]int32, len(tr.Workers)+1)
	return b, nil
}

// clipped is tr with every message longer than delay (and than its error
// bound, so that none becomes ambiguous) ending delay after it was sent.
func clipped(tr *Trace, delay int64) *Trace {
	out := &Trace{Workers: tr.Workers, Activities: tr.Activities, Transfers: make([]Transfer, len(tr.Transfers))}
	for i, x := range tr.Transfers {
		if !x.Ambiguous() {
			x.RecvNs = min(x.RecvNs, x.SentNs+max(delay, x.ErrNs))
		}
		out.Transfers[i] = x
	}
	return out
}

// pending are the transfers that touch the current window: sent before
// its end and received after its start.
func (b *Builder) pending(w0, w1 int64, dst []int) []int {
	tr := b.tr
	for b.xi < len(b.xfer) && tr.Transfers[b.xfer[b.xi]].SentNs < w1 {
		dst = append(dst, b.xfer[b.xi])
		b.xi++
	}
	return dst
}

// Next builds the next window; ok is false after the last one.
func (b *Builder) Next(w *Window) (ok bool) {
	if b.t0 > b.end {
		return false
	}
	w0 := b.t0 + int64(b.n)*b.opt.WindowNs
	if w0 >= b.end && !(b.n == 0 && w0 == b.end) {
		return false
	}
	w1 := w0 + b.opt.WindowNs
	if w1 > b.end && b.end > w0 {
		// The last window ends with the trace: past it no worker has a
		// vertex, so a window that ran on would have no path to its end.
		w1 = b.end
	}
	*w = Window{Index: b.n, StartNs: w0, EndNs: w1, Edges: w.Edges[:0]}
	b.n++
	b.build(w)
	b.criticalParticipation(w)
	return true
}

// open keeps the transfers still in flight from one window to the next.
func (b *Builder) open(w0, w1 int64) []int {
	if len(b.byW) == 0 {
		b.byW = append(b.byW, nil)
	}
	cur := b.byW[0][:0]
	for _, i := range b.byW[0] {
		if x := b.tr.Transfers[i]; x.RecvNs >= w0 && !x.Ambiguous() {
			cur = append(cur, i)
		}
	}
	cur = b.pending(w0, w1, cur)
	b.byW[0] = cur
	return cur
}

func (b *Builder) build(w *Window) {
	xs := b.open(w.StartNs, w.EndNs)
	b.cutPoints(w.StartNs, w.EndNs, xs)
	b.vertices()
	b.localEdges(w)
	b.remoteEdges(w, xs)
}

// cutPoints are, per worker, where its vertices go: its activities'
// boundaries, its transfers' ends, and the window's boundaries where the
// worker is active.
func (b *Builder) cutPoints(w0, w1 int64, xs []int) {
	tr := b.tr
	for wk, acts := range tr.Activities {
		b.xcuts[wk] = b.xcuts[wk][:0]
		c := b.cuts[wk][:0]
		i := b.next[wk]
		for i < len(acts) && acts[i].EndNs <= w0 && !(acts[i].EndNs == w0 && acts[i].StartNs == w0) {
			i++
		}
		b.next[wk] = i
		if len(acts) > 0 && acts[0].StartNs < w1 && acts[len(acts)-1].EndNs > w0 {
			active0 := max(w0, acts[0].StartNs)
			c = append(c, active0)
			for j := i; j < len(acts) && acts[j].StartNs < w1; j++ {
				if s := acts[j].StartNs; s > active0 {
					c = append(c, s)
				}
				if e := acts[j].EndNs; e < w1 {
					c = append(c, e)
				}
			}
			c = append(c, min(w1, acts[len(acts)-1].EndNs))
		}
		b.cuts[wk] = c
	}
	for _, i := range xs {
		x := tr.Transfers[i]
		if x.Ambiguous() {
			continue // never traversed: it needs no vertex
		}
		if x.SentNs >= w0 && x.SentNs < w1 {
			b.xcuts[x.From] = append(b.xcuts[x.From], x.SentNs)
		}
		if x.RecvNs >= w0 && x.RecvNs < w1 {
			b.xcuts[x.To] = append(b.xcuts[x.To], x.RecvNs)
		}
	}
}

// vertices are each worker's sorted, distinct cut points: its activities'
// (sorted as they are built) merged with its transfers' (nearly sorted:
// sorting the two together was half the graph's time).
func (b *Builder) vertices() {
	b.vtime, b.vwork = b.vtime[:0], b.vwork[:0]
	for wk := range b.cuts {
		c, x := b.cuts[wk], b.xcuts[wk]
		if !slices.IsSorted(c) {
			slices.Sort(c)
		}
		if !slices.IsSorted(x) {
			slices.Sort(x)
		}
		b.offset[wk] = int32(len(b.vtime))
		b.first[wk], b.last[wk] = -1, -1
		add := func(t int64) {
			if n := len(b.vtime); n > int(b.offset[wk]) && b.vtime[n-1] == t {
				return
			}
			b.vtime = append(b.vtime, t)
			b.vwork = append(b.vwork, int32(wk))
		}
		i, j := 0, 0
		for i < len(c) || j < len(x) {
			if j == len(x) || (i < len(c) && c[i] <= x[j]) {
				add(c[i])
				i++
			} else {
				add(x[j])
				j++
			}
		}
		if int32(len(b.vtime)) > b.offset[wk] {
			b.first[wk], b.last[wk] = b.offset[wk], int32(len(b.vtime))-1
		}
	}
	b.offset[len(b.cuts)] = int32(len(b.vtime))
}

// localEdges are the activity (or gap) covering each pair of consecutive
// vertices of a worker.
func (b *Builder) localEdges(w *Window) {
	for wk, acts := range b.tr.Activities {
		j := b.next[wk]
		for v := b.offset[wk]; v+1 < b.offset[wk+1]; v++ {
			s, e := b.vtime[v], b.vtime[v+1]
			for j < len(acts) && acts[j].EndNs <= s {
				j++
			}
			edge := Edge{Src: wk, Dst: wk, StartNs: s, EndNs: e, from: v, to: v + 1}
			if j < len(acts) && acts[j].StartNs <= s {
				a := acts[j]
				edge.Kind, edge.Waiting = a.Kind, waitingKind(a.Kind)
				if a.StartNs == s { // the piece that starts the activity carries its items
					edge.Items = a.Items
				}
			} else { // between two activities: waiting if the gap is long
				gs, ge := int64(math.MinInt64), int64(math.MaxInt64)
				if j > 0 {
					gs = acts[j-1].EndNs
				}
				if j < len(acts) {
					ge = acts[j].StartNs
				}
				edge.Kind, edge.Waiting = Gap, ge-gs > b.opt.WaitNs
			}
			w.Edges = append(w.Edges, edge)
		}
	}
}

// remoteEdges are the transfers, split at the window's boundaries; an
// ambiguous one is only marked.
func (b *Builder) remoteEdges(w *Window, xs []int) {
	w0, w1 := w.StartNs, w.EndNs
	for _, i := range xs {
		x := b.tr.Transfers[i]
		if x.Ambiguous() { // marked in the window it was sent in, as sent
			if x.SentNs >= w0 && x.SentNs < w1 {
				w.Edges = append(w.Edges, Edge{Src: x.From, Dst: x.To, Kind: Message, StartNs: x.SentNs, EndNs: x.RecvNs,
					Ambiguous: true, ErrNs: x.ErrNs, Items: x.Tuples, from: none, to: none})
			}
			continue
		}
		if x.RecvNs < w0 || x.SentNs >= w1 {
			continue
		}
		e := Edge{Src: x.From, Dst: x.To, Kind: Message, StartNs: max(x.SentNs, w0), EndNs: min(x.RecvNs, w1),
			ErrNs: x.ErrNs, Items: x.Tuples, from: source, to: sink}
		if x.SentNs >= w0 {
			e.from = b.vertexAt(x.From, x.SentNs)
		}
		if x.RecvNs < w1 {
			e.to = b.vertexAt(x.To, x.RecvNs)
		}
		w.Edges = append(w.Edges, e)
	}
}

// vertexAt is worker wk's vertex at t (it exists: t is one of its cuts).
func (b *Builder) vertexAt(wk int, t int64) int32 {
	lo, hi := int(b.offset[wk]), int(b.offset[wk+1])
	i := lo + sort.Search(hi-lo, func(i int) bool { return b.vtime[lo+i] >= t })
	return int32(i)
}

func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

func resize32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}
