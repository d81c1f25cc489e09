package sweep

import (
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/sweep/verdict"
)

// TestMachineNamesGroupPodsOfOneNode: agents in containers on one machine
// (one boot id, their own host names) are one host; agents without a boot
// id keep their host names.
func TestMachineNamesGroupPodsOfOneNode(t *testing.T) {
	m := machineNames{}
	for _, tc := range []struct {
		info protocol.AgentInfo
		want string
	}{
		{protocol.AgentInfo{Host: "cp-sender-0", Machine: "b1"}, "cp-sender-0"},
		{protocol.AgentInfo{Host: "cp-receiver-0", Machine: "b2"}, "cp-receiver-0"},
		{protocol.AgentInfo{Host: "cp-sender-1", Machine: "b1"}, "cp-sender-0"},
		{protocol.AgentInfo{Host: "old-agent"}, "old-agent"},
		{protocol.AgentInfo{Host: "odd", Machine: strings.Repeat("x", 65)}, "odd"},
	} {
		if got := m.host(tc.info); got != tc.want {
			t.Errorf("%+v: host %q, want %q", tc.info, got, tc.want)
		}
	}
}

// TestSystemUnderTestIsNotOtherWork: the watched processes' cores are
// left out of "other processes" on their host (counted once however many
// agents read them), and the co-location line names the system.
func TestSystemUnderTestIsNotOtherWork(t *testing.T) {
	agent := func(node string, process, sut float64) cpustat.AgentHost {
		return cpustat.AgentHost{Node: node, Host: "vm", Summary: cpustat.Summary{CPUs: 2, HostBusy: 0.9, Process: process, SUT: sut}}
	}
	v := cpustat.HostViews([]cpustat.AgentHost{agent("sender0", 0.4, 0.8), agent("receiver0", 0.4, 0.8)})
	// busy 90% of 2 CPUs; ours 0.8 cores and the system's 0.8: others 10%
	if len(v) != 1 || v[0].SUT != 0.8 || v[0].Others < 0.09 || v[0].Others > 0.11 {
		t.Fatalf("views %+v: want the system's 0.8 cores once and 10%% others", v)
	}
	if line, _ := verdict.Colocation([]cpustat.AgentHost{agent("sender0", 0.4, 0.8)}); !strings.Contains(line, "sender0 and the system under test share host vm") {
		t.Errorf("co-location %q: one agent beside the system is co-located too", line)
	}
	if !strings.Contains(hostLine(rundir.Trial{Hosts: []cpustat.AgentHost{agent("sender0", 0.4, 0.8)}}), "the system under test 0.80 cores") {
		t.Error("the host line does not show the system's cores")
	}
}
