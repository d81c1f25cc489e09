package rundir

import "testing"

// A failing trial's line names each failed rule once, in the order the
// verdict judged them, then what limited it; a passing trial has none.
func TestFailedLine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		trial Trial
		want  string
	}{
		{"passed", Trial{Verdict: Verdict{Pass: true, Checks: []Check{{Rule: "schedule", Pass: true}}}}, ""},
		{"two rules and the limit", Trial{LimitingStage: "host CPU", Verdict: Verdict{Checks: []Check{{Rule: "schedule", Pass: true}, {Rule: "lateness"}, {Rule: "backlog"}}}},
			"lateness, backlog; limited by host CPU"},
		// the job's lag and the receivers' backlog are both system-backlog
		{"a rule that failed twice", Trial{LimitingStage: "ysb/join", Verdict: Verdict{Checks: []Check{{Rule: "delivery"}, {Rule: "system-backlog"}, {Rule: "system-backlog"}}}},
			"delivery, system-backlog; limited by ysb/join"},
		{"no stage", Trial{LimitingStage: "none", Verdict: Verdict{Checks: []Check{{Rule: "lateness"}}}}, "lateness"},
	} {
		if got := tc.trial.FailedLine(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
