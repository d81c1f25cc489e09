package activity

import (
	"cmp"
	"errors"
	"fmt"
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
	// MessageDelayNs, if positive, clips a message longer than this to
	// end that long after it was sent, unless its receiver was waiting
	// for it (Builder.clip). The invariants always see the measured times.
	MessageDelayNs int64
	Releases       [][2]int // pairs [up, down] of a job's operators, up feeding down (release.go)
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

// Builder builds windows one at a time. It is fed in time order (add,
// addTransfer, the floor, the workers' ends) and keeps only what the
// windows not yet built still need: each worker's activities from the
// current window on (and back to what the feeder still looks up), and the
// transfers sent before the window's end and not yet received. So its
// memory is one window's graph plus what is in flight, however long the
// trace.
type Builder struct {
	opt        Options
	acts       [][]Activity // per worker, from the one before the window (or what is retained)
	waitBefore [][]int64    // per worker, beside acts (appendWait)
	done       []bool       // per worker: every activity is in
	first      []int64      // per worker, its first activity's start (MaxInt64: none yet)
	xdone      bool         // every transfer is in
	floor      int64        // no transfer sent before it is still to come
	retain     int64        // the feeder still looks up activities ending at or after it
	queue      transferQueue
	open       []Transfer // transfers sent before the current window's end, not yet received
	minX       int64      // the earliest send or receive of a transfer in
	late       int        // transfers sent before a window already built
	builtTo    int64      // the end of the last window built
	next       []int      // per worker, its first activity not wholly before the window
	started    bool
	t0, end    int64
	n          int
	// borrowed: the activities are the caller's (NewBuilder): never moved
	borrowed bool
	held     int // activities held over every worker (MaxHeld)
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
	firstV []int32 // per worker, its first and last vertex in the window (-1: none)
	lastV  []int32
	offset []int32
}

// NewBuilder checks a whole trace and the options and returns a builder
// of its windows, which start at the earliest activity or transfer.
func NewBuilder(tr *Trace, opt Options) (*Builder, error) {
	if err := tr.Validate(); err != nil {
		return nil, err
	}
	b, err := newBuilder(len(tr.Workers), opt)
	if err != nil {
		return nil, err
	}
	xs := slices.Clone(tr.Transfers) // clipped when a window takes them in (openAt)
	for _, x := range xs {
		b.minX = min(b.minX, x.SentNs, x.RecvNs)
		b.end = max(b.end, x.SentNs, x.RecvNs)
	}
	slices.SortStableFunc(xs, func(a, b Transfer) int { return cmp.Compare(a.SentNs, b.SentNs) })
	b.queue.xs = xs
	for wk, acts := range tr.Activities {
		b.acts[wk] = acts
		b.waitBefore[wk] = b.appendWait(nil, acts...)
		if len(acts) > 0 {
			b.first[wk] = acts[0].StartNs
			b.end = max(b.end, acts[len(acts)-1].EndNs)
		}
	}
	b.borrowed = true
	b.finish()
	return b, nil
}

// newBuilder is an empty builder for n workers, to be fed in time order.
func newBuilder(n int, opt Options) (*Builder, error) {
	if opt.WindowNs <= 0 || opt.WaitNs < 0 || opt.MessageDelayNs < 0 {
		return nil, errors.New("activity: the window must be positive, the waiting threshold and the message delay not negative")
	}
	if err := checkReleases(opt.Releases, n); err != nil {
		return nil, err
	}
	b := &Builder{opt: opt, acts: make([][]Activity, n), waitBefore: make([][]int64, n), done: make([]bool, n), first: make([]int64, n),
		next: make([]int, n), floor: math.MinInt64, retain: math.MaxInt64, minX: math.MaxInt64,
		t0: math.MaxInt64, end: math.MinInt64, builtTo: math.MinInt64}
	for i := range b.first {
		b.first[i] = math.MaxInt64
	}
	b.cuts, b.xcuts = make([][]int64, n), make([][]int64, n)
	b.firstV, b.lastV, b.offset = make([]int32, n), make([]int32, n), make([]int32, n+1)
	return b, nil
}

// finish says that everything is in.
func (b *Builder) finish() {
	for wk := range b.done {
		b.done[wk] = true
	}
	b.xdone, b.floor, b.retain = true, math.MaxInt64, math.MaxInt64
}

// add appends worker wk's next activity; it may not begin before the
// last one ended.
func (b *Builder) add(wk int, a Activity) error {
	acts := b.acts[wk]
	if a.Kind >= Gap || a.EndNs < a.StartNs || (len(acts) > 0 && a.StartNs < acts[len(acts)-1].EndNs) || b.done[wk] {
		return fmt.Errorf("activity %s %d..%d of worker %d is not a stage activity in order", a.Kind, a.StartNs, a.EndNs, wk)
	}
	if b.held >= MaxHeld {
		return ErrHeldLimit
	}
	if b.first[wk] == math.MaxInt64 {
		b.first[wk] = a.StartNs
	}
	b.held++
	b.waitBefore[wk] = b.appendWait(b.waitBefore[wk], a)
	b.acts[wk] = append(acts, a)
	b.end = max(b.end, a.EndNs)
	return nil
}

// addTransfer queues a transfer (clipped to the message delay when a
// window takes it in). One sent before the end of a window already built
// is counted late and left out.
func (b *Builder) addTransfer(x Transfer) {
	if x.SentNs < b.builtTo {
		b.late++
		return
	}
	b.queue.push(x)
	b.minX = min(b.minX, x.SentNs, x.RecvNs)
	b.end = max(b.end, x.SentNs, x.RecvNs)
}

// holding is the busy activity of worker wk whose span holds t, among the
// activities the builder still has.
func (b *Builder) holding(wk int, t int64) (Activity, bool) {
	acts := b.acts[wk]
	i := sort.Search(len(acts), func(i int) bool { return acts[i].EndNs >= t })
	for ; i < len(acts) && acts[i].StartNs <= t; i++ {
		if processingKind(acts[i].Kind) {
			return acts[i], true
		}
	}
	return Activity{}, false
}

// lastEnd is the end of worker wk's last activity in (MinInt64: none).
func (b *Builder) lastEnd(wk int) int64 {
	if acts := b.acts[wk]; len(acts) > 0 {
		return acts[len(acts)-1].EndNs
	}
	return math.MinInt64
}

// bounds is the next window. ok is false when it cannot be built yet (what
// it needs is not all in) or, once everything is in, after the last one.
func (b *Builder) bounds() (w0, w1 int64, ok bool) {
	final := b.xdone
	for _, d := range b.done {
		final = final && d
	}
	if !b.started {
		t0 := b.minX
		for wk, f := range b.first {
			if f == math.MaxInt64 && !b.done[wk] {
				return 0, 0, false // its first activity may come before the others'
			}
			t0 = min(t0, f)
		}
		if !final && (t0 == math.MaxInt64 || b.floor < t0) {
			return 0, 0, false
		}
		b.t0, b.started = t0, true
	}
	if b.t0 > b.end {
		return 0, 0, false
	}
	w0 = b.t0 + int64(b.n)*b.opt.WindowNs
	w1 = w0 + b.opt.WindowNs
	if final {
		if w0 >= b.end && !(b.n == 0 && w0 == b.end) {
			return 0, 0, false
		}
		if w1 > b.end && b.end > w0 {
			// The last window ends with the trace: past it no worker has a
			// vertex, so a window that ran on would have no path to its end.
			w1 = b.end
		}
		return w0, w1, true
	}
	// Not the last window, and every worker's activities and every
	// transfer up to its end are in.
	if b.end < w1 || b.floor < w1 {
		return 0, 0, false
	}
	// The clip of a message sent in the window reads its receiver's
	// activity up to the message delay after the window's end.
	for wk := range b.acts {
		if !b.done[wk] && b.lastEnd(wk) < w1+b.opt.MessageDelayNs {
			return 0, 0, false
		}
	}
	return w0, w1, true
}

// Next builds the next window; ok is false when there is none to build
// (yet, while the builder is still being fed).
func (b *Builder) Next(w *Window) (ok bool) {
	w0, w1, ok := b.bounds()
	if !ok {
		return false
	}
	*w = Window{Index: b.n, StartNs: w0, EndNs: w1, Edges: w.Edges[:0]}
	b.n++
	b.build(w)
	b.criticalParticipation(w)
	b.builtTo = w1
	b.trim(w1)
	return true
}

// trim drops the activities that no window from w0 on needs (it keeps the
// one before: a gap's start) and that the feeder no longer looks up. It
// moves them down only when they are at least half of what it holds, so
// that the cost stays linear.
func (b *Builder) trim(w0 int64) {
	for wk, acts := range b.acts {
		i := b.next[wk]
		for i < len(acts) && acts[i].EndNs <= w0 && !(acts[i].EndNs == w0 && acts[i].StartNs == w0) {
			i++
		}
		cut := max(i-1, 0)
		if b.retain != math.MaxInt64 {
			cut = min(cut, sort.Search(len(acts), func(i int) bool { return acts[i].EndNs >= b.retain }))
		}
		if cut > 0 && cut*2 >= len(acts) && !b.borrowed {
			n := copy(acts, acts[cut:])
			clear(acts[n:])
			if w := b.waitBefore[wk]; len(w) > 0 {
				b.waitBefore[wk] = w[:copy(w, w[cut:])]
			}
			b.held -= cut
			b.acts[wk], b.next[wk] = acts[:n], max(b.next[wk]-cut, 0)
		}
	}
}

// openAt keeps the transfers still in flight from one window to the next
// and takes in those sent before the window's end.
func (b *Builder) openAt(w0, w1 int64) {
	cur := b.open[:0]
	for _, x := range b.open {
		if x.RecvNs >= w0 && !x.Ambiguous() {
			cur = append(cur, x)
		}
	}
	for b.queue.Len() > 0 && b.queue.top().SentNs < w1 {
		cur = append(cur, b.clip(b.queue.pop()))
	}
	b.open = cur
	b.releasesAt(w0, w1)
}

func (b *Builder) build(w *Window) {
	b.openAt(w.StartNs, w.EndNs)
	b.cutPoints(w.StartNs, w.EndNs)
	b.vertices()
	b.localEdges(w)
	b.remoteEdges(w)
}

// cutPoints are, per worker, where its vertices go: its activities'
// boundaries, its transfers' ends, and the window's boundaries where the
// worker is active.
func (b *Builder) cutPoints(w0, w1 int64) {
	for wk, acts := range b.acts {
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
	for _, x := range b.open {
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
		b.firstV[wk], b.lastV[wk] = -1, -1
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
			b.firstV[wk], b.lastV[wk] = b.offset[wk], int32(len(b.vtime))-1
		}
	}
	b.offset[len(b.cuts)] = int32(len(b.vtime))
}

// localEdges are the activity (or gap) covering each pair of consecutive
// vertices of a worker.
func (b *Builder) localEdges(w *Window) {
	for wk, acts := range b.acts {
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
func (b *Builder) remoteEdges(w *Window) {
	w0, w1 := w.StartNs, w.EndNs
	for _, x := range b.open {
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
