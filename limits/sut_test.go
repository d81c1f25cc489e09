package limits

import (
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/rundir"
)

// The system under test is named from outside by a thread that wanted a
// core all along, or, when none did, by its input lag or its short
// output; with neither, nothing is said.
func TestTrialSUT(t *testing.T) {
	host := func(threads []cpustat.SUTThreadShare, procs ...cpustat.SUTProcessShare) cpustat.AgentHost {
		return cpustat.AgentHost{Node: "receiver0", Summary: cpustat.Summary{SUTThreads: threads, SUTProcesses: procs}}
	}
	py := cpustat.SUTProcessShare{Process: "python3", PID: 7, Cores: 0.8, Busy: 1}
	short := rundir.Verdict{Checks: []rundir.Check{{Rule: "delivery", Pass: false}}}
	for _, tc := range []struct {
		name    string
		hosts   []cpustat.AgentHost
		verdict rundir.Verdict
		grew    float64
		read    bool
		want    string
	}{
		{"a saturated thread", []cpustat.AgentHost{host([]cpustat.SUTThreadShare{{Process: "python3", PID: 7, Thread: "python3", TID: 7, Cores: 0.97}}, py)}, rundir.Verdict{}, 5925, true,
			"python3: thread 7 busy 97% of a core; its input lag grew 5925 messages"},
		{"a thread that waited for a core", []cpustat.AgentHost{host([]cpustat.SUTThreadShare{{Process: "node", Thread: "node", TID: 9, Cores: 0.8, Runqueue: 0.15}})}, rundir.Verdict{}, 0, false,
			"node: thread 9 busy 80% of a core and waiting to run 15% of the time: it wanted a core 95% of the time"},
		{"a named thread", []cpustat.AgentHost{host([]cpustat.SUTThreadShare{{Process: "java", Thread: "pipeline-0", TID: 11, Cores: 0.99}})}, rundir.Verdict{}, 0, false,
			`java: thread "pipeline-0" (11) busy 99% of a core`},
		{"work spread over threads, the lag grew", []cpustat.AgentHost{host([]cpustat.SUTThreadShare{{Process: "cpjob", TID: 3, Thread: "cpjob", Cores: 0.4}}, cpustat.SUTProcessShare{Process: "cpjob", Cores: 1.0, Busy: 3})}, rundir.Verdict{}, 300, true,
			"its input lag grew 300 messages while the harness kept up; cpjob used 1.00 cores (3 busy thread(s)), no thread saturated"},
		{"work spread, the output short", []cpustat.AgentHost{host(nil, cpustat.SUTProcessShare{Process: "nats-server", PID: 2, Cores: 0.4, Busy: 4}, cpustat.SUTProcessShare{Process: "cpjob", PID: 1, Cores: 0.7, Busy: 2})}, short, 0, true,
			"its output was short while the harness kept up; cpjob used 0.70 cores (2 busy thread(s)), nats-server 0.40 (4), no thread"},
		{"an idle process is left out", []cpustat.AgentHost{host(nil, cpustat.SUTProcessShare{Process: "nats-server", PID: 3, Cores: 0.001}, cpustat.SUTProcessShare{Process: "cpjob", PID: 1, Cores: 0.7, Busy: 2})}, short, 0, true,
			"cpjob used 0.70 cores (2 busy thread(s)), no thread"},
		{"nothing grew and nothing was short", []cpustat.AgentHost{host(nil, cpustat.SUTProcessShare{Process: "cpjob", Cores: 0.7, Busy: 2})}, rundir.Verdict{}, 3, true, ""},
		{"no process named", nil, short, 300, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &rundir.Trial{Hosts: tc.hosts, Verdict: tc.verdict}
			got := TrialSUT(tr, tc.grew, tc.read)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("%q, want %q", got, tc.want)
			}
		})
	}
}

// TestHostCPULineAddsUp: the host CPU limit's evidence lists the system
// under test's cores beside the agents', once however many agents read
// them, so that its parts add up to the busy share (issue 58).
func TestHostCPULineAddsUp(t *testing.T) {
	agent := func(node string, process float64) cpustat.AgentHost {
		return cpustat.AgentHost{Node: node, Host: "vm", Summary: cpustat.Summary{CPUs: 2, HostBusy: 0.96, Process: process, SUT: 0.9,
			Threads: []cpustat.ThreadShare{{Name: "thread0", Cores: 0.3, Runqueue: 0.4}}}}
	}
	tr := &rundir.Trial{Hosts: []cpustat.AgentHost{agent("sender0", 0.5), agent("receiver0", 0.5)}}
	why, _ := HostCPUBehind(tr, "")
	if !strings.Contains(why, "sender0 0.50 cores (thread0 0.30), receiver0 0.50 cores (thread0 0.30), the system under test 0.90 cores, other processes") {
		t.Errorf("%q: want both agents and the system under test's cores once", why)
	}
}
