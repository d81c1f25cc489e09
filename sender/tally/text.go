package tally

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
)

// WriteText prints the result for a person.
func (r *Result) WriteText(w io.Writer) {
	ns := func(v int64) string { return numfmt.Ns(float64(v)) }
	target := "unpaced"
	if r.TargetRate > 0 {
		target = numfmt.Rate(r.TargetRate)
	}
	// The most likely cause first: a run whose data went nowhere fell
	// behind because of it, and says so before the schedule it missed.
	if cause := r.likelyCause(); cause != "" {
		fmt.Fprintf(w, "dgsend: FAILED: %s\n", cause)
	}
	if !r.ScheduleKept {
		fmt.Fprintf(w, "dgsend: SCHEDULE NOT KEPT: %s (the rate below is what was sent, not the target)\n", r.Schedule)
	}
	fmt.Fprintf(w, "dgsend: %s, %d thread(s), buckets of %d (%d bytes), %s, overflow %s, idle %s\n",
		r.Scenario, r.Threads, r.BucketSize, r.TupleBytes, target, r.Overflow, r.Idle)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  emitted\t%d tuples in %d buckets over %.3f s\n", r.Emitted, r.EmittedBkts, r.DurationS)
	if r.Expect != "" {
		fmt.Fprintf(tw, "  expected\t%d of them through the filter %q\n", r.Matched, r.Expect)
	}
	if r.ExpectWindowMs > 0 {
		fmt.Fprintf(tw, "  windows owed\t%d campaign windows of %d ms (--json lists each count)\n", len(r.ExpectedWindows), r.ExpectWindowMs)
	}
	fmt.Fprintf(tw, "  achieved rate\t%s (%.0f tuples/s)", numfmt.Rate(r.AchievedRate), r.AchievedRate)
	if r.TargetRate > 0 {
		fmt.Fprintf(tw, " (%.3f%% of target)", 100*r.AchievedRate/r.TargetRate)
	}
	fmt.Fprintln(tw)
	if r.TargetRate > 0 {
		fmt.Fprintf(tw, "  schedule\t%d tuples called for, shortfall %d\n", r.ScheduledTups, r.Shortfall)
		if len(r.Windows) > 0 {
			fmt.Fprintf(tw, "  1 s windows\t%d full, worst deviation from target %.4f%%\n", len(r.Windows), 100*r.WindowMaxDev)
		}
	}
	fmt.Fprintf(tw, "  dropped\t%d buckets (%d tuples)\n", r.DroppedBkts, r.DroppedTups)
	if r.TargetRate > 0 {
		fmt.Fprintf(tw, "  late slots\t%d (%.4f%% of slots) later than %s\n", r.LateSlots, 100*r.LateFraction, ns(r.LateThreshNs))
		l := r.Lateness
		fmt.Fprintf(tw, "  lateness\tp50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n", ns(l.P50), ns(l.P90), ns(l.P99), ns(l.P999), ns(l.Max))
	} else {
		fmt.Fprintln(tw, "  lateness\tnot measured: unpaced (no schedule)")
	}
	fmt.Fprintf(tw, "  send cost\t%s per bucket (measured before the run)\n", ns(r.SendCostNs))
	tw.Flush()
	if r.Interrupted {
		fmt.Fprintln(w, "  interrupted: stopped before the end; end markers say so")
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "  error: %s\n", e)
	}
}

// likelyCause is the error that most likely explains the run ("": none):
// nothing delivered to a peer that never connected, else the first error.
func (r *Result) likelyCause() string {
	for _, e := range r.Errors {
		if strings.Contains(e, "no peer ever connected") {
			return e + " (is the receiver running and listening there?)"
		}
	}
	if len(r.Errors) > 0 {
		return r.Errors[0]
	}
	return ""
}
