package verdict

import (
	"fmt"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/rundir"

	"github.com/cloudprofiler-go/cp/diagnose"
)

// HostRules say when a trial's host was too busy with other work for the
// trial to say anything about the system: such a trial is disturbed,
// neither a pass nor a fail, and is repeated.
type HostRules struct {
	// MaxOthers: other processes (every process but the agents on that
	// host) used more than this share of a host's CPUs.
	MaxOthers float64 `json:"max_others"`
	// MaxSteal: the hypervisor gave more than this share of a host's
	// CPUs to other guests.
	MaxSteal float64 `json:"max_steal"`
	// MaxWait: a hot thread (an emission thread, a lane, the consumer)
	// waited runnable more than this share of the time (0: off; on a host
	// the sender and receiver share, the harness's own threads make such
	// waits at its limit: that is the host CPU limit, not a disturbance).
	MaxWait float64 `json:"max_wait"`
	// MaxRepeats is how many times a disturbed trial is repeated before
	// the sweep ends (sweep.ExitDisturbed).
	MaxRepeats int `json:"max_repeats"`
	// Backoff is the pause before the first repeat of a disturbed trial,
	// doubled before each next one: a build or a test run beside the
	// sweep comes in bursts, and a repeat right away meets the same burst.
	Backoff time.Duration `json:"backoff_ns"`
}

// DefaultHostRules are chosen from measurements on this project's 2-vCPU
// VMs (BENCHMARKS.md): a loopback trial left other processes at 0-5% of
// the host on a quiet host, 27-44% beside a process spinning on one CPU
// (answers 15-24% lower) and 56-68% beside a test suite; beside a
// neighbour spinning a varying share of one CPU, a sweep whose trials saw
// up to 12% answered 13% below the quiet median. 10% is twice the quiet
// maximum, below what a quarter of one CPU takes. Steal on these VMs read 0-0.2%; 10% is a hypervisor
// that gave a fifth of a core to others. Waiting runnable is off: on a
// host the sender and receiver share, the harness's own threads make
// such waits at its limit (that is the host CPU limit, not a
// disturbance).
var DefaultHostRules = HostRules{MaxOthers: 0.10, MaxSteal: 0.10, MaxRepeats: 3, Backoff: 2 * time.Second}

// Validate checks the rules' ranges.
func (h HostRules) Validate() error {
	bad := func(v float64) bool { return v < 0 || v > 1 || v != v }
	if bad(h.MaxOthers) || bad(h.MaxSteal) || bad(h.MaxWait) {
		return fmt.Errorf("--max-others, --max-steal and --max-wait are shares from 0 to 1 (0: off), got %v, %v, %v", h.MaxOthers, h.MaxSteal, h.MaxWait)
	}
	if h.MaxRepeats < 0 || h.MaxRepeats > 100 {
		return fmt.Errorf("--max-repeats must be 0..100, got %d", h.MaxRepeats)
	}
	if h.Backoff < 0 || h.Backoff > 10*time.Minute {
		return fmt.Errorf("--disturbed-backoff must be 0..10m, got %v", h.Backoff)
	}
	return nil
}

// MaxBackoff caps the pause before a disturbed trial's repeat, however
// many repeats --max-repeats allows (a doubling from --disturbed-backoff
// would otherwise overflow).
const MaxBackoff = 2 * time.Minute

// Pause is the pause before the repeat after the n-th disturbed run:
// Backoff doubled n-1 times, at most MaxBackoff.
func (h HostRules) Pause(n int) time.Duration {
	pause := h.Backoff
	for i := 1; i < n && pause < MaxBackoff; i++ {
		pause *= 2
	}
	return min(pause, MaxBackoff)
}

// DisturbedError ends a sweep whose host stayed disturbed through every
// repeat of a trial: no answer can be given on this host now.
type DisturbedError struct {
	Rate     float64
	Attempts int
	Reason   string
}

func (e *DisturbedError) Error() string {
	return fmt.Sprintf("the host stayed disturbed: %d run(s) at %.0f tuples/s, the last with %s", e.Attempts, e.Rate, e.Reason)
}

// Disturbed says why the host disturbed a trial ("": it did not). The
// agents on one host (by host name) are one: other processes are that
// host's busy share minus all of their CPU.
func (h HostRules) Disturbed(hosts []cpustat.AgentHost) string {
	var why []string
	for _, v := range cpustat.HostViews(hosts) {
		if v.CPUs <= 0 {
			continue
		}
		waiter, wait := diagnose.LongestWait(v.Agents)
		where := fmt.Sprintf("host %s (%s)", v.Name, nodeList(v.Agents, ", "))
		if h.MaxOthers > 0 && v.Others > h.MaxOthers {
			why = append(why, fmt.Sprintf("other processes used %.0f%% of %s's CPU", 100*v.Others, where))
		}
		if h.MaxSteal > 0 && v.Steal > h.MaxSteal {
			why = append(why, fmt.Sprintf("the hypervisor stole %.0f%% of %s's CPU", 100*v.Steal, where))
		}
		if h.MaxWait > 0 && wait > h.MaxWait {
			why = append(why, fmt.Sprintf("%s waited runnable %.0f%% of the time", waiter, 100*wait))
		}
	}
	return strings.Join(why, "; ")
}

// Colocation says which agents share a host ("": none do), with the cores
// each used in the trial: the answer is then a property of that host; and
// unsteady, when a hot thread there waited for a core, says which: the
// answer then moves between sweeps with the other work on that host.
func Colocation(hosts []cpustat.AgentHost) (line, unsteady string) {
	var out, moves []string
	for _, v := range cpustat.HostViews(hosts) {
		if len(v.Agents) < 2 && v.SUT == 0 { // an agent without a host name is alone under its node's
			continue
		}
		var each []string
		for _, a := range v.Agents {
			each = append(each, fmt.Sprintf("%s %.2f cores", a.Node, a.Process))
		}
		who := nodeList(v.Agents, " and ")
		if v.SUT > 0 {
			who += " and the system under test"
			each = append(each, fmt.Sprintf("the system under test %.2f cores", v.SUT))
		}
		line := fmt.Sprintf("%s share host %s's %d CPUs (%s)%s", who, v.Name, v.CPUs, strings.Join(each, ", "), colocationMeans)
		if waiter, wait := diagnose.LongestWait(v.Agents); wait >= diagnose.HotThreadWait {
			why := fmt.Sprintf("%s waited runnable %.0f%% of the time", waiter, 100*wait)
			line += fmt.Sprintf("; their own threads filled it (%s), so the answer moves between sweeps with where the scheduler puts them: compare several sweeps, or put the sender and the receiver on separate hosts", why)
			moves = append(moves, why)
		} else if th, ok := sutWaiter(v.Agents); ok {
			// A job's busiest thread that waits for a core shares it with
			// the harness and the broker: its answer moved by a third
			// between sweeps of the example jobs (BENCHMARKS.md).
			why := fmt.Sprintf("%s waited to run %.0f%% of the time", th.Name(), 100*th.Runqueue)
			line += fmt.Sprintf("; the system under test waited for these CPUs (%s), so the answer moves between sweeps with the other work here: compare several sweeps, or give the system under test a host of its own", why)
			moves = append(moves, why)
		}
		out = append(out, line)
	}
	return strings.Join(out, "; "), strings.Join(moves, "; ")
}

// colocationMeans ends the part of a Colocation line that says who
// shared a host; BriefColocation keeps that part.
const colocationMeans = ": the answer is a property of that host, not of the system alone"

// BriefColocation is a Colocation line for a person's console: who shared
// which host, and, when a thread there waited for a core (unsteady), that
// the answer moves between sweeps. The cores each used and what to do
// stay in the full line (-v, summary.json).
func BriefColocation(line, unsteady string) string {
	var shared []string
	for _, part := range strings.Split(line, "; ") {
		if who, _, ok := strings.Cut(part, colocationMeans); ok {
			if i := strings.Index(who, " ("); i > 0 {
				who = who[:i]
			}
			shared = append(shared, who)
		}
	}
	if len(shared) == 0 {
		return line
	}
	brief := strings.Join(shared, "; ") + ": the answer is that host's"
	if unsteady != "" {
		brief += ", and it moves between sweeps (" + unsteady + ")"
	}
	return brief
}

// nodeList names the agents, joined by sep.
func nodeList(as []cpustat.AgentHost, sep string) string {
	var n []string
	for _, a := range as {
		n = append(n, a.Node)
	}
	return strings.Join(n, sep)
}

// DisturbedRuns counts the runs the host disturbed over a sweep's trials.
func DisturbedRuns(trials []rundir.Trial) int {
	n := 0
	for _, t := range trials {
		n += len(t.Disturbed)
	}
	return n
}

// sutWaiter is the system under test's thread that waited runnable
// longest on these agents' host, when it waited HotThreadWait of the
// time or more and was busy itself (a thread that only waits for a core
// now and then holds back nothing).
func sutWaiter(agents []cpustat.AgentHost) (cpustat.SUTThreadShare, bool) {
	var w cpustat.SUTThreadShare
	for _, a := range agents {
		for _, th := range a.SUTThreads {
			if th.Cores >= sutBusyThread && th.Runqueue > w.Runqueue {
				w = th
			}
		}
	}
	return w, w.Runqueue >= diagnose.HotThreadWait
}

// sutBusyThread is the share of a core a thread of the system under test
// uses to count as one of its working threads.
const sutBusyThread = 0.25
