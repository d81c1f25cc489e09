package search

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/rundir"
)

// The boundary repeats: a search that converged has run its last pass and
// its first fail once each, and on a shared host either could have gone
// the other way. Both are run again (interleaved, so that a host that
// drifts affects both alike) until each has Runs runs. The answer is the
// highest rate that passed every one of its runs; the rates above it that
// passed some runs and failed others are where the capacity varied
// between runs, and their width is the answer's measured uncertainty,
// printed beside the search's resolution.

// DefaultBoundaryRuns is how many times each boundary rate runs in all
// (the search's trial and the repeats).
const DefaultBoundaryRuns = 3

// Tally counts the judged runs at every rate (not the profiled trial).
func Tally(trials []rundir.Trial) map[float64]rundir.RateRuns {
	out := map[float64]rundir.RateRuns{}
	for _, t := range trials {
		if !t.Judged() || t.Purpose == rundir.PurposeProfile {
			continue
		}
		r := out[t.Rate]
		r.Rate, r.Runs = t.Rate, r.Runs+1
		if t.Verdict.Pass {
			r.Passes++
		}
		out[t.Rate] = r
	}
	return out
}

// lowestFailAbove is the lowest rate above lo that failed every run (0:
// none).
func lowestFailAbove(runs map[float64]rundir.RateRuns, lo float64) float64 {
	hi := 0.0
	for rate, r := range runs {
		if rate > lo && r.AllFailed() && (hi == 0 || rate < hi) {
			hi = rate
		}
	}
	return hi
}

// highestPassBelow is the highest rate below hi that passed every run (0:
// none).
func highestPassBelow(runs map[float64]rundir.RateRuns, hi float64) float64 {
	lo := 0.0
	for rate, r := range runs {
		if rate < hi && r.AllPassed() && rate > lo {
			lo = rate
		}
	}
	return lo
}

// highestPassAbove is the highest rate above lo that passed any run (lo:
// none did).
func highestPassAbove(runs map[float64]rundir.RateRuns, lo float64) float64 {
	top := lo
	for rate, r := range runs {
		if rate > top && r.Passes > 0 {
			top = rate
		}
	}
	return top
}

// firstFailure is the lowest rate above lo that failed any run (0: none).
func firstFailure(runs map[float64]rundir.RateRuns, lo float64) float64 {
	out := 0.0
	for rate, r := range runs {
		if rate > lo && r.Passes < r.Runs && (out == 0 || rate < out) {
			out = rate
		}
	}
	return out
}

// contradicting are the rates at or above ContradictionFactor × fail that
// passed every run. With fail the first failure above the answer they are
// what the boundary repeats (their repeats say whether the pass holds);
// with fail a rate that failed every run (contradiction) a pass that held
// says the capacity moved. A rate below them that passed some runs is
// variability, measured in the answer's spread, not a contradiction.
func contradicting(runs map[float64]rundir.RateRuns, fail float64) []float64 {
	var out []float64
	for rate, r := range runs {
		if fail > 0 && rate >= ContradictionFactor*fail && r.AllPassed() {
			out = append(out, rate)
		}
	}
	sort.Float64s(out)
	return out
}

// settle repeats the boundary: the answer candidate lo (the last pass)
// and hi (the lowest rate above it that failed every run, up to the
// search's first fail) until each has Runs runs, and every pass that
// contradicts the boundary too. A candidate that fails a repeat is not
// the answer: the next candidate is the highest rate below it that
// passed every run when that is as near as a step down, or a step down
// from it (doubled after a rate that failed outright), or just below what
// the failing repeat achieved when it fell behind (it measured the
// capacity then). The result's interval and Boundary are filled in
// whatever ends it (the trial limit too).
func (f *fastSearch) settle() (err error) {
	res, p := f.res, f.p
	if res.LastPass <= 0 || res.FirstFail <= 0 {
		return nil
	}
	lo, firstFail := res.LastPass, res.FirstFail
	b := &rundir.Boundary{Runs: p.Runs, Resolution: res.Precision()}
	defer func() { f.fill(b, lo) }()
	step, boundStep := max(2*p.Precision, b.Resolution), p.Precision
	for {
		runs := Tally(res.Trials)
		at := runs[lo]
		if at.Runs > 0 && !at.AllPassed() { // lo failed a repeat: move down
			next := lo * (1 - step)
			if below := highestPassBelow(runs, lo); below >= lo*(1-2*step) {
				next = below // a rate that passed already, as near: fewer runs to add
			}
			if h := f.pr.hintProbe(); h > 0 && h < lo { // a repeat that fell behind measured the capacity now
				next = h
			}
			if at.Passes == 0 { // failed outright: the capacity is well below, step faster
				step *= 2
			}
			if next < p.Min {
				res.Stopped = fmt.Sprintf("no rate passed every one of its runs down to %s (the floor is %s: --min-rate)", numfmt.Rate(lo), numfmt.Rate(p.Min))
				lo = 0
				return nil
			}
			lo = next
			continue
		}
		need := f.needed(runs, lo, firstFail, boundStep)
		if len(need) == 0 {
			return nil
		}
		// Interleaved: the rate with the fewest runs goes first (lo before
		// hi on a tie), so a drifting host affects both alike.
		next := need[0]
		for _, r := range need[1:] {
			if runs[r].Runs < runs[next].Runs {
				next = r
			}
		}
		purpose := rundir.PurposeRepeat
		switch {
		case runs[next].Runs > 0:
		case next > lo:
			purpose = rundir.PurposeBound
		default:
			purpose = rundir.PurposeCandidate
		}
		t, err := f.try(next, purpose)
		if err != nil {
			return err
		}
		if t.Verdict.Pass {
			f.pr.passed(next)
			if purpose == rundir.PurposeBound {
				boundStep *= 2
			}
		} else {
			f.pr.failed(next, t.Achieved, rundir.PurposeRepeat)
			if purpose == rundir.PurposeBound {
				boundStep /= 2
			}
		}
	}
}

// needed are the rates the boundary still has to run: the answer
// candidate lo and the first fail to their runs, the passes that would
// contradict them, or else a bound just above the rates whose outcomes
// varied (none: the boundary is settled).
func (f *fastSearch) needed(runs map[float64]rundir.RateRuns, lo, firstFail, boundStep float64) []float64 {
	p := f.p
	// The first fail is repeated while it fails; once a repeat passed it
	// is a rate where outcomes vary, measured, and the next failure above
	// (from the search) bounds the answer as it ran.
	hi := lowestFailAbove(runs, lo)
	var need []float64
	if runs[lo].Runs < p.Runs {
		need = append(need, lo)
	}
	if hi > 0 && hi <= firstFail && runs[hi].Runs < p.Runs {
		need = append(need, hi)
	}
	contra := contradicting(runs, firstFailure(runs, lo))
	for _, c := range contra {
		if runs[c].Runs < p.Runs {
			need = append(need, c)
		}
	}
	if len(need) > 0 || len(contra) > 0 { // a contradiction is the verdict then: no bound is needed
		return need
	}
	// Outcomes varied above the answer, and the nearest rate that failed
	// every run is far above the highest that passed a run (the first fail
	// passed a repeat; the next failure is the search's overshoot): one run
	// just above says where the variation ends. The probes step up by
	// doubling steps while they pass.
	top := highestPassAbove(runs, lo)
	if top <= lo || (hi > 0 && hi <= top*(1+2*p.Precision)) || (p.Max > 0 && top*(1+boundStep) > p.Max) {
		return nil
	}
	return []float64{top * (1 + boundStep)}
}

// fill sets the result's interval and Boundary from every run, with lo
// the answer the repeats settled on (0: none).
func (f *fastSearch) fill(b *rundir.Boundary, lo float64) {
	res := f.res
	runs := Tally(res.Trials)
	if lo > 0 && !runs[lo].AllPassed() {
		// The trials ran out before the candidate ran (or after it failed a
		// repeat): the answer is what did pass every run, never a rate
		// no trial ran at (a sweep once answered 7.078 M/s, never tried).
		lo = highestPassBelow(runs, lo)
	}
	b.Answer, b.Fail, b.Mixed = runs[lo], rundir.RateRuns{}, nil // runs[0] is empty: rates are positive
	top := highestPassAbove(runs, lo)
	if hi := lowestFailAbove(runs, top); hi > 0 {
		b.Fail = runs[hi]
	}
	for rate, r := range runs {
		if rate > lo && r.Passes > 0 {
			b.Mixed = append(b.Mixed, r)
		}
	}
	sort.Slice(b.Mixed, func(i, j int) bool { return b.Mixed[i].Rate < b.Mixed[j].Rate })
	switch {
	case lo <= 0:
	case top > lo:
		b.Spread = top/lo - 1
	case b.Fail.Rate > 0:
		b.Spread = b.Fail.Rate/lo - 1
	}
	b.Reproducible = lo > 0 && b.Answer.Runs >= b.Runs && b.Fail.Runs >= b.Runs && len(b.Mixed) == 0
	res.LastPass, res.FirstFail = lo, b.Fail.Rate
	b.Statement = boundaryStatement(b)
	res.Boundary = b
}

// statement says the answer with its measured uncertainty and the
// search's resolution, for the CLI, summary.json and the report alike.
func boundaryStatement(b *rundir.Boundary) string {
	if b.Answer.Rate <= 0 {
		return "no rate passed every one of its runs"
	}
	s := fmt.Sprintf("%s, passed %d of %d runs", numfmt.Rate(b.Answer.Rate), b.Answer.Passes, b.Answer.Runs)
	if b.Answer.Runs < b.Runs {
		s += fmt.Sprintf(" (fewer than the %d asked: the trials ran out)", b.Runs)
	}
	fail := ""
	if b.Fail.Rate > 0 {
		fail = fmt.Sprintf("%s failed %d of %d", numfmt.Rate(b.Fail.Rate), b.Fail.Runs, b.Fail.Runs)
	}
	if len(b.Mixed) == 0 {
		if fail != "" {
			s += fmt.Sprintf("; %s: reproducible to +%s, the search's resolution", fail, pct(b.Spread))
		}
		return s
	}
	var m, few []string
	var lastFew rundir.RateRuns
	for _, r := range b.Mixed {
		if r.AllPassed() {
			// It passed every run it had, but had fewer than an answer
			// needs: a reader must not take it for an answer above the
			// answer. Such rates are said together.
			few, lastFew = append(few, fmt.Sprintf("%s (%d of %d)", numfmt.Rate(r.Rate), r.Passes, r.Runs)), r
			continue
		}
		m = append(m, fmt.Sprintf("%s passed %d of %d", numfmt.Rate(r.Rate), r.Passes, r.Runs))
	}
	switch {
	case len(few) == 1:
		m = append(m, fmt.Sprintf("%s passed %d of %d, too few runs to be an answer (%d of %d needed)", numfmt.Rate(lastFew.Rate), lastFew.Passes, lastFew.Runs, b.Runs, b.Runs))
	case len(few) > 1:
		m = append(m, fmt.Sprintf("%s passed too few runs to be an answer (%d of %d needed)", strings.Join(few, " and "), b.Runs, b.Runs))
	}
	s += fmt.Sprintf("; outcomes varied up to +%s above it (%s)", pct(b.Spread), strings.Join(m, ", "))
	if fail != "" {
		s += "; " + fail
	}
	return s + fmt.Sprintf("; search resolution %s", pct(b.Resolution))
}

// pct prints a share as a percentage with two significant digits.
func pct(x float64) string {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return "?"
	}
	if 100*x >= 10 {
		return fmt.Sprintf("%.0f%%", 100*x)
	}
	return fmt.Sprintf("%.2g%%", 100*x)
}

// Contradiction finds a rate at or above ContradictionFactor × a rate
// above the answer that failed every one of its judged runs, that passed
// every one of its own (the fast search repeats such a rate first: one
// whose repeats failed, or a failure below it that passed a repeat, is
// variability, measured in the answer's spread, not a contradiction).
func Contradiction(r *rundir.Result) string {
	runs := Tally(r.Trials)
	first := lowestFailAbove(runs, r.LastPass)
	rates := contradicting(runs, first)
	if len(rates) == 0 {
		return ""
	}
	top := runs[rates[len(rates)-1]]
	var ns []string
	for _, t := range r.Trials {
		if t.Rate == top.Rate && t.Judged() && t.Purpose != rundir.PurposeProfile {
			ns = append(ns, fmt.Sprint(t.N))
		}
	}
	return fmt.Sprintf("%s passed %d of %d runs (trial %s), %.0f%% above %s, which failed %d of %d: the capacity moved during the sweep (a busy host, a neighbour, a stall); run it again",
		numfmt.Rate(top.Rate), top.Passes, top.Runs, strings.Join(ns, ", "), 100*(top.Rate/first-1), numfmt.Rate(first), runs[first].Runs, runs[first].Runs)
}
