package cpustat

import (
	"fmt"
	"sort"
	"strings"
)

// The hosts of a run as people read them: each agent's accounting, grouped
// by host, and the one line the sweep's progress and the report print.

// AgentHost is one agent's host accounting over a trial :
// its threads' CPU and run-queue wait, and what the host did meanwhile.
type AgentHost struct {
	Node string `json:"node"` // sender0, receiver0, ...
	Host string `json:"host"` // the agent's host name: agents on one host share its CPUs
	Summary
}

// HostView is one host over a trial: the agents on it (by host name) and
// what the host did, other processes net of every one of them.
type HostView struct {
	Name              string
	CPUs              int
	Busy, Steal, Ours float64 // shares of the host's CPUs; Ours in cores
	SUT               float64 // cores of the system under test's processes here
	Others            float64 // share of the host's CPUs
	Agents            []AgentHost
}

// HostViews groups a trial's agents by host, in name order.
func HostViews(hosts []AgentHost) []HostView {
	byHost := map[string]*HostView{}
	var names []string
	for _, a := range hosts {
		key := a.Host
		if key == "" {
			key = a.Node
		}
		v := byHost[key]
		if v == nil {
			v = &HostView{Name: key, CPUs: a.CPUs}
			byHost[key] = v
			names = append(names, key)
		}
		v.Busy, v.Steal = max(v.Busy, a.HostBusy), max(v.Steal, a.HostSteal)
		v.Ours += a.Process
		v.SUT = max(v.SUT, a.SUT) // every agent here reads the same processes
		v.Agents = append(v.Agents, a)
	}
	sort.Strings(names)
	out := make([]HostView, 0, len(names))
	for _, n := range names {
		v := byHost[n]
		if v.CPUs > 0 {
			v.Others = max(v.Busy-(v.Ours+v.SUT)/float64(v.CPUs), 0)
		}
		out = append(out, *v)
	}
	return out
}

// HostsLine says what the hosts did during a trial: per host, its busy,
// stolen and other processes' shares (net of every agent on it), and per
// agent the cores it used and its busiest thread with the share of the
// time it waited runnable; then the profiler's threads. The sweep's
// progress and the report print it alike.
func HostsLine(hosts []AgentHost) string {
	if len(hosts) == 0 {
		return ""
	}
	var parts []string
	for _, v := range HostViews(hosts) {
		p := fmt.Sprintf("%s busy %.0f%% of %d CPUs, steal %.1f%%, other processes %.0f%%", v.Name, 100*v.Busy, v.CPUs, 100*v.Steal, 100*v.Others)
		if v.SUT > 0 {
			p += fmt.Sprintf(", the system under test %.2f cores", v.SUT)
		}
		for _, a := range v.Agents {
			p += fmt.Sprintf("; %s %.2f cores", a.Node, a.Process)
			if len(a.Threads) > 0 {
				top := a.Threads[0]
				p += fmt.Sprintf(" (%s %.2f, waited %.0f%%)", top.Name, top.Cores, 100*top.Runqueue)
			}
		}
		parts = append(parts, p)
	}
	if cores, share, ok := AgentsProfilerCost(hosts); ok {
		parts = append(parts, fmt.Sprintf("the profiler's threads %.3f cores (%.1f%% of the agents' CPU)", cores, 100*share))
	}
	return strings.Join(parts, " | ")
}

// AgentsProfilerCost is ProfilerCost over the agents' summaries.
func AgentsProfilerCost(hosts []AgentHost) (cores, share float64, ok bool) {
	sums := make([]Summary, len(hosts))
	for i, h := range hosts {
		sums[i] = h.Summary
	}
	return ProfilerCost(sums)
}

// RoleCores sums the agents' processes' cores by role: the sender agents'
// (nodes sender<N>) and the receiver agents' (receiver<N>).
func RoleCores(hosts []AgentHost) (senders, receivers float64) {
	for _, h := range hosts {
		switch {
		case strings.HasPrefix(h.Node, "sender"):
			senders += h.Process
		case strings.HasPrefix(h.Node, "receiver"):
			receivers += h.Process
		}
	}
	return senders, receivers
}
