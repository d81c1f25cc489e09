package activity

import (
	"fmt"
	"math"
	"time"
)

// checker tests the invariants as a trace goes by: messages and
// activities one at a time, progress in time order. A message's limit
// fires only when the lower bound of its time (RecvNs − SentNs − ErrNs) is
// above it: the clocks' error can never raise a false alarm. Ambiguous
// messages are never over a positive limit by their lower bound.
type checker struct {
	l       Limits
	workers []string
	out     []Violation
	// s0, s1: the first and last send of a message (s0 > s1: none yet).
	s0, s1 int64
	// points is progress from the progress worker's finished items,
	// ends from the ends of its busy activities: the first is used when
	// the trace has it.
	points, ends progressRule
}

func newChecker(workers []string, l Limits) *checker {
	c := &checker{l: l, workers: workers, s0: math.MaxInt64, s1: math.MinInt64}
	c.points.l, c.ends.l = l, l
	if l.ProgressWorker >= 0 && l.ProgressWorker < len(workers) {
		c.points.name, c.ends.name = workers[l.ProgressWorker], workers[l.ProgressWorker]
	}
	return c
}

func (c *checker) progressOn() bool {
	return c.l.ProgressWorker >= 0 && c.l.ProgressWorker < len(c.workers) && (c.l.ProgressMaxNs > 0 || c.l.EveryWindow)
}

func (c *checker) transfer(x Transfer) {
	c.s0, c.s1 = min(c.s0, x.SentNs), max(c.s1, x.SentNs)
	if l := c.l.MessageMaxNs; l > 0 {
		if lo := x.RecvNs - x.SentNs - x.ErrNs; lo > l {
			c.out = append(c.out, Violation{Invariant: "message-max", Worker: c.workers[x.From] + " -> " + c.workers[x.To],
				FromNs: x.SentNs, ToNs: x.RecvNs, ValueNs: lo, LimitNs: l,
				Detail: fmt.Sprintf("a bucket took at least %d ns (%d ± %d)", lo, x.RecvNs-x.SentNs, x.ErrNs)})
		}
	}
}

func (c *checker) activity(wk int, a Activity) {
	if l := c.l.OperatorMaxNs; l > 0 && processingKind(a.Kind) && a.EndNs-a.StartNs > l {
		c.out = append(c.out, Violation{Invariant: "operator-max", Worker: c.workers[wk], FromNs: a.StartNs, ToNs: a.EndNs,
			ValueNs: a.EndNs - a.StartNs, LimitNs: l, Detail: fmt.Sprintf("one %s activity lasted %s", a.Kind, time.Duration(a.EndNs-a.StartNs))})
	}
	if wk == c.l.ProgressWorker && c.progressOn() && processingKind(a.Kind) && a.Items > 0 {
		c.ends.add(a.EndNs)
	}
}

// known starts the progress rules once the first send (or that there is
// none) and the first activity of every worker (t0) are known.
func (c *checker) known(t0 int64, noMessages bool) {
	if !c.progressOn() {
		return
	}
	c.points.start(c.s0, t0, noMessages)
	c.ends.start(c.s0, t0, noMessages)
}

// close is every violation found, in no particular order.
func (c *checker) close() []Violation {
	if c.progressOn() {
		rule := &c.points
		if rule.events == 0 {
			rule = &c.ends
		}
		c.out = append(c.out, rule.close(c.s0, c.s1)...)
	}
	return c.out
}

// progressRule checks progress on the progress worker. Progress is
// expected only while data enters the pipeline: from the first message
// sent (anywhere) to the last one, or, in a trace without messages, from
// the first progress event to the last. Inside that span no gap between
// progress events (nor from its start to the first, nor from the last to
// its end) may exceed ProgressMaxNs, and each window that begins in it
// needs one. Before the first bucket and after the input stops, a consumer
// idles by design. Events come in time order; those before the span's
// start is known are held (they are the trace's first).
type progressRule struct {
	l    Limits
	name string
	held []int64
	on   bool
	// noMessages: the span is the progress events'; s0 is the first.
	noMessages, spanned bool
	s0, t0              int64 // the span's start, the windows' origin
	events              int
	prev                int64 // the last event after s0 (s0 before one)
	gaps                []Violation
	windows             map[int64]bool // the windows (from t0) with an event
}

func (r *progressRule) add(t int64) {
	r.events++
	if !r.on {
		r.held = append(r.held, t)
		return
	}
	r.process(t)
}

func (r *progressRule) start(s0, t0 int64, noMessages bool) {
	r.on, r.noMessages, r.s0, r.t0, r.prev = true, noMessages, s0, min(t0, s0), s0
	held := r.held
	r.held = nil
	for _, t := range held {
		r.process(t)
	}
}

func (r *progressRule) process(t int64) {
	if r.noMessages && !r.spanned {
		r.s0, r.prev, r.t0, r.spanned = t, t, min(r.t0, t), true // the first event starts the span
	}
	if r.l.EveryWindow && r.l.WindowNs > 0 && r.t0 != math.MaxInt64 {
		if r.windows == nil {
			r.windows = map[int64]bool{}
		}
		r.windows[floorDiv(t-r.t0, r.l.WindowNs)] = true
	}
	if t <= r.s0 {
		return
	}
	r.gap(r.prev, t, "")
	r.prev = t
}

func (r *progressRule) gap(from, to int64, what string) {
	if r.l.ProgressMaxNs > 0 && to-from > r.l.ProgressMaxNs {
		r.gaps = append(r.gaps, Violation{Invariant: "progress-max", Worker: r.name, FromNs: from, ToNs: to, ValueNs: to - from,
			LimitNs: r.l.ProgressMaxNs, Detail: fmt.Sprintf("no progress for %s%s", time.Duration(to-from), what)})
	}
}

// close is the violations once the span's end (the last send, s1) is
// known: gaps that begin after it do not count.
func (r *progressRule) close(s0, s1 int64) []Violation {
	if !r.on {
		r.start(s0, math.MaxInt64, s0 > s1)
	}
	if r.noMessages {
		if r.events == 0 {
			return nil
		}
		s1 = r.prev // the last event
	}
	var out []Violation
	for _, g := range r.gaps {
		if g.FromNs < s1 || g.FromNs == r.s0 { // the first gap starts the span
			out = append(out, g)
		}
	}
	if r.prev < s1 { // no progress since, up to the end of the trace
		r.gaps = r.gaps[:0]
		r.gap(r.prev, s1, " (up to the last bucket sent; none after it)")
		out = append(out, r.gaps...)
	}
	if r.l.EveryWindow && r.l.WindowNs > 0 {
		for w0 := r.t0; w0 < s1; w0 += r.l.WindowNs {
			if w0 >= r.s0 && !r.windows[floorDiv(w0-r.t0, r.l.WindowNs)] {
				out = append(out, Violation{Invariant: "progress-per-window", Worker: r.name, FromNs: w0, ToNs: w0 + r.l.WindowNs,
					LimitNs: r.l.WindowNs, Detail: "no progress event in this window"})
			}
		}
	}
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
