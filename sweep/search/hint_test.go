package search

import (
	"context"
	"math"
	"testing"

	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/servicerate"
)

// The hint jumps to 120% of the smallest limit as soon as a passing
// trial's estimates converged (the estimate trial, or a later ramp pass
// when the stages were mostly idle there): that trial overloads the
// pipeline, and what it achieved places the next probe just below the
// capacity. A jump that passes ramps on by at most 1.25; one that fails
// while keeping up steps down from it; a full-length estimate trial that
// passed is the ramp's first pass, not run twice. Every case reaches the
// answer, and in fewer trials than the plain search from the same start
// whenever an estimate converged.
func TestFastHint(t *testing.T) {
	const limit = 104e3
	for _, tc := range []struct {
		name      string
		short     bool               // the estimate trial ran shorter than the plan
		converges func(float64) bool // the estimates converged in a trial at this rate
		estimate  float64            // the limit they give
		keepsUp   bool               // failing trials achieve their rate (they fail on lateness)
		want      []float64          // the first rates tried
		busyAt    float64            // >0: the consumer is busy rate/busyAt of the window (no estimate needed)
		fewer     bool               // fewer trials than the plain search
	}{
		{"converged in the estimate trial", true, func(float64) bool { return true }, limit, false,
			[]float64{10e3, 1.2 * limit, 100e3 * (1 - 0.01/3)}, 0, true},
		{"converged, the jump fails keeping up", true, func(float64) bool { return true }, 85e3, true,
			[]float64{10e3, 1.2 * 85e3, 1.2 * 85e3 / 1.25}, 0, true},
		{"converged at the second ramp step", true, func(r float64) bool { return r >= 20e3 }, limit, false,
			[]float64{10e3, 10e3, 20e3, 1.2 * limit}, 0, true},
		{"full-length estimate trial counts as the first pass", false, func(r float64) bool { return r >= 20e3 }, limit, false,
			[]float64{10e3, 20e3, 1.2 * limit}, 0, true},
		{"an estimate below the rate that passed: ramp by 1.25", true, func(r float64) bool { return r >= 20e3 }, 15e3, false,
			[]float64{10e3, 10e3, 20e3, 25e3, 31.25e3}, 0, false},
		{"never converged: the plain ramp", true, func(float64) bool { return false }, limit, false,
			[]float64{10e3, 10e3, 20e3, 40e3, 80e3, 160e3}, 0, false},
		// Nothing converged, but the consumer was busy 12.5% of the window
		// at 10 k: busy time says 80 k (biased low, as at low load): 120%
		// of it passes, then by 1.25.
		{"nothing converged, the window's busy time", false, func(float64) bool { return false }, limit, false,
			[]float64{10e3, 96e3, 120e3}, 80e3, true},
		{"busy under 5%: no jump", false, func(float64) bool { return false }, limit, false,
			[]float64{10e3, 20e3, 40e3, 80e3}, 1e6, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			searchWith := func(hint string) ([]float64, *rundir.Result) {
				sys := newSystem(100e3, 0, 0, 1)
				sys.keepsUp = tc.keepsUp
				var rates []float64
				run := func(ctx context.Context, r float64, purpose string) (rundir.Trial, error) {
					rates = append(rates, r)
					tr, err := sys.run(ctx, r, purpose)
					tr.Short = purpose == rundir.PurposeEstimate && tc.short
					if tc.busyAt > 0 {
						tr.Busy = map[string]float64{"receiver0/consumer": r / tc.busyAt, "receiver0/lane0": 0.01}
					}
					if tr.Verdict.Pass && tc.converges(r) {
						tr.NextLimit = &rundir.NextLimit{Limit: servicerate.Limit{Stage: "receiver0/consumer", Method: servicerate.MethodBusyTime, TuplesPerS: tc.estimate}}
					}
					return tr, err
				}
				res, err := Fast(context.Background(), FastPlan{Start: 10e3, Factor: 2, Precision: 0.01, Hint: hint}, run)
				if err != nil {
					t.Fatal(err)
				}
				if res.LastPass < 99e3 || res.LastPass > 100e3 || res.Precision() > 0.01 || res.Stopped != "" {
					t.Fatalf("hint %q: answer [%v, %v) after %v (%s)", hint, res.LastPass, res.FirstFail, rates, res.Stopped)
				}
				return rates, res
			}
			rates, res := searchWith(HintServiceRate)
			if len(rates) < len(tc.want) || res.Hint == "" {
				t.Fatalf("rates tried %v, want %v first (hint %q)", rates, tc.want, res.Hint)
			}
			for i, w := range tc.want {
				if math.Abs(rates[i]-w) > 1 {
					t.Fatalf("rates tried %v, want %v first", rates, tc.want)
				}
			}
			if plain, _ := searchWith(""); tc.fewer && len(rates) >= len(plain) {
				t.Fatalf("%d trials with the hint %v, %d without %v", len(rates), rates, len(plain), plain)
			}
		})
	}
}

// An answer far below what its own stages estimate is tested once more,
// 25% above the first failure: a busy stretch of the host that failed the
// trials above the answer is caught (the recheck passes, its repeats
// too, and the failures below it pass their repeats: the answer's spread
// says the outcomes varied that far); when the failure below holds in
// every repeat while the recheck passes in every one, the capacity moved
// (contradicted); a limit the estimates do not see stands (the recheck
// fails), and an answer the estimates agree with costs no extra trial.
func TestFastRechecksAnAnswerItsEstimatesDoubt(t *testing.T) {
	for _, tc := range []struct {
		name         string
		busyFrom     int     // from this trial (1-based; 0: never) until the recheck the host was busy: 40% capacity
		capacity     float64 // the real capacity (the estimates say 100k)
		resonance    bool    // rates between 40 k and 50 k fail whether busy or not
		wantRecheck  bool
		contradicted bool
	}{
		{"the estimates agree", 0, 100e3, false, false, false},
		{"a busy host failed the trials above the answer", 3, 100e3, false, true, false},
		{"a failure that holds below a pass that holds", 3, 100e3, true, true, true},
		{"a limit the estimates do not see", 0, 50e3, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, quiet := 0, false
			run := func(_ context.Context, r float64, purpose string) (rundir.Trial, error) {
				n++
				quiet = quiet || purpose == rundir.PurposeRecheck
				c := tc.capacity
				if tc.busyFrom > 0 && n >= tc.busyFrom && !quiet {
					c = 40e3
				}
				pass := r <= c && !(tc.resonance && r > 40e3 && r < 50e3)
				tr := rundir.Trial{Achieved: math.Min(r, c), Verdict: rundir.Verdict{Pass: pass}}
				// The repeats' estimates did not converge: the answer's
				// other pass has them.
				if tr.Verdict.Pass && purpose != rundir.PurposeRepeat {
					tr.NextLimit = &rundir.NextLimit{Limit: servicerate.Limit{Stage: "receiver0/consumer", Method: servicerate.MethodBusyTime, TuplesPerS: 100e3}}
				}
				return tr, nil
			}
			res, err := Fast(context.Background(), FastPlan{Start: 10e3, Factor: 2, Precision: 0.01}, run)
			if err != nil {
				t.Fatal(err)
			}
			// The recheck follows the narrowing, 25% above the lowest
			// failure so far; the boundary repeats come after it.
			var recheck *rundir.Trial
			firstFail := 0.0
			for i, tr := range res.Trials {
				if tr.Purpose == rundir.PurposeRecheck {
					recheck = &res.Trials[i]
					break
				}
				if !tr.Verdict.Pass && (firstFail == 0 || tr.Rate < firstFail) {
					firstFail = tr.Rate
				}
			}
			if got := recheck != nil; got != tc.wantRecheck {
				t.Fatalf("recheck %v, want %v: %+v", got, tc.wantRecheck, res.Trials)
			}
			if tc.wantRecheck && math.Abs(recheck.Rate-ContradictionFactor*firstFail) > 1e-6 {
				t.Fatalf("recheck at %.0f, want %.2f × the first failure %.0f", recheck.Rate, ContradictionFactor, firstFail)
			}
			if got := Contradiction(res) != ""; got != tc.contradicted || res.Stopped != "" {
				t.Fatalf("contradicted %v (%q), want %v; answer [%.0f, %.0f), stopped %q", got, Contradiction(res), tc.contradicted, res.LastPass, res.FirstFail, res.Stopped)
			}
			// A recheck that passed is in the answer's spread either way.
			if tc.wantRecheck && tc.capacity > recheck.Rate && res.Boundary.Spread < recheck.Rate/res.LastPass-1-1e-9 {
				t.Fatalf("the recheck at %.0f passed but the spread is %.2f above %.0f: %s", recheck.Rate, res.Boundary.Spread, res.LastPass, res.Boundary.Statement)
			}
		})
	}
}
