package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cloudprofiler-go/cp/capacity"
	"github.com/cloudprofiler-go/cp/cmd/internal/cli"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/tsc"
)

func capacityCommand() *cobra.Command {
	p := capacity.Plan{Bucket: 100, Scenario: "synthetic-100", Duration: 2 * time.Second, Repeats: 3}
	var jsonOut bool
	var cpus cli.CPUChoice
	var otherCPUs string
	cmd := &cobra.Command{
		Use:   "capacity STAGE",
		Short: "Measure one stage's capacity alone (the ground truth for its service-rate estimates)",
		Long: `cpsweep capacity measures what one receiver stage can process when nothing else
limits it, as RaftLib measures a kernel by itself from a resident data source:

  consumer  the consumer with --work per tuple, fed from a lane whose socket was
            filled beforehand (in process), so its ring never runs dry
  lane      a lane receiving and decoding pre-recorded buckets from a socket
            filled beforehand, its consumer doing no work

A short calibration run sizes the runs to about --duration each; the answer is
the median of --repeats runs. A run in which the stage was starved or blocked
for more than 5% of its time did not measure it alone: that is an error, not a
number. Compare with the service_rates estimates of dgrecv --json or of a sweep
(docs/service-rate.md). The sender's capacity is dgsend --rate 0 into
dgrecv --drain (its emission rate).`,
		Example: `  # the consumer at 10 µs of work per tuple, buckets of 10 tuples
  cpsweep capacity consumer --work 10us --bucket 10

  # a lane decoding buckets of 100 synthetic tuples, as JSON
  cpsweep capacity lane --json

  # placed as in the runs it is compared with: the consumer alone on CPU 1
  # (dgrecv --cpus 0,1 --other-cpus 0)
  cpsweep capacity consumer --work 10us --bucket 10 --cpus 0,1 --other-cpus 0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			p.Stage = args[0]
			if p.Repeats < 1 || p.Repeats > 101 || p.Duration < 100*time.Millisecond || p.Duration > 10*time.Minute {
				return fmt.Errorf("--repeats must be 1..101 and --duration 100ms..10m, got %d and %v", p.Repeats, p.Duration)
			}
			if err := cli.ConfineOthers(otherCPUs); err != nil {
				return err
			}
			var err error
			if p.CPUs, err = cpus.Resolve(2); err != nil {
				return err
			}
			clock, err := tsc.NewClock(100 * time.Millisecond)
			if err != nil {
				return err
			}
			p.Clock = clock
			p.Logf = func(format string, a ...any) { fmt.Fprintf(os.Stderr, "capacity: "+format+"\n", a...) }
			res, err := capacity.Measure(p)
			if err != nil {
				return err
			}
			if jsonOut {
				return cli.WriteJSON(os.Stdout, res)
			}
			fmt.Printf("%s capacity: %s (median of %d runs; --work %v, buckets of %d)\n", res.Stage, numfmt.Rate(res.TuplesPerS), len(res.Runs), res.Work, res.Bucket)
			return nil
		},
	}
	f := cmd.Flags()
	f.DurationVar(&p.Work, "work", 0, "busy work per consumed tuple (as dgrecv --work)")
	f.IntVar(&p.Bucket, "bucket", p.Bucket, "tuples per message")
	f.StringVar(&p.Scenario, "scenario", p.Scenario, "workload (see dgsend --help)")
	f.DurationVar(&p.Duration, "duration", p.Duration, "each measured run, about")
	f.IntVar(&p.Repeats, "repeats", p.Repeats, "measured runs (the answer is their median)")
	f.BoolVar(&jsonOut, "json", false, "print the result as JSON")
	cli.CPUChoiceVar(f, &cpus, "cpus", "none", "CPUs for the lane then the consumer (as dgrecv --cpus): none, auto, or a list like 0,1")
	f.StringVar(&otherCPUs, "other-cpus", "none", "CPUs for every other thread (as dgrecv --other-cpus), e.g. 0")
	return cmd
}
