package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cloudprofiler-go/cp/analysis/compare"
	"github.com/cloudprofiler-go/cp/analysis/report"
	"github.com/cloudprofiler-go/cp/cmd/internal/cli"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
	"github.com/cloudprofiler-go/cp/sweep"
)

func compareCommand(code *int) *cobra.Command {
	var jsonOut, failOnChange bool
	var html string
	cmd := &cobra.Command{
		Use:   "compare RUNDIR RUNDIR...",
		Short: "Put several run directories side by side: answers, uncertainty, latency, limits, hosts",
		Long: `Compares 2 to 16 run directories: each run's answer as the sweep stated it
(interval, reproducible or not, the spread of outcomes above it), the latency
at the answer, what limited it and the host accounting there, and whether the
runs can be compared at all: it names every field of the plan whose value
differs between them, and says when their agents ran on other machines or in
other roles (their answers then measure different things). A run whose
answer is not to be used (contradicted, disturbed, interrupted) says why.
--html writes a self-contained page with the runs' sweeps and their latency
distributions at the answer overlaid.`,
		Example: `  cpsweep compare runs/*-demo
  cpsweep compare --json runs/20261127T032700Z-demo runs/20261127T034100Z-demo
  cpsweep compare --html compare.html runs/*-nightly
  # in CI: exit status 9 when the new run's answer or latency changed beyond both runs' ranges
  cpsweep compare --fail-on-change runs/*-baseline runs/*-candidate`,
		Args: cobra.RangeArgs(2, compare.MaxRuns),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := compare.Open(args)
			if err != nil {
				return err
			}
			if html != "" {
				if err := report.WriteComparison(filepath.Clean(html), c); err != nil {
					return fmt.Errorf("write %s: %w", html, err)
				}
				fmt.Fprintf(os.Stderr, "wrote %s\n", html)
			}
			if jsonOut {
				if err := cli.WriteJSON(os.Stdout, c); err != nil {
					return err
				}
			} else {
				c.WriteText(termsafe.NewWriter(os.Stdout))
			}
			if failOnChange {
				if n := c.ChangedFigures(); n > 0 {
					fmt.Fprintf(os.Stderr, "cpsweep compare: %d figure(s) changed beyond the runs' own ranges (exit status %d, --fail-on-change)\n", n, sweep.ExitChanged)
					*code = sweep.ExitChanged
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&failOnChange, "fail-on-change", false, "exit with status 9 when a later run's answer or latency is a CHANGE (the runs' own ranges do not overlap): a gate for CI")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the comparison as JSON")
	cmd.Flags().StringVar(&html, "html", "", "also write the comparison as a self-contained HTML page here")
	return cmd
}
