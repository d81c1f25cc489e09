package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cloudprofiler-go/cp/analysis"
	"github.com/cloudprofiler-go/cp/analysis/activity"
	"github.com/cloudprofiler-go/cp/cmd/internal/cli"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
	"github.com/cloudprofiler-go/cp/rundir"
)

// ExitViolations is cpsweep invariants' status when an invariant did not
// hold (0: all held; 1: the analysis failed).
const ExitViolations = 2

// pagFlags are the program activity graph's settings, shared by
// analyze --pag and invariants.
type pagFlags struct {
	window, wait, messageDelay           time.Duration
	hops                                 int
	messageMax, operatorMax, progressMax time.Duration
	everyWindow                          bool
	progressWorker                       string
	lag                                  time.Duration
}

func (p *pagFlags) register(f *pflag.FlagSet, withHops bool) {
	f.DurationVar(&p.window, "window", time.Duration(activity.DefaultWindowNs), "the graph's fixed window (SnailTrail 1: the harness has no epochs)")
	f.DurationVar(&p.wait, "wait-threshold", time.Duration(activity.DefaultWaitNs), "a gap between two logged activities longer than this is waiting, shorter is busy (ST2: 15us)")
	f.DurationVar(&p.messageDelay, "message-delay", time.Duration(activity.DefaultMessageDelayNs), "clip longer messages to this (SnailTrail's message delay): a bucket queued while its receiver was busy joins the receiver's timeline there (0: never clip)")
	if withHops {
		f.IntVar(&p.hops, "hops", activity.DefaultHops, "k-hops: how far to walk back from each waiting activity (0: none)")
	}
	f.DurationVar(&p.messageMax, "message-max", 0, "invariant: no bucket takes longer than this between two workers, by the lower bound of its time (0: off)")
	f.DurationVar(&p.operatorMax, "operator-max", 0, "invariant: no single send, decode or consume activity lasts longer (0: off)")
	f.DurationVar(&p.progressMax, "progress-max", 0, "invariant: the progress worker never goes longer without finishing a busy activity (0: off)")
	f.BoolVar(&p.everyWindow, "progress-every-window", false, "invariant: at least one progress event in every window")
	f.StringVar(&p.progressWorker, "progress-worker", "", "the worker whose busy activities are progress (default: the first */consumer)")
}

// build reads the run directory into a trace and analyses it.
func (p *pagFlags) build(d *rundir.Dir) (rep *activity.Report, run *analysis.Joins, problems, damaged []string, err error) {
	if p.window <= 0 || p.wait < 0 || p.messageDelay < 0 {
		return nil, nil, nil, nil, fmt.Errorf("--window must be positive, --wait-threshold and --message-delay not negative (got %v, %v, %v)", p.window, p.wait, p.messageDelay)
	}
	if p.messageMax < 0 || p.operatorMax < 0 || p.progressMax < 0 || p.hops < 0 {
		return nil, nil, nil, nil, fmt.Errorf("--message-max, --operator-max, --progress-max and --hops may not be negative")
	}
	in, problems, err := activity.Open(d, p.lag)
	if err != nil {
		return nil, nil, problems, nil, err
	}
	l := activity.Limits{MessageMaxNs: p.messageMax.Nanoseconds(), OperatorMaxNs: p.operatorMax.Nanoseconds(),
		ProgressMaxNs: p.progressMax.Nanoseconds(), EveryWindow: p.everyWindow, ProgressWorker: -1}
	if p.progressMax > 0 || p.everyWindow {
		if l.ProgressWorker = progressWorker(in.Workers, p.progressWorker); l.ProgressWorker < 0 {
			return nil, nil, problems, nil, fmt.Errorf("progress invariants need a progress worker: %q is not one of %v (--progress-worker)", p.progressWorker, in.Workers)
		}
	}
	rep, problems, err = in.Analyze(activity.Options{WindowNs: p.window.Nanoseconds(), WaitNs: p.wait.Nanoseconds(), MessageDelayNs: p.messageDelay.Nanoseconds()}, p.hops, l)
	return rep, in.Joins(), problems, in.Damaged, err
}

// progressWorker is the named worker, or the first consumer.
func progressWorker(workers []string, name string) int {
	for i, w := range workers {
		if (name != "" && w == name) || (name == "" && filepath.Base(w) == "consumer") {
			return i
		}
	}
	return -1
}

func invariantsCommand(code *int) *cobra.Command {
	var p pagFlags
	var jsonOut, partial bool
	cmd := &cobra.Command{
		Use:   "invariants RUNDIR",
		Short: "Check latency, operator and progress invariants on a run's activity graph",
		Long: `Builds the program activity graph of a profiled run (its stages' activity
channels and per-tuple points, docs/activity.md) and checks the invariants
given (ST2 §5.1.3):

  --message-max D    no bucket between two workers took longer than D. It
                     fires only when the lower bound of the bucket's time
                     (measured minus the clock relation's error bound) is
                     above D: clock error can never raise a false alarm.
  --operator-max D   no single send, decode or consume activity lasted longer.
  --progress-max D   the consumer (--progress-worker) never went longer than D
                     without finishing work.
  --progress-every-window   at least one progress event in every --window.

Prints every violation with its time and worker. Exit status: 0 when every
invariant held, 2 when at least one did not, 1 when the analysis failed.`,
		Example: `  cpsweep invariants runs/20261124T054737Z-run1 --message-max 5ms --progress-max 100ms
  cpsweep invariants --json --operator-max 1ms runs/*-run1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			if p.messageMax == 0 && p.operatorMax == 0 && p.progressMax == 0 && !p.everyWindow {
				return fmt.Errorf("no invariant given: set at least one of --message-max, --operator-max, --progress-max, --progress-every-window")
			}
			d, err := rundir.Open(args[0])
			if err != nil {
				return err
			}
			if err := refuseDamaged(d.Problems, partial); err != nil {
				return err
			}
			rep, _, problems, damaged, err := p.build(d)
			for _, pr := range problems {
				fmt.Fprintf(os.Stderr, "cpsweep: %s\n", termsafe.Escape(pr))
			}
			if err != nil {
				return err
			}
			if err := refuseDamagedQuietly(damaged, partial); err != nil {
				return err
			}
			if jsonOut {
				if err := cli.WriteJSON(os.Stdout, map[string]any{"run": d.Path, "limits": rep.Limits, "violations": rep.Violations, "problems": problems}); err != nil {
					return err
				}
			} else {
				rep.WriteText(termsafe.NewWriter(os.Stdout), true)
			}
			if len(rep.Violations) > 0 {
				*code = ExitViolations
			}
			return nil
		},
	}
	f := cmd.Flags()
	p.register(f, false)
	f.DurationVar(&p.lag, "lag", analysis.DefaultLag, "the largest latency expected between two points (as analyze --lag)")
	f.BoolVar(&jsonOut, "json", false, "print the violations as JSON")
	f.BoolVar(&partial, "partial", false, "check what is intact in a run directory with missing or damaged files")
	return cmd
}
