package compare

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
)

// WriteText prints the comparison for a terminal: one row a run, then
// each run's statements in full, then where the runs differ.
func (c *Comparison) WriteText(w io.Writer) {
	fmt.Fprintln(w, c.Statement)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tname\tstarted\tanswer\tfirst fail\treproducible\tspread\tlatency p50\tlatency p99\ttrials\tuse")
	for i, r := range c.Runs {
		rep, use, spread := "no", "yes", fmt.Sprintf("+%.1f%%", 100*r.Spread)
		if r.Reproducible {
			rep = "yes"
		}
		if !r.Boundary {
			rep, spread = "-", "-"
		}
		if r.Trust != "" {
			use = "NO"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", i+1, r.Name, r.Started, rateOr(r.LastPass), rateOr(r.FirstFail), rep, spread,
			nsOr(r.LatencyP50Ns), nsOr(r.LatencyP99Ns), r.Trials, use)
	}
	tw.Flush()
	for i, r := range c.Runs {
		fmt.Fprintf(w, "\nrun %d, %s (%s)\n  answer: %s\n", i+1, r.Name, r.Dir, r.Answer)
		if r.Trust != "" {
			fmt.Fprintf(w, "  NOT TO BE USED: %s\n", r.Trust)
		}
		for _, l := range []string{r.Latency, r.Limit} {
			if l != "" {
				fmt.Fprintf(w, "  %s\n", l)
			}
		}
		if r.Hosts != "" {
			fmt.Fprintf(w, "  hosts at the answer: %s\n", r.Hosts)
		}
	}
	if len(c.Changes) > 0 {
		fmt.Fprintln(w, "\nagainst run 1 (a change only when the runs' own repeats do not overlap):")
		for _, ch := range c.Changes {
			fmt.Fprintf(w, "  %s\n", ch.Statement)
		}
	}
	if len(c.PlanDiffers) > 0 {
		fmt.Fprintln(w, "\nthe plans differ (run 1 | run 2 | ...):")
		for _, d := range c.PlanDiffers {
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
	if c.MachinesDiffer != "" {
		fmt.Fprintf(w, "\nmachines: %s\n", c.MachinesDiffer)
	}
}

func rateOr(v float64) string {
	if v <= 0 {
		return "-"
	}
	return numfmt.Rate(v)
}

func nsOr(v int64) string {
	if v <= 0 {
		return "-"
	}
	return numfmt.Ns(float64(v))
}
