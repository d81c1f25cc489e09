package activity

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// ProgressSlackNs is how far out of order progress events may come (the
// join merges several logs by approximate times): they are put in order
// once the latest one is this far past them.
const ProgressSlackNs = 10_000_000

// Stream analyses a trace fed in time order, so that a run of any length
// is analysed in memory bounded by one window plus what is in flight:
// each worker's activities in order (Activity, then Finish), transfers
// nearly in order of their send (Transfer), with Floor saying that none
// sent before a time is still to come, and the progress worker's finished
// items (Progress). Windows are built and analysed as soon as everything
// they need is in; Close analyses the rest and returns the report.
type Stream struct {
	tr      Trace // the workers' names (the analyses name workers)
	b       *Builder
	k       int
	check   *checker
	rep     *Report
	w       Window
	started time.Time
	// graphTime is the time spent building and analysing windows (not
	// waiting for the feeder).
	graphTime time.Duration
	known     bool    // the progress rules have their span's start
	pending   []int64 // progress events not yet in order (a min-heap)
	newest    int64
	adds      int
}

// NewStream starts the analysis of a trace of these workers: the graph's
// options, k for k-hops (0: none) and the invariants in l.
func NewStream(workers []string, opt Options, k int, l Limits) (*Stream, error) {
	b, err := newBuilder(len(workers), opt)
	if err != nil {
		return nil, err
	}
	return newStream(workers, b, opt, k, l), nil
}

func newStream(workers []string, b *Builder, opt Options, k int, l Limits) *Stream {
	l.WindowNs = opt.WindowNs
	return &Stream{tr: Trace{Workers: workers}, b: b, k: k, check: newChecker(workers, l), started: time.Now(), newest: math.MinInt64,
		rep: &Report{WindowNs: opt.WindowNs, WaitNs: opt.WaitNs, MessageDelayNs: opt.MessageDelayNs, Workers: workers, Limits: l, Violations: []Violation{}}}
}

// Activity adds worker wk's next activity: it may not begin before the
// last one ended.
func (s *Stream) Activity(wk int, a Activity) error {
	if wk < 0 || wk >= len(s.tr.Workers) {
		return fmt.Errorf("activity: no worker %d", wk)
	}
	if err := s.b.add(wk, a); err != nil {
		return fmt.Errorf("worker %s: %w", s.tr.Workers[wk], err)
	}
	s.rep.Events++
	s.check.activity(wk, a)
	if s.adds++; s.adds%256 == 0 {
		s.build()
	}
	return nil
}

// Finish says that worker wk has no more activities.
func (s *Stream) Finish(wk int) {
	if wk >= 0 && wk < len(s.b.done) {
		s.b.done[wk] = true
		s.build()
	}
}

// LastEnd is the end of worker wk's last activity so far (MinInt64: none).
func (s *Stream) LastEnd(wk int) int64 { return s.b.lastEnd(wk) }

// Transfer adds a transfer. One sent before the end of a window already
// built cannot be in the graph: it is counted (Late), never placed.
func (s *Stream) Transfer(x Transfer) error {
	if x.From < 0 || x.From >= len(s.tr.Workers) || x.To < 0 || x.To >= len(s.tr.Workers) || x.ErrNs < 0 {
		return fmt.Errorf("activity: transfer from worker %d to %d of %d (error bound %d)", x.From, x.To, len(s.tr.Workers), x.ErrNs)
	}
	s.rep.Events++
	s.check.transfer(x)
	s.b.addTransfer(x)
	return nil
}

// Floor says that no transfer sent before ns is still to come; Retain
// that activities ending before ns will not be looked up (Holding).
func (s *Stream) Floor(ns, retain int64) {
	s.b.floor, s.b.retain = max(s.b.floor, ns), retain
	s.build()
}

// Holding is worker wk's busy activity whose span holds t, among those
// still held (from the Retain time on).
func (s *Stream) Holding(wk int, t int64) (Activity, bool) { return s.b.holding(wk, t) }

// Progress adds an instant at which worker wk finished items (only the
// progress worker's count). They may come out of order by up to
// ProgressSlackNs.
func (s *Stream) Progress(wk int, t int64) {
	if wk != s.check.l.ProgressWorker || !s.check.progressOn() {
		return
	}
	s.newest = max(s.newest, t)
	s.pushProgress(t)
	for len(s.pending) > 0 && s.pending[0] < s.newest-ProgressSlackNs {
		s.check.points.add(s.popProgress())
	}
}

// build analyses every window that can be built now.
func (s *Stream) build() {
	t0 := time.Now()
	s.startRules()
	for s.b.Next(&s.w) {
		s.analyse(&s.w)
	}
	s.graphTime += time.Since(t0)
}

// startRules starts the progress rules once their span's start is known:
// every worker's first activity, and the first send (no transfer sent
// before it is still to come) or that there is none.
func (s *Stream) startRules() {
	if s.known {
		return
	}
	t0 := int64(math.MaxInt64)
	for wk, f := range s.b.first {
		if f == math.MaxInt64 && !s.b.done[wk] {
			return
		}
		t0 = min(t0, f)
	}
	c := s.check
	if !s.b.xdone && (c.s0 == math.MaxInt64 || s.b.floor < c.s0) {
		return
	}
	s.known = true
	c.known(t0, s.b.xdone && c.s0 > c.s1)
}

func (s *Stream) analyse(w *Window) {
	r := Summarize(&s.tr, w)
	s.rep.Ambiguous += r.Ambiguous
	if s.k > 0 {
		if h := KHops(&s.tr, w, s.k); len(h) > 0 {
			s.rep.KHops = append(s.rep.KHops, WindowHops{Window: w.Index, Hops: h})
		}
	}
	s.rep.Windows = append(s.rep.Windows, r)
}

// Close says that everything is in, analyses the windows left and
// returns the report.
func (s *Stream) Close() *Report {
	s.b.finish()
	s.build()
	for len(s.pending) > 0 {
		s.check.points.add(s.popProgress())
	}
	rep := s.rep
	rep.sumWindows()
	v := s.check.close()
	// In time order; ties in a fixed order, whatever order things came in.
	slices.SortFunc(v, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.FromNs, b.FromNs), cmp.Compare(a.Invariant, b.Invariant), cmp.Compare(a.Worker, b.Worker),
			cmp.Compare(a.ToNs, b.ToNs), cmp.Compare(a.ValueNs, b.ValueNs))
	})
	rep.Violations = append(rep.Violations, v...)
	rep.Late = s.b.late
	rep.Elapsed = time.Since(s.started).Seconds()
	rep.GraphSeconds = s.graphTime.Seconds()
	if rep.GraphSeconds > 0 {
		rep.EventsPerSec = float64(rep.Events) / rep.GraphSeconds
	}
	return rep
}

func (s *Stream) pushProgress(t int64) {
	s.pending = append(s.pending, t)
	for i := len(s.pending) - 1; i > 0; {
		p := (i - 1) / 2
		if s.pending[p] <= s.pending[i] {
			break
		}
		s.pending[p], s.pending[i] = s.pending[i], s.pending[p]
		i = p
	}
}

func (s *Stream) popProgress() int64 {
	h := s.pending
	out, n := h[0], len(h)-1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && h[l] < h[m] {
			m = l
		}
		if r := l + 1; r < n && h[r] < h[m] {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	s.pending = h
	return out
}
