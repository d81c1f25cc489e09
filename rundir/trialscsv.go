package rundir

import (
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/internal/atomicfile"
	"github.com/cloudprofiler-go/cp/internal/histo"
)

// WriteTrials writes trials.json and trials.csv, a row a trial.
func (r *Writer) WriteTrials(trials []Trial) error {
	if err := r.WriteJSON(TrialsFile, trials); err != nil {
		return err
	}
	return atomicfile.WriteWith(filepath.Join(r.Dir, TrialsCSVFile), 0o644, func(f io.Writer) error {
		w := csv.NewWriter(f)
		_ = w.Write(trialsHeader)
		for _, t := range trials {
			_ = w.Write(trialRow(t))
		}
		w.Flush()
		return w.Error()
	})
}

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
	ns := func(v int64, ok bool) string {
		if !ok {
			return ""
		}
		return fmt.Sprint(v)
	}
	var late, lat histo.Summary
	var sent, recorded bool
	if t.Outcome != nil {
		late, sent = t.Outcome.WorstLateness()
		lat, recorded = t.Outcome.WorstLatency()
	}
	row = append(row, ns(late.P99, sent), ns(lat.P50, recorded), ns(lat.P99, recorded), ns(lat.P999, recorded), ns(lat.Max, recorded))
	if len(t.Hosts) == 0 {
		return append(row, "", "", "", "", "")
	}
	send, recv := cpustat.RoleCores(t.Hosts)
	var sut, busy, others float64
	for _, v := range cpustat.HostViews(t.Hosts) {
		sut, busy = sut+v.SUT, max(busy, v.Busy) // the system's processes once a host
	}
	for _, h := range t.Hosts {
		others = max(others, h.OtherProcesses)
	}
	return append(row, fmt.Sprintf("%.3f", send), fmt.Sprintf("%.3f", recv), fmt.Sprintf("%.3f", sut), fmt.Sprintf("%.3f", busy), fmt.Sprintf("%.3f", others))
}
