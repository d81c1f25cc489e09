package limits

import (
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/rundir"
)

// A failed trial whose Go job's collector took a quarter of its CPU or
// more is limited by it; a passing trial, a job at its default's few
// percent, or a job that did not say its runtime is not.
func TestTrialGC(t *testing.T) {
	trial := func(pass bool, g *protocol.GoRuntime) *rundir.Trial {
		return &rundir.Trial{Verdict: rundir.Verdict{Pass: pass},
			Outcome: &rundir.Outcome{Job: "ysb", Jobs: []*protocol.JobResult{{Name: "ysb", GoRuntime: g}}}}
	}
	gogc5 := &protocol.GoRuntime{CPUSeconds: 2.5, GCCPUSeconds: 0.85, GCPauseSeconds: 0.012, GCCycles: 140, GOGC: 5}
	for _, tc := range []struct {
		name string
		t    *rundir.Trial
		want string
	}{
		{"GOGC=5, failed", trial(false, gogc5), "34% of ysb's CPU (0.85 of 2.50 s): 140 collections, the world stopped 12ms in all; GOGC=5"},
		{"GOGC=5, passed", trial(true, gogc5), ""},
		{"the default's few percent", trial(false, &protocol.GoRuntime{CPUSeconds: 2.5, GCCPUSeconds: 0.1, GCCycles: 4, GOGC: 100}), ""},
		{"no runtime said", trial(false, nil), ""},
	} {
		if _, got := TrialGC(tc.t); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	a := Agree([]Explanation{{Analysis: "diagnosis", Stage: GoGC}, {Analysis: "service rates", Stage: "ysb/join"}})
	if a.Agree || !strings.Contains(a.Statement, "garbage collector runs in its operators' threads") {
		t.Errorf("the collector against an operator: %s", a.Statement)
	}
}

// A job not in Go: its collector's threads among the busiest, by their
// names, took a third of its process's cores.
func TestTrialGCByThreadNames(t *testing.T) {
	trial := func(gc float64) *rundir.Trial {
		return &rundir.Trial{Verdict: rundir.Verdict{Pass: false}, Outcome: &rundir.Outcome{Job: "flink"},
			Hosts: []cpustat.AgentHost{{Summary: cpustat.Summary{
				SUTThreads: []cpustat.SUTThreadShare{
					{Process: "java", PID: 7, Thread: "G1 Conc#0", Cores: gc},
					{Process: "java", PID: 7, Thread: "GC Thread#1", Cores: gc},
					{Process: "java", PID: 7, Thread: "Source: events", Cores: 0.6}},
				SUTProcesses: []cpustat.SUTProcessShare{{Process: "java", PID: 7, Cores: 0.6 + 2*gc}}}}}}
	}
	stage, why := TrialGC(trial(0.3))
	if stage != RuntimeGC || why != `java's collector threads ("G1 Conc#0", "GC Thread#1") used 0.60 of its 1.20 cores, 50% at least` {
		t.Errorf("%q: %q", stage, why)
	}
	if stage, why := TrialGC(trial(0.05)); stage != "" {
		t.Errorf("a collector at 14%%: %q (%s)", stage, why)
	}
}
