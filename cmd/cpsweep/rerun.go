package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cloudprofiler-go/cp/cmd/internal/cli"
	"github.com/cloudprofiler-go/cp/internal/readfile"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/sweep"
)

func rerunCommand(code *int) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "rerun RUN_DIR [-- sweep flags]",
		Short: "Repeat a sweep from the plan its run directory kept (plan.yaml)",
		Long: `Runs the sweep again with the settings it ran with: cpsweep --plan
RUN_DIR/plan.yaml, plus the flags after --, which win over the plan's. The
new run gets a run directory of its own; cpsweep compare then says whether
the two answers differ by more than their own repeats' spread. The plan
leaves the token out: give --token-file after -- when the agents need one.
Relative paths in the plan (--profile, --events) are read from the
current directory, as when the sweep first ran.

A run directory may come from someone else: rerun first shows its plan,
every file it reads, where it writes and every host it contacts, and goes
on only when told (--yes, or y on a terminal); with no terminal and no
--yes it refuses (exit status 4). Only plan.yaml is read, and only when it
is a regular file inside RUN_DIR (not a link).`,
		Example: `  cpsweep rerun runs/20261129T080000Z-demo
  cpsweep rerun --yes runs/20261129T080000Z-demo -- --name demo-again --token-file token
  cpsweep compare runs/20261129T080000Z-demo runs/*-demo-again`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			*code = sweep.ExitInvalidPlan
			dir := args[0]
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return fmt.Errorf("run directory %s: not a directory", termsafe.Escape(dir))
			}
			plan, err := readfile.LimitedInDir(dir, rundir.PlanFile, cli.MaxPlanFile)
			if err != nil {
				return fmt.Errorf("%s has no plan to repeat (%w): it was written before run directories kept plan.yaml, or its plan.yaml is not a file of its own", termsafe.Escape(dir), err)
			}
			extra := args[1:]
			o, fs, reserved, err := parseSweepFlags(extra, []string{"plan"})
			if err != nil {
				return err
			}
			if len(reserved) > 0 {
				return errors.New("rerun gives the run directory's plan: leave --plan out")
			}
			planPath := rundir.Path(dir, rundir.PlanFile)
			set, err := cli.ApplyPlanText(fs, planPath, plan, notInPlans...)
			if err != nil {
				return err
			}
			w := termsafe.NewWriter(os.Stderr)
			fmt.Fprintf(w, "cpsweep rerun: the plan of %s\n", termsafe.Escape(dir))
			writeSettings(w, plan)
			cli.PlanReach(fs, set, sweepFileOf).Write(w)
			if err := cli.Confirm(os.Stdin, w, yes || o.yes, "the plan of "+termsafe.Escape(dir)); err != nil {
				return err
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			return runSweepChild(code, self, append([]string{"--plan", planPath, "--yes"}, extra...))
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "go on without asking, after the plan and what it reads, writes and contacts are shown")
	return cmd
}

// writeSettings shows a plan's settings, its comments left out, escaped.
func writeSettings(w io.Writer, plan []byte) {
	sc := bufio.NewScanner(bytes.NewReader(plan))
	for n := 0; sc.Scan() && n < 200; n++ {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		fmt.Fprintf(w, "  %s\n", termsafe.Escape(line))
	}
}
