package tally

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
)

// WriteText prints the accounting for a person.
func (r *Result) WriteText(w io.Writer) {
	ns := func(v int64) string { return numfmt.Ns(float64(v)) }
	verdict := "COMPLETE"
	if !r.Complete {
		verdict = "INCOMPLETE"
	}
	fmt.Fprintf(w, "dgrecv: %s (%s)\n", verdict, r.Reason)
	if r.Drain {
		fmt.Fprintln(w, "  drain mode: tuples counted from bucket headers, not decoded or consumed one by one")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  consumed\t%d tuples of %d sent (per end markers); received %d\n", r.Consumed, r.Sent, r.Received)
	fmt.Fprintf(tw, "  rate\t%s (%.0f tuples/s) over %.3f s (first to last consumed)\n", numfmt.Rate(r.Rate), r.Rate, r.DurationS)
	fmt.Fprintf(tw, "  missing\t%d tuples; %d duplicate, %d stale, %d out-of-sequence buckets\n", r.Missing, r.Duplicates, r.Stale, r.OutOfSeq)
	if r.Malformed > 0 {
		var reasons []string
		for k, n := range r.MalformedBy {
			if n > 0 {
				reasons = append(reasons, k)
			}
		}
		sort.Strings(reasons)
		fmt.Fprintf(tw, "  malformed\t%d messages skipped:", r.Malformed)
		for _, k := range reasons {
			fmt.Fprintf(tw, " %s=%d", k, r.MalformedBy[k])
		}
		fmt.Fprintln(tw)
	}
	l := r.Latency
	if l.Count > 0 {
		fmt.Fprintf(tw, "  latency\tp50 %s  p90 %s  p99 %s  p99.9 %s  max %s (intended send -> consumed)\n",
			ns(l.P50), ns(l.P90), ns(l.P99), ns(l.P999), ns(l.Max))
	}
	tw.Flush()
	if len(r.Streams) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  stream\tsender\tthread\tlane\tsent\tconsumed\tdropped@sender\tstatus")
		for _, s := range r.Streams {
			sent := "?"
			if s.Ended {
				sent = fmt.Sprint(s.SentTuples)
			}
			fmt.Fprintf(tw, "  %d\t%d\t%d\t%d\t%s\t%d\t%d\t%s\n", s.Stream, s.Sender, s.Thread, s.Lane, sent, s.ConsumedTuples, s.SenderDropped, s.Status)
		}
		tw.Flush()
	} else {
		fmt.Fprintln(w, "  no stream arrived")
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "  error: %s\n", e)
	}
}
