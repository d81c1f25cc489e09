package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/rundir"
)

// The report's service-rate table is the trial whose next limit the
// agreement line quotes: behind a relay that is a failing trial (the box
// is backlogged only there), not the passing trial at the answer, where
// its rate did not converge.
func TestRateSectionIsTheExplainingTrial(t *testing.T) {
	const doc = `{"result": {"last_pass": 298000, "first_fail": 303000, "trials": [
	  {"n": 1, "rate": 298000, "purpose": "close", "verdict": {"pass": true},
	   "service_rates": [{"stage": "sut/stream0", "kind": "sut", "method": "backlog", "tuples_per_s": null, "status": "not_converged"}]},
	  {"n": 2, "rate": 303000, "purpose": "close", "verdict": {"pass": false},
	   "service_rates": [{"stage": "sut/stream0", "kind": "sut", "method": "backlog", "tuples_per_s": 300100, "status": "converged", "converged": true, "tuples": 600000}],
	   "next_limit": {"stage": "sut/stream0", "method": "backlog", "tuples_per_s": 300100}}
	]}}`
	var s rundir.Summary
	if err := json.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	sec := rateSectionOf(&rundir.Dir{Summary: &s})
	if sec == nil || !strings.HasPrefix(sec.Trial, "trial 2 ") || len(sec.Rows) != 1 || sec.Rows[0].Limit != "300.1 k/s" || sec.Rows[0].Ratio != "0.99" {
		t.Fatalf("section %+v", sec)
	}
	s.Result.Trials[1].NextLimit = nil // nothing explains the answer: the trial at it
	if sec = rateSectionOf(&rundir.Dir{Summary: &s}); sec == nil || !strings.HasPrefix(sec.Trial, "trial 1 ") {
		t.Fatalf("without an explaining trial: %+v", sec)
	}
}
