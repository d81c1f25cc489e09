package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/driver/embedded"
	"github.com/cloudprofiler-go/cp/sweep"
)

func demoCommand(code *int) *cobra.Command {
	cmd := &cobra.Command{Use: "demo", Short: "Sweeps that need nothing installed (cpsweep demo nats)"}
	cmd.AddCommand(demoNATSCommand(code))
	return cmd
}

// runSweepChild runs a sweep as a child of this process (self), on this
// terminal; its exit status is the command's (the sweep said why).
func runSweepChild(code *int, self string, args []string) error {
	child := exec.Command(self, args...)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := child.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		*code = sweep.ExitAnswer
		return nil
	case errors.As(err, &exit):
		*code = exit.ExitCode()
		return nil
	}
	*code = sweep.ExitError
	return fmt.Errorf("run the sweep: %w", err)
}

func demoNATSCommand(code *int) *cobra.Command {
	var drv, storage string
	cmd := &cobra.Command{
		Use:   "nats [flags] [-- sweep flags]",
		Short: "Sweep through a NATS server (JetStream) run inside this process",
		Long: `Starts a NATS server with JetStream inside this process (its store in a
temporary folder, removed at the end) and runs a sweep through it with local
agents: cpsweep --sut jetstream://127.0.0.1:PORT/cp plus the flags after --.
The senders publish every bucket into the broker, the receiver consumes it,
and every tuple's latency through the broker is measured from its intended
send time. The broker shares this host's CPUs with the agents: the demo names
this process as the system under test's (--sut-process cpsweep, which also
covers the sweep's own small controller), so its CPU is the system's, not a
disturbance. The answer is this host's broker beside the harness, not a
deployment's (docs/brokers.md).`,
		Example: `  cpsweep demo nats -- --duration 2s --warmup 500ms --start 50k --bucket 100
  cpsweep demo nats --driver nats -- --duration 2s     # core NATS: no persistence, no acks`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			*code = sweep.ExitInvalidPlan
			if drv != driver.NATS && drv != driver.JetStream {
				return fmt.Errorf("--driver %q: nats or jetstream", drv)
			}
			if storage != "file" && storage != "memory" {
				return fmt.Errorf("--storage %q: file or memory", storage)
			}
			_, _, set, err := parseSweepFlags(args, []string{"sut", "sender", "senders-from"})
			if err != nil {
				return err
			}
			if len(set) > 0 {
				return fmt.Errorf("the demo gives --sut and starts the agents itself: leave %s out", strings.Join(set, ", "))
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			*code = sweep.ExitError
			srv, err := embedded.Start()
			if err != nil {
				return err
			}
			defer srv.Close()
			sut := fmt.Sprintf("%s://%s/cp", drv, srv.Addr())
			if drv == driver.JetStream {
				sut += "?storage=" + storage
			}
			fmt.Fprintf(os.Stderr, "cpsweep demo: NATS server %s with JetStream on %s, inside this process (store in a temporary folder); sweeping %s\n", srv.Version(), srv.Addr(), sut)
			sweepArgs := append([]string{"--sut", sut}, args...)
			// The broker runs in this process: its CPU is the system's.
			sweepArgs = append(sweepArgs, "--sut-process", "cpsweep")
			return runSweepChild(code, self, sweepArgs)
		},
	}
	cmd.Flags().StringVar(&drv, "driver", driver.JetStream, "jetstream (persisted, acknowledged publishes) or nats (core: at most once)")
	cmd.Flags().StringVar(&storage, "storage", "file", "JetStream storage: file or memory")
	return cmd
}
