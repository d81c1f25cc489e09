package verdict

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/rundir"
	sendtally "github.com/cloudprofiler-go/cp/sender/tally"
	"github.com/cloudprofiler-go/cp/stage"
)

func agentHost(node, host string, busy, steal, process float64, threads ...cpustat.ThreadShare) cpustat.AgentHost {
	return cpustat.AgentHost{Node: node, Host: host, Summary: cpustat.Summary{CPUs: 2, HostBusy: busy, HostSteal: steal, Process: process, Threads: threads}}
}

// A trial is disturbed by other processes on a host (its busy share minus
// every agent of that host, not only the one reporting: on loopback the
// sender and the receiver are not each other's "other processes"), by
// steal, or (when asked) by hot threads waiting to run.
func TestDisturbedByTheHost(t *testing.T) {
	rules := HostRules{MaxOthers: 0.15, MaxSteal: 0.05, MaxRepeats: 3}
	for _, c := range []struct {
		name  string
		rules HostRules
		hosts []cpustat.AgentHost
		want  string // "" = not disturbed
	}{
		{"a quiet loopback host: the two agents fill it", rules,
			[]cpustat.AgentHost{agentHost("receiver0", "vm", 0.65, 0, 0.73), agentHost("sender0", "vm", 0.66, 0, 0.55)}, ""},
		{"a build beside the agents", rules,
			[]cpustat.AgentHost{agentHost("receiver0", "vm", 0.95, 0, 0.6), agentHost("sender0", "vm", 0.95, 0, 0.5)}, "other processes used 40% of host vm (receiver0, sender0)"},
		{"two hosts, one disturbed", rules,
			[]cpustat.AgentHost{agentHost("receiver0", "r", 0.4, 0, 0.8), agentHost("sender0", "s", 0.9, 0, 0.5)}, "host s (sender0)"},
		{"steal", rules, []cpustat.AgentHost{agentHost("sender0", "s", 0.3, 0.08, 0.5)}, "hypervisor stole 8%"},
		{"a waiting hot thread, off by default", rules,
			[]cpustat.AgentHost{agentHost("receiver0", "r", 0.5, 0, 1, cpustat.ThreadShare{Name: "consumer", Runqueue: 0.4})}, ""},
		{"a waiting hot thread, asked for", HostRules{MaxWait: 0.3},
			[]cpustat.AgentHost{agentHost("receiver0", "r", 0.5, 0, 1, cpustat.ThreadShare{Name: "consumer", Runqueue: 0.4}, cpustat.ThreadShare{Name: "other", Runqueue: 0.9})}, "receiver0/consumer waited runnable 40%"},
		{"no accounting", rules, nil, ""},
	} {
		got := c.rules.Disturbed(c.hosts)
		if (got == "") != (c.want == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if err := (HostRules{MaxOthers: 2}).Validate(); err == nil {
		t.Error("a share of 2 was taken")
	}
}

func TestColocation(t *testing.T) {
	got, _ := Colocation([]cpustat.AgentHost{agentHost("receiver0", "vm", 0.6, 0, 0.73), agentHost("sender0", "vm", 0.6, 0, 0.55)})
	if !strings.Contains(got, "receiver0 and sender0 share host vm's 2 CPUs (receiver0 0.73 cores, sender0 0.55 cores)") {
		t.Fatalf("%q", got)
	}
	if strings.Contains(got, "waited runnable") {
		t.Fatalf("no thread waited, but %q", got)
	}
	if got, _ := Colocation([]cpustat.AgentHost{agentHost("receiver0", "r", 0.6, 0, 0.73), agentHost("sender0", "s", 0.6, 0, 0.55)}); got != "" {
		t.Fatalf("agents on two hosts: %q", got)
	}
	// The harness's own threads filled the host: the answer moves between
	// sweeps with their placement (the demo's quiet sweeps: 2.0-6.7 M/s).
	got, unsteady := Colocation([]cpustat.AgentHost{agentHost("receiver0", "vm", 0.8, 0, 0.7, cpustat.ThreadShare{Name: "consumer", Runqueue: 0.6}), agentHost("sender0", "vm", 0.8, 0, 0.9)})
	if !strings.Contains(got, "receiver0/consumer waited runnable 60%") || !strings.Contains(got, "compare several sweeps") || unsteady != "receiver0/consumer waited runnable 60% of the time" {
		t.Fatalf("%q", got)
	}
	// a person's console: who shared which host and that the answer moves,
	// not the cores or what to do (-v)
	if b := BriefColocation(got, unsteady); b != "receiver0 and sender0 share host vm's 2 CPUs: the answer is that host's, and it moves between sweeps (receiver0/consumer waited runnable 60% of the time)" {
		t.Errorf("brief: %q", b)
	}
	steady, _ := Colocation([]cpustat.AgentHost{agentHost("receiver0", "vm", 0.6, 0, 0.73), agentHost("sender0", "vm", 0.6, 0, 0.55)})
	if b := BriefColocation(steady, ""); b != "receiver0 and sender0 share host vm's 2 CPUs: the answer is that host's" {
		t.Errorf("brief: %q", b)
	}
	// The job's working thread waited for a core: flagged the same way;
	// an idle thread's waits, or short ones, are not.
	for _, c := range []struct {
		name    string
		threads []cpustat.SUTThreadShare
		want    string
	}{
		{"a working thread that waited", []cpustat.SUTThreadShare{{Process: "node", Thread: "node", TID: 7, Cores: 0.6, Runqueue: 0.4}, {Process: "node", TID: 8, Cores: 0.01, Runqueue: 0.9}},
			"node: thread 7 waited to run 40% of the time), so the answer moves between sweeps"},
		{"short waits", []cpustat.SUTThreadShare{{Process: "node", TID: 7, Cores: 0.6, Runqueue: 0.1}}, ""},
		{"an idle thread's waits", []cpustat.SUTThreadShare{{Process: "node", TID: 8, Cores: 0.02, Runqueue: 0.9}}, ""},
	} {
		a := agentHost("receiver0", "vm", 0.8, 0, 0.3)
		a.SUT, a.SUTThreads = 0.6, c.threads
		got, unsteady := Colocation([]cpustat.AgentHost{a})
		if moves := strings.Contains(got, "moves between sweeps"); moves != (c.want != "") || !strings.Contains(got, c.want) || moves != (unsteady != "") {
			t.Errorf("%s: %q (unsteady %q), want %q", c.name, got, unsteady, c.want)
		}
	}
}

// The diagnosis a run directory keeps (diagnosis.json, the report) names
// the same limit as the sweep's line for the same trial: one function
// decides it (the demo's line said "thread0 late on its own" while the
// report's section said "no stage identified").
func TestOneVerdictOfTheLimit(t *testing.T) {
	tr := rundir.Trial{Verdict: rundir.Verdict{Pass: false}, Hosts: []cpustat.AgentHost{agentHost("sender0", "vm", 0.97, 0, 0.9, cpustat.ThreadShare{Name: "thread0", Cores: 0.4, Runqueue: 0.3})}}
	d := &diagnose.Diagnosis{Limiting: "none"}
	Limit(&tr, d)
	if tr.LimitingStage != diagnose.HostCPU || d.Limiting != tr.LimitingStage || d.Evidence != tr.LimitingEvidence {
		t.Fatalf("trial %q (%q), diagnosis %q (%q)", tr.LimitingStage, tr.LimitingEvidence, d.Limiting, d.Evidence)
	}
}

// A failed trial that no stage limited over its measured window names
// the stage confirmed limiting in the most of its periods (a windowed
// job's window operator works on the window's events after it), when
// that is at least a quarter of them; a stage limiting now and then is
// not named.
func TestLimitingInMostPeriods(t *testing.T) {
	for _, tc := range []struct {
		periods int
		want    string
	}{{40, "ysb/window"}, {10, "none"}} {
		tr := rundir.Trial{Verdict: rundir.Verdict{Pass: false}}
		d := &diagnose.Diagnosis{Limiting: "none", Snapshots: make([]diagnose.Snapshot, 90),
			Summary: []diagnose.ModuleSummary{{Stage: "ysb/join", Limiting: 3}, {Stage: "ysb/window", Limiting: tc.periods}}}
		Limit(&tr, d)
		if tr.LimitingStage != tc.want || d.Limiting != tc.want || (tc.want != "none" && !strings.Contains(tr.LimitingEvidence, fmt.Sprintf("limiting in %d of the trial's 90 periods", tc.periods))) {
			t.Errorf("%d periods: %q (%s), want %s", tc.periods, tr.LimitingStage, tr.LimitingEvidence, tc.want)
		}
	}
}

// The pause before a disturbed trial's repeat doubles and stops at
// MaxBackoff, however many repeats are allowed (100 doublings of 10
// minutes would overflow).
func TestBackoffIsBounded(t *testing.T) {
	h := HostRules{Backoff: 2 * time.Second}
	for n, want := range map[int]time.Duration{1: 2 * time.Second, 2: 4 * time.Second, 3: 8 * time.Second, 100: MaxBackoff} {
		if got := h.Pause(n); got != want {
			t.Errorf("after %d disturbed runs: %v, want %v", n, got, want)
		}
	}
	if got := (HostRules{Backoff: 10 * time.Minute}).Pause(100); got != MaxBackoff {
		t.Errorf("10m after 100 runs: %v", got)
	}
}

// TestTheHarnessIsNotBlamedOnTheJob: a trial of a job that failed only on
// the sender's own lateness names the late sender thread (or the host's
// full CPUs), never the job, whatever the diagnosis said; with a rule of
// the system's failing too, the diagnosis stands.
func TestTheHarnessIsNotBlamedOnTheJob(t *testing.T) {
	late := rundir.Check{Rule: RuleLateness, Detail: "worst p99 lateness 7.43 ms (bound 5 ms)"}
	lag := rundir.Check{Rule: RuleSystemBacklog, Pass: true, Detail: "the job's lag +221 (limit 3,414)"}
	for _, tc := range []struct {
		name   string
		checks []rundir.Check
		hosts  []cpustat.AgentHost
		want   string
	}{
		{"late on its own", []rundir.Check{late, lag}, nil, "thread0"},
		{"late on a full host", []rundir.Check{late, lag}, []cpustat.AgentHost{agentHost("sender0", "vm", 0.97, 0, 0.9, cpustat.ThreadShare{Name: "thread0", Cores: 0.4, Runqueue: 0.3})}, diagnose.HostCPU},
		{"the job's lag grew too", []rundir.Check{late, {Rule: RuleSystemBacklog, Detail: "the job's lag grew"}}, nil, "ysb/join"},
	} {
		o := &rundir.Outcome{Job: rundir.JobTuples, Senders: []*sendtally.Result{{StageSeries: &stage.Series{},
			Streams: []sendtally.StreamEnd{{Thread: 0, P99Lateness: int64(7430 * time.Microsecond)}}}}}
		tr := rundir.Trial{Verdict: rundir.Verdict{Checks: tc.checks}, Outcome: o, Hosts: tc.hosts}
		d := &diagnose.Diagnosis{Limiting: "ysb/join", Evidence: "busy 80%"}
		Limit(&tr, d)
		if tr.LimitingStage != tc.want || d.Limiting != tc.want {
			t.Errorf("%s: %q (%s), want %q", tc.name, tr.LimitingStage, tr.LimitingEvidence, tc.want)
		}
		if tc.want != "ysb/join" && !strings.Contains(tr.LimitingEvidence, "only the harness's own rules failed (lateness)") {
			t.Errorf("%s: the evidence does not say whose rules failed: %s", tc.name, tr.LimitingEvidence)
		}
	}
}
