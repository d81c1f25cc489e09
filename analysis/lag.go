package analysis

import (
	"time"

	"github.com/cloudprofiler-go/cp/rundir"
)

// LagFor is the join's lag for a run directory when the user set none:
// DefaultLag, unless the profiled trial was overloaded (it ran above the
// answer, or failed), where tuples queue for as long as the trial ran and
// a lag of 200 ms leaves every later one unmatched (counted "only at" both
// points, as if lost). Then the lag is the trial's length (warm-up and
// window), within what MaxPending holds at the trial's rate (half of it,
// as the join holds up to two lags). A windowed job holds each event
// until its window closes, up to a window and its lateness (shorter than
// the window): the lag is then at least two windows more than DefaultLag.
func LagFor(d *rundir.Dir) time.Duration {
	s := d.Summary
	if s == nil {
		return DefaultLag
	}
	plan := s.PlanFacts()
	if plan.Duration <= 0 {
		return DefaultLag
	}
	least := DefaultLag
	if w := plan.ExpectWindow; w > 0 && w < time.Hour {
		least += 2 * w
	}
	t, ok := s.ProfiledTrial()
	if !ok || t.Rate <= 0 || t.Verdict.Pass && (s.Result.LastPass <= 0 || t.Rate <= s.Result.LastPass) {
		return least
	}
	lag := plan.Duration + plan.Warmup
	if held := time.Duration(float64(MaxPending) / 4 / t.Rate * float64(time.Second)); held < lag {
		lag = held
	}
	return max(lag, least)
}
