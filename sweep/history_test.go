package sweep

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/sweep/verdict"
	"github.com/cloudprofiler-go/cp/trialcfg"
)

func TestHistoryStatement(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer float64
		prior  []float64
		varies bool
		want   string
	}{
		{"too few to compare", 7e6, []float64{7e6}, false, ""},
		{"steady", 7.1e6, []float64{7e6, 7.05e6, 6.95e6}, false, "+1% from their median"},
		// Ten demos back to back on the development VM (BENCHMARKS.md,
		// sixteenth session): each reproducible within itself, 6.4-8.8 M/s
		// between them.
		{"sweeps move more than their repeats", 6.393e6, []float64{7.373e6, 6.558e6, 7.603e6, 8.757e6, 7.661e6, 8.0e6, 7.68e6, 7.939e6, 7.36e6}, true,
			"between 6.558 M/s and 8.757 M/s (median 7.661 M/s); this answer lies -17% from their median: sweeps of it here move by more than 5%"},
		{"this one is the outlier", 5e6, []float64{7e6, 7.05e6, 6.95e6}, true, "-29%"},
	} {
		h := history(tc.answer, tc.prior)
		if tc.want == "" {
			if h != nil {
				t.Errorf("%s: %+v, want none", tc.name, h)
			}
			continue
		}
		if h == nil || h.Varies != tc.varies || !strings.Contains(h.Statement, tc.want) || h.Sweeps != len(tc.prior) {
			t.Errorf("%s: %+v, want varies %v and %q", tc.name, h, tc.varies, tc.want)
		}
	}
}

// TestPriorAnswers: only the earlier sweeps of the same plan on the same
// machines, judged by the same host rules, with an answer they stand by,
// are compared; a damaged or foreign directory is skipped, never an
// error.
func TestPriorAnswers(t *testing.T) {
	dir := t.TempDir()
	plan := TrialPlan{Sender: trialcfg.Sender{BucketSize: 100}, Duration: 2 * time.Second, Scenario: "synthetic-100"}
	agents := []protocol.AgentInfo{{Role: "receiver", Machine: "m1"}, {Role: "sender", Machine: "m1"}}
	other := plan
	other.BucketSize = 1
	write := func(name string, p TrialPlan, ag []protocol.AgentInfo, lastPass float64, extra map[string]any) {
		t.Helper()
		v := map[string]any{"started": time.Date(2026, 11, 26, 3, 0, len(name), 0, time.UTC), "plan": p, "agents": ag,
			"result": map[string]any{"last_pass": lastPass, "boundary": map[string]any{"runs": 3}}, "host_rules": verdict.DefaultHostRules, "format_version": rundir.FormatVersion}
		for k, x := range extra {
			v[k] = x
		}
		b, _ := json.Marshal(v)
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "summary.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a-same", plan, agents, 7e6, nil)
	write("b-same", plan, agents, 7.2e6, nil)
	write("c-other-plan", other, agents, 1e6, nil)
	write("d-other-machine", plan, []protocol.AgentInfo{{Role: "receiver", Machine: "m2"}, {Role: "sender", Machine: "m1"}}, 2e6, nil)
	write("e-contradicted", plan, agents, 3e6, map[string]any{"contradicted": "a pass above a failure"})
	write("f-no-answer", plan, agents, 0, nil)
	if err := os.MkdirAll(filepath.Join(dir, "g-damaged"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "g-damaged", "summary.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	accepting := verdict.DefaultHostRules
	accepting.MaxOthers = 0 // a spinning neighbour accepted: another host
	write("i-busy-neighbour", plan, agents, 4e6, map[string]any{"host_rules": accepting})
	write("j-rules-unknown", plan, agents, 5e6, map[string]any{"host_rules": nil})
	slower := verdict.DefaultHostRules
	slower.Backoff *= 4 // waits longer for a quiet host: judges it alike
	write("h-self", plan, agents, 9e6, nil)
	got := priorAnswers(dir, filepath.Join(dir, "h-self"), plan, agents, slower)
	if len(got) != 2 || got[0]+got[1] != 14.2e6 {
		t.Fatalf("prior answers %v, want the two sweeps of the same plan on the same machines (7 and 7.2 M)", got)
	}
	if got := priorAnswers(filepath.Join(dir, "missing"), "", plan, agents, verdict.DefaultHostRules); got != nil {
		t.Fatalf("a missing results directory gave %v", got)
	}
}

// The run directory's readers take the plan's facts from
// rundir.PlanFacts: its JSON names must stay TrialPlan's.
func TestPlanFactsReadTheSweepsPlan(t *testing.T) {
	plan := TrialPlan{Duration: 3 * time.Second, Warmup: 400 * time.Millisecond, Relay: true}
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	got := (&rundir.Summary{Plan: b}).PlanFacts()
	if want := (rundir.PlanFacts{Duration: plan.Duration, Warmup: plan.Warmup, Relay: true}); got != want {
		t.Fatalf("facts %+v of plan %s, want %+v", got, b, want)
	}
}

// TestExpectationShortfall: the gate says each expectation the answer
// misses, and nothing of a sweep without an answer (its own exit status
// says that) or of one that asks nothing.
func TestExpectationShortfall(t *testing.T) {
	answer := func(rate float64, p99 int64) *rundir.Summary {
		s := &rundir.Summary{Result: &rundir.Result{LastPass: rate}}
		if p99 > 0 {
			s.Latency = &rundir.AnswerLatency{P99Ns: p99}
		}
		return s
	}
	for _, tc := range []struct {
		e    Expectation
		r    *rundir.Summary
		want string
	}{
		{Expectation{}, answer(1e5, 1e6), ""},
		{Expectation{MinRate: 5e4}, answer(1e5, 0), ""},
		{Expectation{MinRate: 2e5}, answer(1e5, 0), "the answer 100.0 k/s is below --expect-min-rate 200.0 k/s"},
		{Expectation{P99: 2 * time.Millisecond}, answer(1e5, 1e6), ""},
		{Expectation{P99: time.Millisecond}, answer(1e5, 3e6), "the p99 latency at the answer 3.000 ms is above --expect-p99 1ms"},
		{Expectation{P99: time.Millisecond}, answer(1e5, 0), "no latency was measured"},
		{Expectation{MinRate: 2e5, P99: time.Millisecond}, answer(1e5, 3e6), "below --expect-min-rate 200.0 k/s; the p99"},
		{Expectation{MinRate: 2e5}, answer(0, 0), ""},
	} {
		if got := tc.e.Shortfall(tc.r); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.e, got, tc.want)
		}
	}
}
