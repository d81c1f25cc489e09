package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cloudprofiler-go/cp/cmd/internal/cli"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/sweep"
)

func rerunCommand(code *int) *cobra.Command {
	return &cobra.Command{
		Use:   "rerun RUN_DIR [-- sweep flags]",
		Short: "Repeat a sweep from the plan its run directory kept (plan.yaml)",
		Long: `Runs the sweep again with the settings it ran with: cpsweep --plan
RUN_DIR/plan.yaml, plus the flags after --, which win over the plan's. The
new run gets a run directory of its own; cpsweep compare then says whether
the two answers differ by more than their own repeats' spread. The plan
leaves the token out: give --token-file after -- when the agents need one.
Relative paths in the plan (--profile, --events) are read from the
current directory, as when the sweep first ran.`,
		Example: `  cpsweep rerun runs/20261129T080000Z-demo
  cpsweep rerun runs/20261129T080000Z-demo -- --name demo-again --token-file token
  cpsweep compare runs/20261129T080000Z-demo runs/*-demo-again`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			*code = sweep.ExitInvalidPlan
			d, err := rundir.Open(args[0])
			if err != nil {
				return err
			}
			if _, err := d.ReadFile(rundir.PlanFile, cli.MaxPlanFile); err != nil {
				return fmt.Errorf("%s has no plan to repeat (%w): it was written before run directories kept plan.yaml", args[0], err)
			}
			extra := args[1:]
			if _, set, err := parseSweepFlags(extra, []string{"plan"}); err != nil {
				return err
			} else if len(set) > 0 {
				return errors.New("rerun gives the run directory's plan: leave --plan out")
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "cpsweep rerun: the plan of %s\n", d.Path)
			return runSweepChild(code, self, append([]string{"--plan", rundir.Path(d.Path, rundir.PlanFile)}, extra...))
		},
	}
}
