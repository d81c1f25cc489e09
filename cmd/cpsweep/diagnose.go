package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cloudprofiler-go/cp/cmd/internal/cli"
	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/internal/readfile"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/rundir"
	sendtally "github.com/cloudprofiler-go/cp/sender/tally"
	"github.com/cloudprofiler-go/cp/sweep/rundiag"
	"github.com/cloudprofiler-go/cp/tsc/probing"
)

func diagnoseCommand() *cobra.Command {
	var o rundiag.Options
	var jsonOut, relay, partial bool
	var relation, output string
	cmd := &cobra.Command{
		Use:   "diagnose RUNDIR | RESULT.json...",
		Short: "Say why the limit is where it is: stalls and the limiting stage of every trial",
		Long: `Labels every stage of every snapshot HEALTHY, DONTCARE, BLOCKED or STALLED
(FlowDiagnoser), confirms stalls over consecutive snapshots, and names the
stage that limits throughput: busy and not blocked while the stage before
it is blocked or its queue grows. The pipeline is sender threads -> network
streams -> lanes -> consumer, from the stage accounting every dgsend and
dgrecv records (--stage-period); the hosts' samples are aligned through
the run's TSC relation (relation.json) when there is one.

With a run directory it writes RUNDIR/diagnosis.json (the report shows it
as a label timeline per stage). With the JSON results of dgsend and dgrecv
(--json -o FILE) it diagnoses that one run. See docs/diagnosis.md.`,
		Example: `  cpsweep diagnose runs/20261122T004900Z-demo
  cpsweep diagnose --confirm 3 --period 200ms runs/20261122T004900Z-demo
  dgrecv --stall consumer@5s+1s -o r.json & dgsend --rate 1M --duration 10s -o s.json
  cpsweep diagnose s.json r.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			if o.Confirm < 1 || o.Confirm > 1000 {
				return fmt.Errorf("--confirm %d: want 1..1000 snapshots", o.Confirm)
			}
			if st, err := os.Stat(args[0]); err == nil && st.IsDir() {
				if len(args) > 1 {
					return fmt.Errorf("one run directory at a time (got %d arguments)", len(args))
				}
				return diagnoseDir(args[0], o, jsonOut, partial)
			}
			return diagnoseFiles(args, o, relay, relation, output, jsonOut)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Confirm, "confirm", diagnose.DefaultConfirm, "consecutive STALLED snapshots that confirm a stall")
	f.DurationVar(&o.Period, "period", 0, "analyse snapshots this far apart: a multiple of the recorded --stage-period (0: as recorded)")
	f.BoolVar(&jsonOut, "json", false, "print the diagnosis as JSON")
	f.BoolVar(&partial, "partial", false, "diagnose what is intact in a run directory with missing or damaged files instead of refusing it")
	f.BoolVar(&relay, "relay", false, "result files: a system under test sat between the senders and the receivers")
	f.StringVar(&relation, "relation", "", "result files: align the hosts through this TSC relation (cpsweep clock relate); default: wall clocks")
	f.StringVarP(&output, "output", "o", "", "result files: also write the diagnosis (JSON) here")
	return cmd
}

func diagnoseDir(dir string, o rundiag.Options, jsonOut, partial bool) error {
	// The one reader of run directories: its format version and its
	// damaged parts, as analyze and report see them (a damaged
	// diagnosis.json is what this command replaces, so it does not count).
	d, err := rundir.Open(dir)
	if err != nil {
		return err
	}
	var damaged []string
	for _, p := range d.Problems {
		if !strings.Contains(p, rundir.DiagnosisFile) {
			damaged = append(damaged, p)
		}
	}
	if err := refuseDamaged(damaged, partial); err != nil {
		return err
	}
	rf, err := rundiag.Run(dir, o)
	if rf == nil {
		return err
	}
	if werr := rundiag.Write(dir, rf); werr != nil {
		return werr
	}
	if jsonOut {
		if jerr := cli.WriteJSON(os.Stdout, rf); jerr != nil {
			return jerr
		}
	} else {
		writeRunDiagnosis(termsafe.NewWriter(os.Stdout), rf)
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", rundir.Path(dir, rundir.DiagnosisFile))
	return err
}

func writeRunDiagnosis(w io.Writer, rf *diagnose.RunFile) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "trial\tpurpose\ttarget\tverdict\tlimited by\tconfirmed stalls")
	for _, t := range rf.Trials {
		v := "pass"
		if !t.Pass {
			v = "FAIL"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", t.N, t.Purpose, numfmt.Rate(t.Rate), v, t.Limiting, stallList(t.Diagnosis))
	}
	tw.Flush()
	for _, s := range rf.Skipped {
		fmt.Fprintf(w, "not diagnosed: %s\n", s)
	}
}

func stallList(d *diagnose.Diagnosis) string {
	if len(d.Stalls) == 0 {
		return "none"
	}
	var parts []string
	for _, s := range d.Stalls {
		parts = append(parts, fmt.Sprintf("%s %v", s.Stage, time.Duration(s.Seconds*float64(time.Second)).Round(time.Millisecond)))
	}
	if len(parts) > 6 {
		parts = append(parts[:6], fmt.Sprintf("and %d more", len(parts)-6))
	}
	return strings.Join(parts, ", ")
}

// diagnoseFiles diagnoses one run from dgsend's and dgrecv's JSON results.
func diagnoseFiles(paths []string, o rundiag.Options, relay bool, relation, output string, jsonOut bool) error {
	out := &rundir.Outcome{}
	for _, p := range paths {
		if err := readResult(p, out); err != nil {
			return err
		}
	}
	if o.Period > 0 {
		if err := rundiag.Resample(out, o.Period); err != nil {
			return err
		}
	}
	var align rundiag.Align
	if relation != "" {
		rf, err := probing.ReadRelationFile(relation)
		if err != nil {
			return err
		}
		align = rundiag.AlignWith(rf)
	}
	d, err := rundiag.Outcome(out, relay, align, diagnose.Options{Confirm: o.Confirm})
	if err != nil {
		return err
	}
	if output != "" {
		if err := cli.WriteJSONFile(output, d); err != nil {
			return err
		}
	}
	if jsonOut {
		return cli.WriteJSON(os.Stdout, d)
	}
	writeDiagnosis(termsafe.NewWriter(os.Stdout), d)
	return nil
}

// readResult reads a dgsend or dgrecv JSON result (told apart by their
// fields) into the outcome.
func readResult(path string, out *rundir.Outcome) error {
	b, err := readfile.Limited(path, 256<<20)
	if err != nil {
		return err
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return fmt.Errorf("%s: not a JSON result: %w", path, err)
	}
	switch {
	case probe["target_rate_tuples_per_s"] != nil:
		var r sendtally.Result
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		out.Senders = append(out.Senders, &r)
	case probe["received_tuples"] != nil:
		var r tally.Result
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		out.Receivers = append(out.Receivers, &r)
	default:
		return fmt.Errorf("%s: neither a dgsend nor a dgrecv result (write one with --json -o FILE)", path)
	}
	return nil
}

func writeDiagnosis(w io.Writer, d *diagnose.Diagnosis) {
	fmt.Fprintf(w, "snapshots: %d every %v (%s)\n", len(d.Snapshots), time.Duration(d.PeriodNs), d.Aligned)
	if d.Limiting == "none" {
		fmt.Fprintln(w, "limited by: no stage identified (none was busy at least 80% with work waiting)")
	} else {
		fmt.Fprintf(w, "limited by: %s (%s)\n", d.Limiting, d.Evidence)
	}
	fmt.Fprintf(w, "confirmed stalls: %s\n\n", stallList(d))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "stage\tHEALTHY\tDONTCARE\tBLOCKED\tSTALLED\tstalls\tmean\tlongest\tlimiting")
	for _, s := range d.Summary {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%d\n", s.Stage, s.Labels["HEALTHY"], s.Labels["DONTCARE"], s.Labels["BLOCKED"], s.Labels["STALLED"],
			s.Stalls, secs(s.MeanStall), secs(s.MaxStall), s.Limiting)
	}
	tw.Flush()
}

func secs(s float64) string {
	if s == 0 {
		return "-"
	}
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}
