package compare

import (
	"fmt"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
)

// Change is one figure of a run beside the first run's: the difference,
// and whether it is larger than the spread that the two runs' own repeats
// show. A difference inside that spread is noise, whatever its size.
type Change struct {
	// Run is the run compared with run 1 (2, 3, ...); Figure is "answer",
	// "latency p50" or "latency p99".
	Run    int    `json:"run"`
	Figure string `json:"figure"`
	// From is run 1's figure and To this run's: tuples/s for the answer,
	// nanoseconds for a latency.
	From float64 `json:"from"`
	To   float64 `json:"to"`
	// Difference is To / From - 1 (0.05: 5% higher).
	Difference float64 `json:"difference"`
	// Spread is the larger of the two runs' own relative spreads: for the
	// answer, the width above it in which its boundary's repeats varied
	// (or, with no repeats, the interval to its first failing rate); for
	// a latency, the worst repeat at the answer over the best, minus 1.
	Spread float64 `json:"spread"`
	// FromRange and ToRange are the two runs' own ranges of the figure
	// (low, high), judged: whether they overlap is the verdict.
	FromRange [2]float64 `json:"from_range,omitzero"`
	ToRange   [2]float64 `json:"to_range,omitzero"`
	// Exceeds says that the runs' own ranges do not overlap: a change, not
	// noise. Judged is false when the figure cannot be judged, and Why says
	// why (a run without repeats at its answer, an answer not to be used).
	Exceeds bool   `json:"exceeds"`
	Judged  bool   `json:"judged"`
	Why     string `json:"why,omitempty"`
	// Statement is the line the text prints.
	Statement string `json:"statement"`
}

// ChangedFigures counts the figures judged a change (Exceeds).
func (c *Comparison) ChangedFigures() int {
	n := 0
	for _, ch := range c.Changes {
		if ch.Judged && ch.Exceeds {
			n++
		}
	}
	return n
}

// changes compares every run after the first with the first.
func changes(runs []Run) []Change {
	var out []Change
	if len(runs) < 2 {
		return out
	}
	base := runs[0]
	for i, r := range runs[1:] {
		out = append(out, answerChange(base, r, i+2))
		out = append(out, latencyChanges(base, r, i+2)...)
	}
	return out
}

// span is a figure's range in one run: what its repeats showed.
type span struct{ lo, hi float64 }

func (a span) overlaps(b span) bool { return a.lo <= b.hi && b.lo <= a.hi }

// relative is the span's width over its low end.
func (a span) relative() float64 {
	if a.lo <= 0 {
		return 0
	}
	return a.hi/a.lo - 1
}

// answerSpan is where a run's answer lies: from the answer up to the
// highest rate at which its repeats still varied, or, with no repeats, up
// to its first failing rate (ok false: no upper end).
func answerSpan(r Run) (span, bool) {
	switch {
	case r.Boundary:
		return span{r.LastPass, r.LastPass * (1 + r.Spread)}, true
	case r.FirstFail > 0:
		return span{r.LastPass, r.FirstFail}, true
	}
	return span{}, false
}

func answerChange(base, r Run, n int) Change {
	c := Change{Run: n, Figure: "answer", From: base.LastPass, To: r.LastPass}
	switch {
	case base.LastPass <= 0 || r.LastPass <= 0:
		c.Why = "a run has no answer"
	case base.Trust != "" || r.Trust != "":
		c.Why = "a run's answer is not to be used"
	}
	if c.Why == "" {
		a, okA := answerSpan(base)
		b, okB := answerSpan(r)
		c.Difference = r.LastPass/base.LastPass - 1
		if okA && okB {
			c.judge(a, b)
		} else {
			c.Why = "a run failed no rate, so its answer has no upper end"
		}
	}
	c.Statement = changeStatement(c, numfmt.Rate)
	return c
}

func latencyChanges(base, r Run, n int) []Change {
	var out []Change
	for _, f := range []struct {
		name string
		// worst and best: a run's percentile at its answer, over its repeats
		worst, best func(Run) int64
	}{
		{"latency p50", func(r Run) int64 { return r.LatencyP50Ns }, func(r Run) int64 { return r.bestP50 }},
		{"latency p99", func(r Run) int64 { return r.LatencyP99Ns }, func(r Run) int64 { return r.bestP99 }},
	} {
		from, to := f.worst(base), f.worst(r)
		c := Change{Run: n, Figure: f.name, From: float64(from), To: float64(to)}
		switch {
		case from <= 0 || to <= 0:
			c.Why = "a run recorded no latency at its answer"
		case base.latencyRuns < 2 || r.latencyRuns < 2:
			c.Why = "a run measured its answer once: one run shows no spread"
		case f.best(base) <= 0 || f.best(r) <= 0:
			c.Why = "a run directory keeps no best run (written before compare judged spreads)"
		}
		if from > 0 && to > 0 {
			c.Difference = float64(to)/float64(from) - 1
		}
		if c.Why == "" {
			c.judge(span{float64(f.best(base)), float64(from)}, span{float64(f.best(r)), float64(to)})
		}
		c.Statement = changeStatement(c, numfmt.Ns)
		if c.Why == "" && base.latencyRate != r.latencyRate {
			c.Statement += fmt.Sprintf(" (at the answers, %s and %s: latency moves with the rate)", numfmt.Rate(base.latencyRate), numfmt.Rate(r.latencyRate))
		}
		out = append(out, c)
	}
	return out
}

// judge decides a change once, from the two runs' ranges a (run 1's)
// and b: a change when they do not overlap.
func (c *Change) judge(a, b span) {
	c.Judged, c.Spread, c.Exceeds = true, max(a.relative(), b.relative()), !a.overlaps(b)
	c.FromRange, c.ToRange = [2]float64{a.lo, a.hi}, [2]float64{b.lo, b.hi}
}

// changeStatement says a change in a line, from the verdict and the
// ranges it was judged by: "run 2's answer: 72.00 k/s against 97.64 k/s,
// -26.3%: a CHANGE: the runs' ranges do not overlap (run 1 97.64 k/s to
// 130.9 k/s, run 2 72.00 k/s to 80.00 k/s)".
func changeStatement(c Change, unit func(float64) string) string {
	s := fmt.Sprintf("run %d's %s: %s against %s", c.Run, c.Figure, orNone(c.To, unit), orNone(c.From, unit))
	if c.From > 0 && c.To > 0 {
		s += fmt.Sprintf(", %+.1f%%", 100*c.Difference)
	}
	if !c.Judged {
		return s + ": not judged, " + c.Why
	}
	ranges := fmt.Sprintf("(run 1 %s to %s, run %d %s to %s)", unit(c.FromRange[0]), unit(c.FromRange[1]), c.Run, unit(c.ToRange[0]), unit(c.ToRange[1]))
	if c.Exceeds {
		return s + ": a CHANGE: the runs' own ranges do not overlap " + ranges
	}
	return s + ": noise: the runs' own ranges overlap " + ranges
}

func orNone(v float64, unit func(float64) string) string {
	if v <= 0 {
		return "none"
	}
	return unit(v)
}
