package sweep

import (
	"fmt"
	"strings"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/sweep/protocol"
)

// trialHosts takes every agent's host summary out of the trial's outcome;
// hostOf names each node's host.
func trialHosts(o *Outcome, hostOf map[string]string) []cpustat.AgentHost {
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
func hostLine(t Trial) string {
	if l := cpustat.HostsLine(t.Hosts); l != "" {
		return "host: " + l
	}
	return ""
}

// HostCPU is the limiting "stage" of a trial that the host's CPUs limited
// (diagnose.HostCPU).
const HostCPU = diagnose.HostCPU

// The host CPU limit's thresholds (package diagnose, where the one rule
// lives).
const (
	HostSaturated = diagnose.HostSaturated
	HotThreadWait = diagnose.HotThreadWait
)

// hostCPULimit says why a failing trial was limited by the host's CPUs
// ("": it was not): they were saturated, or a hot thread (an emission
// thread, a lane, the consumer) waited runnable a large share of the time
// while the stage diagnosis found no stage, or found a stage whose own
// thread could not run. The evidence says who used the cores.
func hostCPULimit(t *Trial) string {
	named := t.LimitingStage
	if named == "none" || strings.HasPrefix(t.LimitingEvidence, "late on its own") {
		named = ""
	}
	why, _ := hostCPUBehind(t, named)
	return why
}

// hostCPUBehind is the one rule by which any analysis's answer for a trial
// (the diagnosis's limiting stage, the service rates' next limit) gives way
// to the host's CPUs ("": it does not): the CPUs were saturated and a hot
// thread waited runnable, or that waiting thread is the named stage's own
// (the transport's are libzmq's I/O threads), or nothing was named. named
// is a stage as the analysis spells it ("thread0", "receiver0/lane0",
// "stream0"; "": none). why says who used the cores; short is its point:
// the thread that waited to run, else how busy the host was.
func hostCPUBehind(t *Trial, named string) (why, short string) {
	if len(t.Hosts) == 0 {
		return "", ""
	}
	held, ok := diagnose.HostCPUHeld(t.Hosts, named)
	if !ok {
		return "", ""
	}
	var who []string
	for _, h := range t.Hosts {
		p := fmt.Sprintf("%s %.2f cores", h.Node, h.Process)
		if len(h.Threads) > 0 {
			p += fmt.Sprintf(" (%s %.2f)", h.Threads[0].Name, h.Threads[0].Cores)
		}
		who = append(who, p)
	}
	others := 0.0
	for _, v := range cpustat.HostViews(t.Hosts) {
		others = max(others, v.Others)
	}
	short = fmt.Sprintf("host busy %.0f%% of %d CPUs", 100*held.Busy, t.Hosts[0].CPUs)
	why = fmt.Sprintf("%s: %s, other processes %.0f%%", short, strings.Join(who, ", "), 100*others)
	if held.Wait >= HotThreadWait {
		short = fmt.Sprintf("%s waited runnable %.0f%% of the time", held.Waiter, 100*held.Wait)
		why += "; " + short
	}
	return why, short
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
