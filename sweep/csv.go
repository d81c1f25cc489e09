package sweep

import (
	"fmt"
	"strings"
)

// trialsHeader is trials.csv's header: the first seven columns as they
// always were; the latency, lateness and CPU columns after them, so that
// a script reading columns by position keeps working.
var trialsHeader = []string{"trial", "purpose", "target_rate", "achieved_rate", "pass", "failed_rules", "elapsed_s",
	"lateness_p99_ns", "latency_p50_ns", "latency_p99_ns", "latency_p999_ns", "latency_max_ns",
	"sender_cores", "receiver_cores", "sut_cores", "host_busy", "other_processes"}

// trialRow is one trial of trials.csv. The latency columns are the worst
// receiver's (the highest of each percentile), the lateness the worst
// sender's; the cores are the agents' processes summed by role (and the
// system under test's named processes, once a host), host_busy and other_processes
// the busiest host's shares (0 to 1). A figure the trial did not record
// is empty, never 0.
func trialRow(t Trial) []string {
	row := []string{fmt.Sprint(t.N), t.Purpose, fmt.Sprintf("%.0f", t.Rate), fmt.Sprintf("%.0f", t.Achieved),
		fmt.Sprint(t.Verdict.Pass), strings.Join(t.Verdict.Failed(), "; "), fmt.Sprintf("%.3f", t.Elapsed.Seconds())}
	var late, p50, p99, p999, top int64
	var recorded bool
	if o := t.Outcome; o != nil {
		for _, s := range o.Senders {
			if s != nil {
				late = max(late, s.Lateness.P99)
			}
		}
		for _, r := range o.Receivers {
			if r != nil && r.Latency.Count > 0 {
				recorded = true
				p50, p99, p999, top = max(p50, r.Latency.P50), max(p99, r.Latency.P99), max(p999, r.Latency.P999), max(top, r.Latency.Max)
			}
		}
	}
	ns := func(v int64, ok bool) string {
		if !ok {
			return ""
		}
		return fmt.Sprint(v)
	}
	row = append(row, ns(late, t.Outcome != nil && len(t.Outcome.Senders) > 0),
		ns(p50, recorded), ns(p99, recorded), ns(p999, recorded), ns(top, recorded))
	if len(t.Hosts) == 0 {
		return append(row, "", "", "", "", "")
	}
	var send, recv, sut, busy, others float64
	sutOn := map[string]float64{} // agents on one host each see its system's processes
	for _, h := range t.Hosts {
		switch {
		case strings.HasPrefix(h.Node, "sender"):
			send += h.Process
		case strings.HasPrefix(h.Node, "receiver"):
			recv += h.Process
		}
		sutOn[h.Host] = max(sutOn[h.Host], h.SUT)
		busy, others = max(busy, h.HostBusy), max(others, h.OtherProcesses)
	}
	for _, c := range sutOn {
		sut += c
	}
	return append(row, fmt.Sprintf("%.3f", send), fmt.Sprintf("%.3f", recv), fmt.Sprintf("%.3f", sut), fmt.Sprintf("%.3f", busy), fmt.Sprintf("%.3f", others))
}
