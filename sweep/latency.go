package sweep

import (
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/rundir"
)

// WindowLatency is the latency of a windowed job's output (YSB's
// definition, docs/sut.md).
const WindowLatency = "YSB's window latency: a window's latest event's intended send to the window's arrival"

// answerLatency reads the latency of the runs at the answer (nil when
// there is no answer or no run recorded latencies).
func answerLatency(r *rundir.Result, agents []protocol.AgentInfo) *rundir.AnswerLatency {
	if r == nil || r.LastPass <= 0 {
		return nil
	}
	a := &rundir.AnswerLatency{Rate: r.LastPass}
	for _, t := range r.Trials {
		if t.Rate != r.LastPass || !t.Verdict.Pass || t.Outcome == nil {
			continue
		}
		counted := false
		for _, rr := range t.Outcome.Receivers {
			if rr == nil || rr.Latency.Count == 0 {
				continue
			}
			a.P50Ns, a.P99Ns, counted = max(a.P50Ns, rr.Latency.P50), max(a.P99Ns, rr.Latency.P99), true
		}
		if t.Outcome.Job == rundir.JobWindows {
			a.Definition = WindowLatency
		}
		if counted {
			a.Runs++
		}
	}
	if a.Runs == 0 {
		return nil
	}
	a.ClockBoundNs, a.Clock = -1, "the senders' and receivers' host clocks (NTP): not bounded by the harness; for bounded durations across hosts, profile with --clock and read cpsweep analyze"
	if oneMachine(agents) {
		a.ClockBoundNs, a.Clock = 0, "every agent on one machine: one clock, no clock error"
	}
	return a
}

// oneMachine says whether every agent reported the same machine.
func oneMachine(agents []protocol.AgentInfo) bool {
	if len(agents) == 0 {
		return false
	}
	for _, a := range agents {
		if a.Machine == "" || a.Machine != agents[0].Machine {
			return false
		}
	}
	return true
}
