package sweep

import (
	"fmt"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/rundir"
)

// trialHosts takes every agent's host summary out of the trial's outcome;
// hostOf names each node's host.
func trialHosts(o *rundir.Outcome, hostOf map[string]string) []cpustat.AgentHost {
	if o == nil {
		return nil
	}
	var out []cpustat.AgentHost
	for i, r := range o.Receivers {
		if r != nil && r.Host != nil && r.Host.Error == "" {
			node := fmt.Sprintf("receiver%d", i)
			out = append(out, cpustat.AgentHost{Node: node, Host: hostOf[node], Summary: r.Host.Summary})
		}
	}
	for i, s := range o.Senders {
		if s != nil && s.Host != nil && s.Host.Error == "" {
			node := fmt.Sprintf("sender%d", i)
			out = append(out, cpustat.AgentHost{Node: node, Host: hostOf[node], Summary: s.Host.Summary})
		}
	}
	return out
}

// hostLine says what the hosts did during a trial, for its progress line.
func hostLine(t rundir.Trial) string {
	if l := cpustat.HostsLine(t.Hosts); l != "" {
		return "host: " + l
	}
	return ""
}

// machineNames groups agents by machine rather than host name: pods (or
// containers) on one node have their own host names but share its CPUs,
// so each one's "other processes" would be the others. Every agent on a
// machine is named after the first one seen there.
type machineNames map[string]string

func (m machineNames) host(info protocol.AgentInfo) string {
	if info.Machine == "" || len(info.Machine) > 64 {
		return info.Host
	}
	if name, ok := m[info.Machine]; ok {
		return name
	}
	m[info.Machine] = info.Host
	return info.Host
}
