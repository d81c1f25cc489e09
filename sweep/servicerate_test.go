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

// The hint's trial does not count as a pass or a fail; the search starts
// at 95% of its smallest limit and ramps by at most 1.25.
func TestFastHintStartsBelowTheEstimate(t *testing.T) {
	sys := newSystem(100e3, 0, 0, 1)
	var rates []float64
	run := func(ctx context.Context, r float64, purpose string) (Trial, error) {
		rates = append(rates, r)
		tr, err := sys.run(ctx, r, purpose)
		if purpose == PurposeEstimate {
			tr.NextLimit = &NextLimit{Limit: servicerate.Limit{Stage: "receiver0/consumer", Method: servicerate.MethodBusyTime, TuplesPerS: 104e3}}
		}
		return tr, err
	}
	res, err := Fast(context.Background(), FastPlan{Start: 10e3, Precision: 0.01, Hint: HintServiceRate}, run)
	if err != nil {
		t.Fatal(err)
	}
	if rates[0] != 10e3 || math.Abs(rates[1]-0.95*104e3) > 1 || math.Abs(rates[2]-1.25*0.95*104e3) > 1 {
		t.Fatalf("rates tried %v: want the estimate trial at 10k, then 98.8k, then x1.25", rates)
	}
	if res.LastPass < 99e3 || res.LastPass > 100e3 || res.Hint == "" {
		t.Fatalf("answer [%v, %v), hint %q", res.LastPass, res.FirstFail, res.Hint)
	}
	// Without a converged estimate the search starts at --start, and says so.
	res, err = Fast(context.Background(), FastPlan{Start: 10e3, Precision: 0.01, Hint: HintServiceRate}, sys.run)
	if err != nil || res.Trials[1].Rate != 10e3 || res.Hint == "" {
		t.Fatalf("without estimates: second trial at %v, hint %q, err %v", res.Trials[1].Rate, res.Hint, err)
	}
}
