package sweep

import (
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/sweep/verdict"
)

// The summary says what the profiled trial's verdict means: a pass points
// to the logs; a failure below the answer says that the answer had less
// headroom than the profile costs (never silently a FAIL in the table); a
// failure above the answer (--profile-rate) is what was asked for.
func TestProfiledLineSaysWhatTheVerdictMeans(t *testing.T) {
	fail := rundir.Verdict{Checks: []rundir.Check{{Rule: verdict.RuleLateness, Detail: "p99 lateness 7.1ms > bound 5ms"}}}
	pass := rundir.Verdict{Pass: true}
	cases := []struct {
		name     string
		trials   []rundir.Trial
		want     []string
		profiled bool // --profile-search
		jobLogs  bool // a job's operators logged too
	}{
		{"no profiled trial", []rundir.Trial{{Purpose: "confirm", Rate: 1e6, Verdict: pass}}, nil, false, false},
		{"passed", []rundir.Trial{{Purpose: "profile", Rate: 9e5, Verdict: pass}},
			[]string{"profiled trial at 900.0 k/s (90% of the answer) passed", "profiles/"}, false, false},
		{"passed, with the profiler's threads accounted", []rundir.Trial{{Purpose: "profile", Rate: 9e5, Verdict: pass, Hosts: []cpustat.AgentHost{
			{Node: "sender0", Summary: cpustat.Summary{Process: 0.6, Threads: []cpustat.ThreadShare{{Name: "thread0", Cores: 0.5}, {Name: cpustat.Profiler, Cores: 0.012}}}},
			{Node: "receiver0", Summary: cpustat.Summary{Process: 0.4, Threads: []cpustat.ThreadShare{{Name: cpustat.Profiler, Cores: 0.008}}}},
		}}},
			[]string{"(90% of the answer; the profiler's threads used 0.020 cores, 2.0% of the agents' CPU) passed"}, false, false},
		{"failed below the answer, the profile's measured cost well inside the headroom", []rundir.Trial{{Purpose: "profile", Rate: 9e5, Verdict: fail, Hosts: []cpustat.AgentHost{
			{Node: "sender0", Summary: cpustat.Summary{Process: 1, Threads: []cpustat.ThreadShare{{Name: cpustat.Profiler, Cores: 0.01}}}},
		}}},
			[]string{"FAILED (lateness", "the answer stands", "1.0% in its threads", "10% headroom", "not the likely", "busier", "optimistic"}, false, false},
		{"failed below the answer, the profile's cost near the headroom", []rundir.Trial{{Purpose: "profile", Rate: 9e5, Verdict: fail, Hosts: []cpustat.AgentHost{
			{Node: "sender0", Summary: cpustat.Summary{Process: 1, Threads: []cpustat.ThreadShare{{Name: cpustat.Profiler, Cores: 0.06}}}},
		}}},
			[]string{"FAILED (lateness", "Either the profile costs", "headroom", "optimistic"}, false, false},
		{"failed below the answer", []rundir.Trial{{Purpose: "profile", Rate: 9e5, Verdict: fail}},
			[]string{"FAILED (lateness: p99 lateness 7.1ms > bound 5ms)", "the answer stands", "queueing", "headroom", "run the sweep again"}, false, false},
		{"failed above the answer", []rundir.Trial{{Purpose: "profile", Rate: 2e6, Verdict: fail}},
			[]string{"(200% of the answer) failed, as a trial above the answer may", "overloaded"}, false, false},
		{"failed below an answer found profiled", []rundir.Trial{{Purpose: "profile", Rate: 9e5, Verdict: fail}},
			[]string{"FAILED (lateness", "ran with the same profile", "not the reason", "busier", "queueing"}, true, false},
		// the job's operators logged on their own threads: the profiler's
		// threads' small share does not clear the profile (make demo-ysb)
		{"failed below the answer, a job's operators logging", []rundir.Trial{{Purpose: "profile", Rate: 9e5, Verdict: fail, Hosts: []cpustat.AgentHost{
			{Node: "sender0", Summary: cpustat.Summary{Process: 1, Threads: []cpustat.ThreadShare{{Name: cpustat.Profiler, Cores: 0.001}}}},
		}}},
			[]string{"FAILED (lateness", "the answer stands", "operators logged every tuple on their own", "busy share"}, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := &rundir.Result{LastPass: 1e6, FirstFail: 1.01e6, Trials: c.trials}
			got := profiledLine(res, c.profiled, c.jobLogs, true)
			if c.jobLogs && strings.Contains(got, "not the likely") {
				t.Errorf("%q clears the profile, whose cost in the job no thread of its shows", got)
			}
			if c.want == nil && got != "" {
				t.Fatalf("got %q, want nothing", got)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			// the default console: one line, the same verdict, no reasoning
			brief := profiledLine(res, c.profiled, c.jobLogs, false)
			if strings.Contains(brief, "\n") || (got == "") != (brief == "") || len(brief) > 160 {
				t.Errorf("brief %q: not one short line", brief)
			}
			if strings.Contains(got, "FAILED") && !strings.Contains(brief, "FAILED (lateness): the answer stands") || strings.Contains(brief, "7.1ms") {
				t.Errorf("brief %q: want the failed rule's name and what it means, not its numbers", brief)
			}
		})
	}
}
