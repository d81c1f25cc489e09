package analysis

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/rundir"
)

// WriteFiles writes analysis.json and analysis.csv into dir.
func (r *Report) WriteFiles(dir string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := rundir.WriteFile(dir, rundir.AnalysisFile, append(b, '\n')); err != nil {
		return err
	}
	return rundir.WriteWith(dir, rundir.AnalysisCSVFile, func(w io.Writer) error {
		r.WriteCSV(w)
		return nil
	})
}

// CSVHeader is the header of analysis.csv: one row per pair and group,
// nanoseconds.
var CSVHeader = []string{"from", "to", "group", "count", "latency_min_ns", "latency_p50_ns", "latency_p90_ns", "latency_p99_ns",
	"latency_p999_ns", "latency_max_ns", "error_p50_ns", "error_p99_ns", "error_max_ns", "below_zero", "only_from", "only_to", "unbounded"}

// WriteCSV writes the per-pair rows.
func (r *Report) WriteCSV(w io.Writer) {
	cw := csv.NewWriter(w)
	_ = cw.Write(CSVHeader)
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	for _, p := range r.Pairs {
		for _, g := range p.Groups {
			l, e := g.Latency, g.Error
			_ = cw.Write([]string{p.From, p.To, g.Name, u(l.Count), i(l.Min), i(l.P50), i(l.P90), i(l.P99), i(l.P999), i(l.Max),
				i(e.P50), i(e.P99), i(e.Max), u(g.BelowZero), u(p.OnlyFrom), u(p.OnlyTo), u(p.Unbounded)})
		}
	}
	cw.Flush()
}

// WriteText prints the analysis for a person.
func (r *Report) WriteText(w io.Writer) {
	if r.Reused > 0 {
		fmt.Fprintf(w, "reference node %s (TSC %.6f GHz); %d records joined: %d in the activity graph's pass (%d pairs), %d here in %.2fs (%.2f M records/s)\n\n",
			r.Reference, r.TSCHz/1e9, r.Records, r.ReusedRecords, r.Reused, r.Records-r.ReusedRecords, r.Elapsed, r.RecordsPerSec/1e6)
	} else {
		fmt.Fprintf(w, "reference node %s (TSC %.6f GHz); %d records joined in %.2fs (%.2f M records/s)\n\n", r.Reference, r.TSCHz/1e9, r.Records, r.Elapsed, r.RecordsPerSec/1e6)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "from -> to\tgroup\ttuples\tmin\tp50\tp90\tp99\tp99.9\tmax\terror ± (p50 / max)\tonly at from / to")
	for _, p := range r.Pairs {
		if p.Skipped != "" {
			fmt.Fprintf(tw, "%s -> %s\t(not joined: see problems)\t\t\t\t\t\t\t\t\t\n", p.From, p.To)
			continue
		}
		if len(p.Groups) == 0 {
			fmt.Fprintf(tw, "%s -> %s\t(no tuple matched)\t\t\t\t\t\t\t\t\t%d / %d\n", p.From, p.To, p.OnlyFrom, p.OnlyTo)
		}
		for _, g := range p.Groups {
			l, e := g.Latency, g.Error
			fmt.Fprintf(tw, "%s -> %s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s / %s\t%d / %d\n", p.From, p.To, g.Name, l.Count,
				d(l.Min), d(l.P50), d(l.P90), d(l.P99), d(l.P999), d(l.Max), d(e.P50), d(e.Max), p.OnlyFrom, p.OnlyTo)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	if len(r.ReT) > 0 {
		fmt.Fprintln(w, "\nreturn-trip method (start -> acknowledgement, one clock):")
		for _, t := range r.ReT {
			fmt.Fprintf(w, "  %s on %s: %d round trips, p50 %s, p99 %s, max %s; %d unacknowledged\n", t.Channel, t.Node, t.RoundTrip.Count,
				d(t.RoundTrip.P50), d(t.RoundTrip.P99), d(t.RoundTrip.Max), t.Unacked)
		}
	}
	if len(r.Throughput) > 0 {
		fmt.Fprintln(w, "\nthroughput (periodic counters):")
		for _, s := range r.Throughput {
			fmt.Fprintf(w, "  %s on %s: %d in %d periods of %gs, mean %.0f/s\n", s.Channel, s.Node, s.Total, len(s.PerSec), s.PeriodS, s.MeanRate)
		}
	}
	if len(r.Problems) > 0 {
		fmt.Fprintln(w, "\nproblems:")
		for _, p := range r.Problems {
			fmt.Fprintf(w, "  - %s\n", p)
		}
	}
}

func d(ns int64) string { return numfmt.Ns(float64(ns)) }
