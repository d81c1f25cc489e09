package search

import (
	"math"

	"github.com/cloudprofiler-go/cp/rundir"
)

// prober chooses the rates that narrow [lo, hi). It learns from failing
// trials: one that could not keep up achieved about the system's capacity
// (a hint, probed a third of the precision below, where it should pass);
// one placed on evidence that the capacity is near (a hint, a closing
// step, a repeat) that kept up but failed another rule (lateness,
// backlog) says the capacity is just below its rate, so the next probes
// gallop down from it in doubling steps of the precision. When the
// interval is nearly closed, a "closing" probe at lo·(1+0.9p) finishes in
// one step if it fails. Otherwise: the geometric midpoint.
type prober struct {
	precision float64
	hint      float64 // rate achieved by the latest failing trial that fell behind
	gallop    float64 // >0: consecutive kept-up failures, as a step multiplier
	near      bool    // the capacity is known to be just below hi: gallop however wide the interval
}

// failed learns from a failing trial at rate, probed for purpose.
func (pr *prober) failed(rate, achieved float64, purpose string) {
	// Only a trial that fell well behind measured the capacity; near it,
	// trials fail on lateness or backlog while achieving ~99% of their rate.
	if achieved > 0 && achieved < rate*(1-4*pr.precision) {
		pr.hint, pr.gallop, pr.near = achieved, 0, false
		return
	}
	pr.hint = 0
	pr.gallop = math.Max(1, 2*pr.gallop)
	// A probe placed on evidence that the capacity is near (a hint, a
	// closing step, a gallop, or a rate that passed before) that fails
	// while keeping up puts the capacity right below it.
	pr.near = pr.near || purpose != rundir.PurposeRamp && purpose != rundir.PurposeBisect
}

// passed learns from a passing trial at rate: a pass clearly above the
// hint disproves it (under heavy overload on a shared machine the achieved
// rate underestimates the capacity).
func (pr *prober) passed(rate float64) {
	pr.gallop, pr.near = 0, false
	if rate > pr.hint*(1+pr.precision) {
		pr.hint = 0
	}
}

// hintProbe is the rate just below what the latest failing trial that fell
// behind achieved, where it should pass (0: no such trial).
func (pr *prober) hintProbe() float64 { return pr.hint * (1 - pr.precision/3) }

func (pr *prober) next(lo, hi float64) (float64, string) {
	p := pr.precision
	closing := lo * (1 + 0.9*p)
	if h := pr.hint; h > 0 {
		if below := pr.hintProbe(); below > lo*(1+p/4) && below < hi {
			return below, rundir.PurposeHint
		}
		if h <= lo*(1+p) && closing < hi { // the capacity is just above lo
			return closing, rundir.PurposeClose
		}
	}
	// Only a failure placed on evidence says the capacity is just below
	// it: on loopback trials at 1.4× the capacity fail on lateness while
	// keeping up too (BENCHMARKS.md, sixteenth session), so a narrow
	// interval alone is no reason to gallop (it cost 0.5 trials a sweep
	// more than halving on a simulated host).
	if pr.gallop > 0 && pr.near {
		if g := hi * (1 - pr.gallop*p); g > lo*(1+p/4) {
			return g, rundir.PurposeGallop
		}
	}
	if closing < hi && hi <= lo*(1+4*p) {
		return closing, rundir.PurposeClose
	}
	return math.Sqrt(lo * hi), rundir.PurposeBisect
}
