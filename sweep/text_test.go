package sweep

import (
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/sweep/search"
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

// TestAboutLeft: the live line says the trial's place among about how
// many and the time left: a linear search's steps exactly, a fast
// search's narrowing and repeats once it has failed, bounded by
// --max-trials; a ramp that has not failed says how long a trial takes.
func TestAboutLeft(t *testing.T) {
	trial := func(rate float64, pass bool) rundir.Trial {
		return rundir.Trial{Rate: rate, Elapsed: 5 * time.Second, Verdict: rundir.Verdict{Pass: pass}}
	}
	plan := TrialPlan{Duration: 3 * time.Second, Warmup: time.Second}
	linear := &Sweep{Ctrl: &Controller{Plan: plan}, Search: Search{Method: "linear", Linear: search.LinearPlan{From: 2e3, To: 20e3, Step: 2e3}}}
	fast := &Sweep{Ctrl: &Controller{Plan: plan}, Search: Search{Method: "fast", Fast: search.FastPlan{Precision: 0.02, Runs: 3, MaxTrials: 24}}}
	for _, tc := range []struct {
		s    *Sweep
		r    *rundir.Result
		n    int
		rate float64
		want string
	}{
		{linear, &rundir.Result{}, 1, 2e3, "(of about 10, ~1m0s left)"},
		{linear, &rundir.Result{Trials: []rundir.Trial{trial(2e3, true)}}, 2, 4e3, "(of about 10, ~45s left)"},
		{fast, &rundir.Result{Trials: []rundir.Trial{trial(5e5, true)}}, 2, 1e6, "(of at most 24, ~5s a trial)"},
		{fast, &rundir.Result{Trials: []rundir.Trial{trial(5e5, true), trial(1e6, false)}}, 3, 7.5e5, "(of about 11, ~45s left)"},
		{fast, &rundir.Result{Trials: make([]rundir.Trial, 23)}, 24, 1e6, "(of at most 24, ~6s a trial)"},
	} {
		if got := tc.s.aboutLeft(tc.r, tc.n, tc.rate); got != tc.want {
			t.Errorf("trial %d at %.0f after %d: %q, want %q", tc.n, tc.rate, len(tc.r.Trials), got, tc.want)
		}
	}
}

// TestAnswerLineIsShort: the answer's line holds the answer and its
// runs, at most 120 characters; the uncertainty and the resolution follow
// on lines of their own, and together they are the statement the report
// and summary.json carry.
func TestAnswerLineIsShort(t *testing.T) {
	stmt := "5.121 M/s, passed 3 of 3 runs; outcomes varied up to +34% above it (5.160 M/s passed 1 of 2, 6.858 M/s passed 2 of 3, " +
		"5.264 M/s (1 of 1) and 5.474 M/s (1 of 1) and 5.912 M/s (1 of 1) passed too few runs to be an answer (3 of 3 needed)); " +
		"7.298 M/s failed 1 of 1; search resolution 0.77%"
	r := &rundir.Summary{Dir: "runs/x", Result: &rundir.Result{LastPass: 5.121e6, FirstFail: 7.298e6, Elapsed: 52 * time.Second,
		Trials: make([]rundir.Trial, 24), Boundary: &rundir.Boundary{Statement: stmt}}}
	var b strings.Builder
	WriteAnswer(&b, r)
	lines := strings.Split(b.String(), "\n")
	if lines[0] != "max sustainable throughput: 5.121 M/s, passed 3 of 3 runs (24 trials in 52s)" || len(lines[0]) > 120 {
		t.Errorf("the answer's line (%d characters): %q", len(lines[0]), lines[0])
	}
	if got := "5.121 M/s, passed 3 of 3 runs; " + strings.TrimPrefix(lines[1], "  "); got != stmt {
		t.Errorf("the lines are not the statement:\n%s\n%s", got, stmt)
	}
}
