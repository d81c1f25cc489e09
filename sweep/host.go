package sweep

import (
	"fmt"
	"strings"

	"github.com/cloudprofiler-go/cp/cpustat"
)

// AgentHost is one agent's host accounting over a trial (package cpustat):
// its threads' CPU and run-queue wait, and what the host did meanwhile.
type AgentHost struct {
	Node string `json:"node"` // sender0, receiver0, ...
	cpustat.Summary
}

// trialHosts takes every agent's host summary out of the trial's outcome.
func trialHosts(o *Outcome) []AgentHost {
	if o == nil {
		return nil
	}
	var out []AgentHost
	for i, r := range o.Receivers {
		if r != nil && r.Host != nil && r.Host.Error == "" {
			out = append(out, AgentHost{Node: fmt.Sprintf("receiver%d", i), Summary: r.Host.Summary})
		}
	}
	for i, s := range o.Senders {
		if s != nil && s.Host != nil && s.Host.Error == "" {
			out = append(out, AgentHost{Node: fmt.Sprintf("sender%d", i), Summary: s.Host.Summary})
		}
	}
	return out
}

// hostLine says what the hosts did during a trial: per agent, the cores it
// used, its busiest thread with its run-queue wait, and the host's busy,
// stolen and other processes' shares.
func hostLine(t Trial) string {
	if len(t.Hosts) == 0 {
		return ""
	}
	var parts []string
	for _, h := range t.Hosts {
		p := fmt.Sprintf("%s %.2f cores", h.Node, h.Process)
		if len(h.Threads) > 0 {
			top := h.Threads[0]
			p += fmt.Sprintf(" (%s %.2f, waited %.0f%%)", top.Name, top.Cores, 100*top.Runqueue)
		}
		p += fmt.Sprintf(", host busy %.0f%%, steal %.1f%%, others %.0f%%", 100*h.HostBusy, 100*h.HostSteal, 100*h.OtherProcesses)
		parts = append(parts, p)
	}
	return "host: " + strings.Join(parts, "; ")
}
