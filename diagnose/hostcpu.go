package diagnose

import (
	"strings"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/stage"
)

// Thresholds of the host CPU limit: the host's CPUs count as saturated at
// HostSaturated busy; a hot thread that waited runnable HotThreadWait of
// the time was held back by the host, not by its own work.
const (
	HostSaturated = 0.9
	HotThreadWait = 0.25
)

// HostCPU is the limiting "stage" of a trial that the host's CPUs limited:
// no stage of the pipeline, but the cores every thread shares.
const HostCPU = "host CPU"

// HeldBack is the host's part in a trial, for the one rule by which any
// analysis's answer (the diagnosis's limiting stage, the service rates'
// next limit, the activity graph's top activity) gives way to the host's
// CPUs.
type HeldBack struct {
	Busy      float64 // the busiest host's busy share
	Saturated bool    // the host's CPUs were busy HostSaturated
	Waiter    string  // the thread that the verdict points at ("node/role")
	Wait      float64 // the share of the time it waited runnable
}

// HostCPUHeld says whether the stage an analysis named (as it spells it:
// "thread0", "receiver0/lane0", "stream0", "sender0/thread0"; "" when it
// named none) gives way to the host's CPUs in a trial: the CPUs were
// saturated and a hot thread waited runnable, or the named stage's own
// threads waited runnable (the transport's are libzmq's I/O threads), or
// nothing was named and either held.
func HostCPUHeld(agents []cpustat.AgentHost, named string) (HeldBack, bool) {
	var h HeldBack
	for _, a := range agents {
		h.Busy = max(h.Busy, a.HostBusy)
	}
	h.Saturated = h.Busy >= HostSaturated
	h.Waiter, h.Wait = LongestWait(agents)
	held := h.Wait >= HotThreadWait
	// The named stage's own threads may have waited as long as the
	// longest waiter, give or take a point: which one of them led is
	// noise, so a stage is a victim when its own threads waited.
	if own, wait := ownWait(agents, named); wait >= HotThreadWait {
		h.Waiter, h.Wait = own, wait
		return h, true
	}
	if named != "" {
		return h, h.Saturated && held
	}
	return h, h.Saturated || held
}

// LongestWait is the hot thread that waited runnable the largest share
// of the time over the agents ("node/role"; "", 0: none waited).
func LongestWait(agents []cpustat.AgentHost) (waiter string, wait float64) {
	for _, a := range agents {
		for _, th := range a.Threads {
			if HotThread(th.Name) && th.Runqueue > wait {
				waiter, wait = a.Node+"/"+th.Name, th.Runqueue
			}
		}
	}
	return waiter, wait
}

// ownWait is the longest share of the time a thread of the named stage
// waited runnable ("node/role"; "", 0: none): the stage's own thread
// ("thread0", "receiver0/lane0"), or libzmq's I/O threads for the
// transport, whose work the transport stage is.
func ownWait(agents []cpustat.AgentHost, named string) (waiter string, wait float64) {
	if named == "" {
		return "", 0
	}
	kind, box := BlackBox(named)
	transport := box && kind == stage.Network
	for _, a := range agents {
		for _, th := range a.Threads {
			id := a.Node + "/" + th.Name
			mine := id == named || (!strings.Contains(named, "/") && th.Name == named) || (th.Name == cpustat.ZMQIO && transport)
			if mine && HotThread(th.Name) && th.Runqueue > wait {
				waiter, wait = id, th.Runqueue
			}
		}
	}
	return waiter, wait
}

// HotThread says whether a thread role is one of the pipeline's own
// stages, or the transport's I/O threads that carry its streams (libzmq's:
// the transport stage stream<N> is their work). At the demo's limit those
// waited runnable 29-37% of the time while the diagnosis named the
// transport: CPU they did not get, not a network that was full.
func HotThread(role string) bool {
	return strings.HasPrefix(role, "thread") || strings.HasPrefix(role, "lane") || role == "consumer" || role == cpustat.ZMQIO
}
