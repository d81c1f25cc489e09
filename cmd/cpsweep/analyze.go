package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cloudprofiler-go/cp/analysis"
	"github.com/cloudprofiler-go/cp/analysis/activity"
	"github.com/cloudprofiler-go/cp/analysis/report"
	"github.com/cloudprofiler-go/cp/cmd/internal/cli"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
	"github.com/cloudprofiler-go/cp/rundir"
)

const analyzeLong = `Reads RUNDIR/profiles/<node>/ (collected by cpsweep --profile) and
RUNDIR/relation.json (cpsweep --clock), joins every tuple's records by id
across nodes, translates every TSC value into the reference node's time, and
reports for each pair of points (emit -> receive -> deserialized -> consumed,
and end to end) the latency distribution and the distribution of its strict
error bound, split into same-node and cross-node pairs; throughput over time
from the counters; and the return-trip method's round trips (ret-start
channels). Writes RUNDIR/analysis.json and RUNDIR/analysis.csv.

With --pag it also builds the program activity graph from the stages'
activity channels (docs/activity.md): critical participation per window,
worker and activity, per-window metrics, k-hops from every wait and any
invariants given, into RUNDIR/pag.json and RUNDIR/pag.csv.

Agents on one machine read one clock, so their pairs are "same machine",
exact. --relate-same-machine bounds them through the TSC relation instead,
as if each agent were a machine of its own ("cross node"): on network
namespaces or containers of one host this checks the relation's bounds
against the one clock's truth.`

func analyzeCommand() *cobra.Command {
	var pairs []string
	var lag time.Duration
	var jsonOut, partial, pag, relateAll, verbose, quiet bool
	var pf pagFlags
	cmd := &cobra.Command{
		Use:   "analyze RUNDIR",
		Short: "Join the profiler logs of a run across nodes: per-pair latency with error bounds",
		Long:  analyzeLong,
		Example: `  cpsweep analyze runs/20261122T004900Z-demo
  cpsweep analyze --pair emit,consumed --json runs/20261122T004900Z-demo
  cpsweep analyze --pag --window 50ms --progress-max 100ms runs/20261122T004900Z-demo
  cpsweep analyze --relate-same-machine runs/20261122T004900Z-netns`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			var o analysis.Options
			o.Lag, o.RelateSameMachine = lag, relateAll
			for _, p := range pairs {
				a, b, ok := strings.Cut(p, ",")
				if !ok || a == "" || b == "" {
					return fmt.Errorf("--pair %q: want FROM,TO (points such as emit,consumed)", p)
				}
				o.Pairs = append(o.Pairs, [2]string{a, b})
			}
			d, err := rundir.Open(args[0])
			if err != nil {
				return err
			}
			if err := refuseDamaged(d.Problems, partial); err != nil {
				return err
			}
			lag = lagFor(cmd, d, lag)
			o.Lag = lag
			// The activity graph's pass first: it joins the message pairs,
			// and the analysis takes those joins instead of reading and
			// joining the logs a second time.
			// A graph that cannot be built is an error, after the
			// analysis is written (it joins the logs itself then).
			var pr *activity.Report
			var pagErr error
			if pag {
				pr, o.Reuse, pagErr = buildPAG(d, &pf, lag, partial, output{verbose: verbose, quiet: quiet})
			}
			rep, err := analysis.Analyze(d, o)
			if err != nil {
				return err
			}
			if err := refuseDamaged(rep.Damaged, partial); err != nil {
				return err
			}
			if err := rep.WriteFiles(d.Path); err != nil {
				return err
			}
			if pagErr != nil {
				return pagErr
			}
			return writeAnalysis(d, rep, pr, output{json: jsonOut, verbose: verbose, quiet: quiet})
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&pairs, "pair", nil, "join these points FROM,TO (repeat; default: consecutive standard points and end to end)")
	f.DurationVar(&lag, "lag", analysis.DefaultLag, "the largest latency expected between two points: a tuple later than this counts as missing (memory grows with it);\nwhen the profiled trial was overloaded, its length instead of this default")
	f.BoolVar(&jsonOut, "json", false, "print the analysis as JSON")
	f.BoolVar(&partial, "partial", false, "analyse what is intact in a run directory with missing or damaged files (listed in the output) instead of refusing it")
	f.BoolVar(&relateAll, "relate-same-machine", false, "bound pairs of agents on one machine through the TSC relation, as if each were a machine of its own (a check of the bounds on namespaces or containers of one host)")
	f.BoolVar(&pag, "pag", false, "also build the program activity graph: pag.json and pag.csv (docs/activity.md)")
	f.BoolVarP(&verbose, "verbose", "v", false, "with --pag, say why the analyses differ when they do (the whole agreement statement)")
	f.BoolVarP(&quiet, "quiet", "q", false, "write the files and print only the analyses' agreement (with --pag) and errors")
	pf.register(f, true)
	return cmd
}

// refuseDamagedQuietly is refuseDamaged for problems already printed.
func refuseDamagedQuietly(damaged []string, partial bool) error {
	if len(damaged) == 0 || partial {
		return nil
	}
	return fmt.Errorf("the run directory has %d missing or damaged part(s) (listed above): pass --partial to use what is intact", len(damaged))
}

// refuseDamaged lists the missing or damaged files of a run directory and
// fails, unless the user asked for what is intact (--partial).
func refuseDamaged(damaged []string, partial bool) error {
	if len(damaged) == 0 {
		return nil
	}
	for _, p := range damaged {
		fmt.Fprintf(os.Stderr, "cpsweep: %s\n", termsafe.Escape(p))
	}
	if partial {
		fmt.Fprintf(os.Stderr, "cpsweep: --partial: %d problem(s) above; using what is intact\n", len(damaged))
		return nil
	}
	return fmt.Errorf("the run directory has %d missing or damaged part(s) (listed above): pass --partial to use what is intact", len(damaged))
}

func reportCommand() *cobra.Command {
	var partial bool
	cmd := &cobra.Command{
		Use:   "report RUNDIR",
		Short: "Render a run directory as one self-contained HTML page (report.html)",
		Long: `Writes RUNDIR/report.html: the sweep curve, every trial's verdict,
lateness and latency, the latency distribution at the answer (also written
as .hgrm files beside the page, for HdrHistogram's plotter), the per-pair
tuple latency with its error bound (from
analysis.json, or analysing the profiles when there is none), the clock
methods side by side, throughput over time and the configuration. The page
is self-contained (inline SVG, no network) and checks its own plots when it
loads (<body data-check="ok">).`,
		Example: `  cpsweep report runs/20261122T004900Z-demo && xdg-open runs/20261122T004900Z-demo/report.html`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			d, err := rundir.Open(args[0])
			if err != nil {
				return err
			}
			path, damaged, err := report.Write(d, partial)
			var dmg *report.DamagedError
			if errors.As(err, &dmg) || (err == nil && len(damaged) > 0) {
				for _, p := range damaged {
					fmt.Fprintf(os.Stderr, "cpsweep: %s\n", termsafe.Escape(p))
				}
			}
			if err != nil {
				return err
			}
			if len(damaged) > 0 {
				fmt.Fprintf(os.Stderr, "cpsweep: --partial: %d problem(s) above; the page renders what is intact\n", len(damaged))
			}
			fmt.Fprintf(os.Stderr, "wrote %s\n", path)
			return nil
		},
	}
	cmd.Flags().BoolVar(&partial, "partial", false, "render what is intact in a run directory with missing or damaged files (the page lists them) instead of refusing it")
	return cmd
}

// buildPAG builds the activity graph and writes pag.json and pag.csv; the
// Run it returns holds its joins for the analysis to reuse. What the
// joins noted (tuples left out, activities snapped) is printed with -v,
// and counted in a line otherwise; pag.json keeps it either way.
func buildPAG(d *rundir.Dir, pf *pagFlags, lag time.Duration, partial bool, out output) (*activity.Report, *analysis.Joins, error) {
	pf.lag = lag
	pr, run, problems, damaged, err := pf.build(d)
	if err != nil {
		return nil, nil, fmt.Errorf("program activity graph: %w", err)
	}
	notes := 0
	note := func(p string) {
		notes++
		if out.verbose {
			fmt.Fprintf(os.Stderr, "cpsweep: pag: %s\n", termsafe.Escape(p))
		}
	}
	defer func() {
		if notes > 0 && !out.verbose && !out.quiet {
			fmt.Fprintf(os.Stderr, "cpsweep: pag: %d note(s) on joining the logs (pag.json: problems; -v prints them)\n", notes)
		}
	}()
	for _, p := range problems {
		note(p)
	}
	if err := refuseDamagedQuietly(damaged, partial); err != nil {
		return nil, nil, err
	}
	for _, p := range pr.AddRunnableWait(d, run) {
		note(p)
		problems = append(problems, p)
	}
	if d.Summary != nil {
		pr.Agreement = pr.AgreementWith(d.Summary)
	}
	if err := activity.WriteFiles(d.Path, pr, problems); err != nil {
		return nil, nil, err
	}
	return pr, run, nil
}

// output is how analyze prints: JSON, the text (verbose: the agreement's
// whole statement), or quietly only the agreement.
type output struct{ json, verbose, quiet bool }

// writeAnalysis prints the analysis (and the activity graph, when built).
func writeAnalysis(d *rundir.Dir, rep *analysis.Report, pr *activity.Report, out output) error {
	if out.quiet && !out.json {
		if pr != nil && pr.Agreement != nil {
			fmt.Fprintln(termsafe.NewWriter(os.Stdout), pr.Agreement.Short)
		}
		return nil
	}
	if out.json {
		if pr != nil {
			return cli.WriteJSON(os.Stdout, map[string]any{"analysis": rep, "pag": pr})
		}
		return cli.WriteJSON(os.Stdout, rep)
	}
	rep.WriteText(termsafe.NewWriter(os.Stdout))
	fmt.Fprintf(os.Stderr, "wrote %s and %s\n", rundir.Path(d.Path, rundir.AnalysisFile), rundir.Path(d.Path, rundir.AnalysisCSVFile))
	if pr != nil {
		fmt.Println()
		pr.WriteText(termsafe.NewWriter(os.Stdout), out.verbose)
		fmt.Fprintf(os.Stderr, "wrote %s and %s\n", rundir.Path(d.Path, rundir.PAGFile), rundir.Path(d.Path, rundir.PAGCSVFile))
	}
	return nil
}

// lagFor is --lag when given; else what the run's profiled trial needs
// (an overloaded one queues for longer: analysis.LagFor).
func lagFor(cmd *cobra.Command, d *rundir.Dir, lag time.Duration) time.Duration {
	if cmd.Flags().Changed("lag") {
		return lag
	}
	return analysis.LagFor(d)
}
