package sweep

import (
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/sender"
	"github.com/cloudprofiler-go/cp/sweep/protocol"
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

// TestBrokerLagGrowthAddsEveryConsumer: the system-backlog rule adds the
// lag trend of every receiver (one growing and one flat is growth), fails
// when a receiver could not read its lag, and is absent over ZeroMQ.
func TestBrokerLagGrowthAddsEveryConsumer(t *testing.T) {
	lagged := func(per100ms int64) []receiver.BacklogSample {
		var s []receiver.BacklogSample
		for i := int64(0); i <= 20; i++ {
			v := i * per100ms
			s = append(s, receiver.BacklogSample{UnixNs: i * 1e8, BrokerLag: &v})
		}
		return s
	}
	unreadable := func() []receiver.BacklogSample {
		v := int64(-1)
		return []receiver.BacklogSample{{UnixNs: 1e8, BrokerLag: &v}}
	}
	out := func(backlogs ...[]receiver.BacklogSample) *Outcome {
		o := &Outcome{Rate: 1e6, Window: [2]int64{0, 2e9}, Senders: []*sender.Result{{BucketSize: 100}}}
		for _, b := range backlogs {
			o.Receivers = append(o.Receivers, &receiver.Result{Backlog: b})
		}
		return o
	}
	for _, tc := range []struct {
		name             string
		o                *Outcome
		present, pass    bool
		minGrew, maxGrew float64
	}{
		{"flat", out(lagged(0), lagged(0)), true, true, -1, 1},
		{"one of two grows", out(lagged(0), lagged(100)), true, false, 1900, 2100},
		{"small growth within 10% of a second's 10k messages", out(lagged(40)), true, true, 700, 900},
		{"unreadable", out(lagged(0), unreadable()), true, false, -1, 1},
		{"zeromq", out(nil, nil), false, true, 0, 0},
	} {
		v := Judge(tc.o, DefaultRules)
		var c *Check
		for i := range v.Checks {
			if v.Checks[i].Rule == RuleSystemBacklog {
				c = &v.Checks[i]
			}
		}
		if (c != nil) != tc.present {
			t.Errorf("%s: rule present %v, want %v", tc.name, c != nil, tc.present)
			continue
		}
		grew, _, _, _, _ := brokerLagGrowth(tc.o, DefaultRules)
		if c != nil && (c.Pass != tc.pass || grew < tc.minGrew || grew > tc.maxGrew) {
			t.Errorf("%s: pass %v grew %.0f (%s), want pass %v and %.0f..%.0f", tc.name, c.Pass, grew, c.Detail, tc.pass, tc.minGrew, tc.maxGrew)
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
	if line := colocation([]cpustat.AgentHost{agent("sender0", 0.4, 0.8)}); !strings.Contains(line, "sender0 and the system under test share host vm") {
		t.Errorf("co-location %q: one agent beside the system is co-located too", line)
	}
	if !strings.Contains(hostLine(Trial{Hosts: []cpustat.AgentHost{agent("sender0", 0.4, 0.8)}}), "the system under test 0.80 cores") {
		t.Error("the host line does not show the system's cores")
	}
}
