package limits

import (
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/rundir"
)

// A failed job trial whose broker's process waited to run longer than it
// ran (held to a CPU quota) is limited by that broker, named by the topic
// the job reads; a broker that ran freely, or a trial that passed, is not.
func TestTrialBroker(t *testing.T) {
	trial := func(pass bool, procs ...cpustat.SUTProcessShare) *rundir.Trial {
		return &rundir.Trial{Verdict: rundir.Verdict{Pass: pass}, Hosts: []cpustat.AgentHost{{Summary: cpustat.Summary{SUTProcesses: procs}}},
			Outcome: &rundir.Outcome{Job: "ysb", Jobs: []*protocol.JobResult{nil, {Name: "ysb", Reads: []string{"jetstream:ysb.in"}, Writes: []string{"jetstream:ysb.out"}}}}}
	}
	job := cpustat.SUTProcessShare{Process: "cpjob", Cores: 0.4, Runqueue: 0.2}
	held := cpustat.SUTProcessShare{Process: "nats-server", Cores: 0.05, Runqueue: 0.6}
	free := cpustat.SUTProcessShare{Process: "nats-server", Cores: 0.3, Runqueue: 0.02}
	for _, tc := range []struct {
		name, want string
		t          *rundir.Trial
	}{
		{"held", "jetstream ysb.in", trial(false, job, held)},
		{"free", "", trial(false, job, free)},
		{"passed", "", trial(true, job, held)},
		{"only the job", "", trial(false, cpustat.SUTProcessShare{Process: "cpjob", Cores: 0.1, Runqueue: 0.9})},
		// a busy host: the job waited to run as much as the broker did
		{"everyone waited", "", trial(false, cpustat.SUTProcessShare{Process: "cpjob", Cores: 0.4, Runqueue: 4.0}, held)},
	} {
		stage, why := TrialBroker(tc.t)
		if stage != tc.want || (stage != "" && !strings.Contains(why, "nats-server used 0.05 cores and waited to run 0.60 more")) {
			t.Errorf("%s: %q (%s), want %q", tc.name, stage, why, tc.want)
		}
	}
}
