package sweep

import (
	"fmt"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/sweep/protocol"
)

// AnswerLatency is the end-to-end latency at the answer: from each
// tuple's intended send time to its consumption, through whatever sat
// between (a broker, a relay), over the answer's passing runs. A latency
// is stamped by two clocks, the sender's and the receiver's; Clock says
// how far apart they can be.
type AnswerLatency struct {
	Rate float64 `json:"rate"`
	Runs int     `json:"runs"`
	// The worst run's percentiles (the highest over runs and receivers).
	P50Ns int64 `json:"p50_ns"`
	P99Ns int64 `json:"p99_ns"`
	// ClockBoundNs bounds the clock error of each latency: 0 when every
	// agent runs on one machine (one clock); -1 when they do not, and the
	// live latencies rest on the hosts' clocks (NTP), which the harness
	// does not bound.
	ClockBoundNs int64  `json:"clock_bound_ns"`
	Clock        string `json:"clock"`
}

// answerLatency reads the latency of the runs at the answer (nil when
// there is no answer or no run recorded latencies).
func answerLatency(r *Result, agents []protocol.AgentInfo) *AnswerLatency {
	if r == nil || r.LastPass <= 0 {
		return nil
	}
	a := &AnswerLatency{Rate: r.LastPass}
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

// Statement is the latency as one line.
func (a *AnswerLatency) Statement() string {
	bound := "clock error not bounded"
	if a.ClockBoundNs >= 0 {
		bound = "± " + numfmt.Ns(float64(a.ClockBoundNs))
	}
	return fmt.Sprintf("latency at %s (intended send to consumed, worst of %d run(s)): p50 %s, p99 %s, %s (%s)",
		numfmt.Rate(a.Rate), a.Runs, numfmt.Ns(float64(a.P50Ns)), numfmt.Ns(float64(a.P99Ns)), bound, a.Clock)
}
