package sweep

import (
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/rundir"
)

// By default a trial is one line: the target, the achieved rate, the
// verdict, and for a failure the rules that failed and what limited it;
// -v adds every rule's numbers and the evidence.
func TestTrialLine(t *testing.T) {
	fail := rundir.Trial{N: 3, Purpose: "ramp", Rate: 8e6, Achieved: 4.298e6, Elapsed: 3700 * time.Millisecond,
		Verdict: rundir.Verdict{Checks: []rundir.Check{
			{Rule: "schedule", Pass: true, Detail: "kept"},
			{Rule: "lateness", Detail: "worst p99 lateness 1.143 s (bound 5.000 ms)"},
			{Rule: "backlog", Detail: "the queueing delay grew 907.1 ms"}}},
		LimitingStage: "host CPU", LimitingEvidence: "host busy 70% of 2 CPUs"}
	pass := rundir.Trial{N: 1, Purpose: "ramp", Rate: 5e5, Achieved: 5e5, Elapsed: 3800 * time.Millisecond, Verdict: rundir.Verdict{Pass: true}}
	for _, tc := range []struct {
		name    string
		verbose bool
		t       rundir.Trial
		want    []string
		lines   int
	}{
		{"pass", false, pass, []string{"trial  1  ramp", "500.0 k/s  PASS  achieved 500.0 k/s  (3.8s)"}, 1},
		{"fail", false, fail, []string{"FAIL  achieved 4.298 M/s  (3.7s)  failed: lateness, backlog; limited by host CPU"}, 1},
		{"fail, -v", true, fail, []string{"lateness: worst p99 lateness 1.143 s", "backlog: the queueing delay grew", "limited by: host CPU (host busy 70% of 2 CPUs)"}, 4},
	} {
		s := &Sweep{Verbose: tc.verbose}
		got := s.trialLine(tc.t)
		if n := strings.Count(got, "\n") + 1; n != tc.lines {
			t.Errorf("%s: %d lines, want %d:\n%s", tc.name, n, tc.lines, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
		if !tc.verbose && strings.Contains(got, "schedule") {
			t.Errorf("%s: a rule that passed is named: %q", tc.name, got)
		}
	}
}
