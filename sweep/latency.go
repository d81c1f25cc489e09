package sweep

import (
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/rundir"
)

// WindowLatency is the latency of a windowed job's output (YSB's
// definition, docs/sut.md), from what the receivers measured it from
// (their window_latency_from: a window's latest event's intended send,
// its latest event's time, or its end).
func WindowLatency(from string) string {
	if from == "" { // a receiver from before it said
		from = receiver.WindowFromIdentity
	}
	return "YSB's window latency: from " + from + " to the window's arrival"
}

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
		var p50, p99 int64 // this run's worst receiver's
		counted := false
		for _, rr := range t.Outcome.Receivers {
			if rr == nil || rr.Latency.Count == 0 {
				continue
			}
			p50, p99, counted = max(p50, rr.Latency.P50), max(p99, rr.Latency.P99), true
		}
		if t.Outcome.Job == rundir.JobWindows {
			var from string
			for _, rr := range t.Outcome.Receivers {
				if rr != nil && rr.WindowLatencyFrom != "" {
					from = rr.WindowLatencyFrom
				}
			}
			a.Definition = WindowLatency(from)
		}
		if !counted {
			continue
		}
		if a.Runs == 0 || p50 < a.BestP50Ns {
			a.BestP50Ns = p50
		}
		if a.Runs == 0 || p99 < a.BestP99Ns {
			a.BestP99Ns = p99
		}
		a.P50Ns, a.P99Ns = max(a.P50Ns, p50), max(a.P99Ns, p99)
		a.Runs++
	}
	if a.Runs == 0 {
		return nil
	}
	if a.Runs == 1 { // one run shows no spread
		a.BestP50Ns, a.BestP99Ns = 0, 0
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
