package limits

import (
	"fmt"
	"slices"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/rundir"
)

// BrokerStarved is the time a broker's process waited to run, in thread-
// seconds a second, at and above which (and at least as long as it ran)
// it wanted more CPU than it got: a CPU quota, or a host it shares.
const BrokerStarved = 0.1

// brokerAlone: a broker is held back on its own when it waited to run,
// for each second it ran, this many times as long as any other process
// of the system under test did (a throttled nats-server: 35 times; the
// job beside it: 0.6).
const brokerAlone = 3

// waitRatio is how long a process waited to run for each second it ran.
func waitRatio(p cpustat.SUTProcessShare) float64 { return p.Runqueue / max(p.Cores, 0.01) }

// TrialBroker names the broker a failed trial's job reads (Broker's
// name: "jetstream ysb.in") as its limit when the broker's own process,
// named with --sut-process, waited to run at least as long as it ran, at
// least BrokerStarved, and brokerAlone times as long for each second run
// as the other processes did ("": it did not, or no job said its topics):
// the broker could not take what the senders sent, however fast the job.
func TrialBroker(t *rundir.Trial) (stage, why string) {
	if t.Outcome == nil || t.Verdict.Pass {
		return "", ""
	}
	topic := jobInput(t.Outcome)
	names := diagnose.BrokerProcesses(topic)
	var starved cpustat.SUTProcessShare
	others := 0.0 // the other processes' wait over their run, the most of them
	for _, h := range t.Hosts {
		for _, p := range h.SUTProcesses {
			switch {
			case !slices.Contains(names, p.Process):
				others = max(others, waitRatio(p))
			case p.Runqueue > starved.Runqueue:
				starved = p
			}
		}
	}
	// held back on its own: on a busy host everyone waits (the host's limit)
	if starved.Runqueue < BrokerStarved || waitRatio(starved) < 1 || waitRatio(starved) < brokerAlone*others {
		return "", ""
	}
	return diagnose.Broker(topic), fmt.Sprintf("%s used %.2f cores and waited to run %.2f more: it wanted more CPU than it got (a CPU quota, or a busy host)",
		starved.Process, starved.Cores, starved.Runqueue)
}

// jobInput is the topic the trial's jobs read that none of them writes
// ("": no job said its topics).
func jobInput(o *rundir.Outcome) string {
	written := map[string]bool{}
	for _, j := range o.Jobs {
		if j == nil {
			continue
		}
		for _, w := range j.Writes {
			written[w] = true
		}
	}
	for _, j := range o.Jobs {
		if j == nil {
			continue
		}
		for _, r := range j.Reads {
			if !written[r] {
				return r
			}
		}
	}
	return ""
}
