package sweep

import (
	"context"
	"math"
	"testing"

	"github.com/cloudprofiler-go/cp/servicerate"
	"github.com/cloudprofiler-go/cp/stage"
)

func rate(stageName string, kind stage.Kind, method string, v float64, tuples uint64) servicerate.Rate {
	r := servicerate.Rate{Stage: stageName, Kind: kind, Method: method, Tuples: tuples, Status: servicerate.NotConverged}
	if v > 0 {
		r.TuplesPerS, r.Status, r.Converged = &v, servicerate.Converged, true
	}
	return r
}

// The next limit is the smallest pipeline limit: a stage's estimate over
// its share of its kind's traffic; estimates that did not converge never
// count.
func TestNextLimitWeighsShares(t *testing.T) {
	rates := []servicerate.Rate{
		rate("receiver0/lane0", stage.Lane, servicerate.MethodRaftLib, 0, 500),
		rate("receiver0/lane0", stage.Lane, servicerate.MethodBusyTime, 60e3, 500), // half the traffic: limits at 120k
		rate("receiver0/lane1", stage.Lane, servicerate.MethodBusyTime, 70e3, 500),
		rate("receiver0/consumer", stage.Consumer, servicerate.MethodRaftLib, 100e3, 1000),
		rate("receiver0/consumer", stage.Consumer, servicerate.MethodBusyTime, 90e3, 1000),
	}
	n := nextLimit(rates, 80e3)
	if n == nil || n.Stage != "receiver0/consumer" || n.Method != servicerate.MethodBusyTime || n.TuplesPerS != 90e3 || n.Other != 100e3 {
		t.Fatalf("next limit %+v, want the consumer's busy_time 90k (raftlib 100k)", n)
	}
	if math.Abs(n.Headroom-0.125) > 1e-9 {
		t.Fatalf("headroom %v, want 0.125 over 80k", n.Headroom)
	}
	if got := nextLimitLine(Trial{NextLimit: n}); got == "" {
		t.Fatal("no progress line")
	}
	none := []servicerate.Rate{rate("receiver0/consumer", stage.Consumer, servicerate.MethodRaftLib, 0, 10)}
	if n := nextLimit(none, 1e3); n != nil {
		t.Fatalf("a limit %+v from estimates that did not converge", n)
	}
	if l := nextLimitLine(Trial{ServiceRates: none}); l == "" {
		t.Fatal("no line saying nothing converged")
	}
}

// The hint jumps to 95% of the smallest limit as soon as a passing trial's
// estimates converged (the estimate trial, or a later ramp pass when the
// stages were mostly idle there), then ramps by at most 1.25; a full-length
// estimate trial that passed is the ramp's first pass, not run twice.
func TestFastHint(t *testing.T) {
	const limit = 104e3
	for _, tc := range []struct {
		name      string
		short     bool               // the estimate trial ran shorter than the plan
		converges func(float64) bool // the estimates converged in a trial at this rate
		estimate  float64            // the limit they give
		want      []float64          // the first rates tried
		busyAt    float64            // >0: the consumer is busy rate/busyAt of the window (no estimate needed)
	}{
		{"converged in the estimate trial", true, func(float64) bool { return true }, limit,
			[]float64{10e3, 0.95 * limit, 1.25 * 0.95 * limit}, 0},
		{"converged at the second ramp step", true, func(r float64) bool { return r >= 20e3 }, limit,
			[]float64{10e3, 10e3, 20e3, 0.95 * limit}, 0},
		{"full-length estimate trial counts as the first pass", false, func(r float64) bool { return r >= 20e3 }, limit,
			[]float64{10e3, 20e3, 0.95 * limit}, 0},
		{"an estimate below the rate that passed: ramp by 1.25", true, func(r float64) bool { return r >= 20e3 }, 15e3,
			[]float64{10e3, 10e3, 20e3, 25e3, 31.25e3}, 0},
		{"never converged: the plain ramp", true, func(float64) bool { return false }, limit,
			[]float64{10e3, 10e3, 20e3, 40e3, 80e3, 160e3}, 0},
		// Nothing converged, but the consumer was busy 12.5% of the window
		// at 10 k: busy time says 80 k (biased low, as at low load): 95%
		// of it, then by 1.25.
		{"nothing converged, the window's busy time", false, func(float64) bool { return false }, limit,
			[]float64{10e3, 76e3, 95e3}, 80e3},
		{"busy under 5%: no jump", false, func(float64) bool { return false }, limit,
			[]float64{10e3, 20e3, 40e3, 80e3}, 1e6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys := newSystem(100e3, 0, 0, 1)
			var rates []float64
			run := func(ctx context.Context, r float64, purpose string) (Trial, error) {
				rates = append(rates, r)
				tr, err := sys.run(ctx, r, purpose)
				tr.Short = purpose == PurposeEstimate && tc.short
				if tc.busyAt > 0 {
					tr.Busy = map[string]float64{"receiver0/consumer": r / tc.busyAt, "receiver0/lane0": 0.01}
				}
				if tr.Verdict.Pass && tc.converges(r) {
					tr.NextLimit = &NextLimit{Limit: servicerate.Limit{Stage: "receiver0/consumer", Method: servicerate.MethodBusyTime, TuplesPerS: tc.estimate}}
				}
				return tr, err
			}
			res, err := Fast(context.Background(), FastPlan{Start: 10e3, Precision: 0.01, Hint: HintServiceRate}, run)
			if err != nil {
				t.Fatal(err)
			}
			if len(rates) < len(tc.want) {
				t.Fatalf("rates tried %v, want %v first", rates, tc.want)
			}
			for i, w := range tc.want {
				if math.Abs(rates[i]-w) > 1 {
					t.Fatalf("rates tried %v, want %v first", rates, tc.want)
				}
			}
			if res.LastPass < 99e3 || res.LastPass > 100e3 || res.Precision() > 0.01 || res.Hint == "" {
				t.Fatalf("answer [%v, %v), hint %q", res.LastPass, res.FirstFail, res.Hint)
			}
		})
	}
}
