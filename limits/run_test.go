package limits

import (
	"encoding/json"
	"testing"

	"github.com/cloudprofiler-go/cp/rundir"
)

// The service rates' explanation is the smallest consistent next limit
// of the trials that bracket the answer: a black box has a rate only
// where it was backlogged, so a relay's is seen at the first failing
// rate; a limit marked inconsistent and the profiled trial never count.
func TestExplanationsBracketTheAnswer(t *testing.T) {
	const doc = `{"limiting_stage": "sut/stream0", "result": {"last_pass": 298000, "first_fail": 303000, "trials": [
	  {"n": 1, "rate": 200000, "purpose": "ramp", "verdict": {"pass": true}, "next_limit": {"stage": "receiver0/lane0", "method": "busy_time", "tuples_per_s": 100000}},
	  {"n": 2, "rate": 298000, "purpose": "close", "verdict": {"pass": true}, "next_limit": {"stage": "receiver0/lane0", "method": "busy_time", "tuples_per_s": 250000, "inconsistent": "below 298 k/s, which passed"}},
	  {"n": 3, "rate": 298000, "purpose": "repeat", "verdict": {"pass": true}, "next_limit": {"stage": "receiver0/consumer", "method": "busy_time", "tuples_per_s": 4000000}},
	  {"n": 4, "rate": 303000, "purpose": "close", "verdict": {"pass": false}, "next_limit": {"stage": "sut/stream0", "method": "backlog", "tuples_per_s": 300100}},
	  {"n": 5, "rate": 303000, "purpose": "profile", "verdict": {"pass": false}, "next_limit": {"stage": "sender0/thread0", "method": "busy_time", "tuples_per_s": 290000}}
	]}}`
	var s rundir.Summary
	if err := json.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	diag, rates, detail, trial := Explanations(&s)
	if diag != "sut/stream0" || rates != "sut/stream0" || trial != "at the first failing rate above the answer" || detail != "backlog limit 300100 tuples/s" {
		t.Fatalf("diagnosis %q, service rates %q (%s) %s", diag, rates, detail, trial)
	}
	// A rate between the answer and the first that always failed passed
	// some runs and failed others: its failures bracket the answer too.
	var mixed rundir.Trial
	if err := json.Unmarshal([]byte(`{"n": 6, "rate": 300500, "purpose": "repeat", "verdict": {"pass": false}, "next_limit": {"stage": "sut/stream0", "method": "backlog", "tuples_per_s": 299000}}`), &mixed); err != nil {
		t.Fatal(err)
	}
	s.Result.Trials = append(s.Result.Trials, mixed)
	if _, _, detail, trial = Explanations(&s); detail != "backlog limit 299000 tuples/s" || trial != "at a failing rate above the answer, 300.5 k/s" {
		t.Fatalf("with a mixed rate's failure: %s %s", detail, trial)
	}
	// When no trial bracketing the answer had a limit (a transport
	// backlogged in a period or two at the first failing rate), the
	// nearest failing rate above that did, named as such; never the
	// profiled trial, nor one further up.
	withAbove := append([]rundir.Trial(nil), s.Result.Trials[0], s.Result.Trials[1], s.Result.Trials[4])
	for _, doc := range []string{
		`{"n": 7, "rate": 400000, "purpose": "ramp", "verdict": {"pass": false}, "next_limit": {"stage": "sut/stream0", "method": "backlog", "tuples_per_s": 280000}}`,
		`{"n": 8, "rate": 320000, "purpose": "gallop", "verdict": {"pass": false}, "next_limit": {"stage": "sut/stream0", "method": "backlog", "tuples_per_s": 301000}}`,
		`{"n": 9, "rate": 303000, "purpose": "repeat", "verdict": {"pass": false}, "next_limit": null}`,
	} {
		var tr rundir.Trial
		if err := json.Unmarshal([]byte(doc), &tr); err != nil {
			t.Fatal(err)
		}
		withAbove = append(withAbove, tr)
	}
	above, res := s, *s.Result
	above.Result = &res
	above.Result.Trials = withAbove
	if _, rates, detail, trial := Explanations(&above); rates != "sut/stream0" || detail != "backlog limit 301000 tuples/s" || trial != "at a failing rate above the first, 320.0 k/s" {
		t.Fatalf("from above the first failing rate: %q %s %s", rates, detail, trial)
	}
	// Without the failing trials' estimates, the answer's own.
	s.Result.Trials = s.Result.Trials[:3]
	if _, rates, _, trial = Explanations(&s); rates != "receiver0/consumer" || trial != "at the answer" {
		t.Fatalf("service rates %q %s, want the consumer at the answer", rates, trial)
	}
}
