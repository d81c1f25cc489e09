package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cloudprofiler-go/cp/cmd/internal/cli"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/tsc/probing"
	"github.com/cloudprofiler-go/cp/tsc/probing/clockmetrics"
	"github.com/cloudprofiler-go/cp/tsc/probing/probeapi"
)

func clockCommand(code *int) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "clock",
		Short: "Relate the TSCs of several nodes with strict error bounds",
		Long: `Inter-node durations with the TSC (the paper's §3 and §5.2, and tighter):

  1. run "cpsweep clock client" on every node (a UDP probe responder plus a
     small HTTP control API);
  2. before the experiment, "cpsweep clock probe" asks every ordered pair of
     clients for round trips and writes a session file; probe again after it;
  3. "cpsweep clock relate" turns the sessions into a relation file: per node,
     the paper's MinRTT relation (ratio r, error e = MinRTT/2) and the tighter
     relation from every probe (an interval of slopes; no bound at all if no
     straight line fits, e.g. after a clock step);
  4. "cpsweep clock translate" maps a node's TSC value into the reference
     node's domain with both bounds.`,
	}
	cmd.AddCommand(clockClientCommand(), clockProbeCommand(), clockRelateCommand(), clockTranslateCommand(code), clockDurationCommand(), clockMonitorCommand())
	return cmd
}

func clockClientCommand() *cobra.Command {
	var listen, control, advertise, simulate, injectDelay string
	var tok cli.TokenFlags
	var calibrate time.Duration
	cmd := &cobra.Command{
		Use:   "client",
		Short: "Answer TSC probes and probe peers on request",
		Example: `  cpsweep clock client --listen 0.0.0.0:9200 --control 0.0.0.0:9201 --token-file token
  cpsweep clock client   # loopback: UDP 127.0.0.1:9200, control 127.0.0.1:9201`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true
			token, err := tok.Server(control)
			if err != nil {
				return err
			}
			f, err := tsc.DetectFeatures()
			if err == nil && f.Problem() != "" {
				fmt.Fprintf(os.Stderr, "clock client: warning: %s\n", f.Problem())
			}
			hz, err := tsc.Calibrate(calibrate)
			if err != nil {
				return err
			}
			now, err := tsc.SimulatedClock(simulate)
			if err != nil {
				return err
			}
			delay, err := tsc.InjectedDelay(injectDelay)
			if err != nil {
				return err
			}
			stamping := tsc.Stamping{Now: now, Delay: delay}
			r, err := tsc.NewResponderOpts(listen, stamping)
			if err != nil {
				return err
			}
			defer r.Close()
			c := &probeapi.Client{Responder: r, Hz: hz, Advertise: advertise, Stamping: stamping}
			srv, err := probeapi.Serve(control, token, c)
			if err != nil {
				return err
			}
			defer srv.Close()
			addr := srv.Addr()
			fmt.Fprintf(os.Stderr, "clock client ready: probes on udp %s, control http://%s/v1/clock (TSC %.6f GHz)\n", r.Addr(), addr, hz/1e9)
			<-cmd.Context().Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:9200", "UDP address for probes")
	f.StringVar(&control, "control", "127.0.0.1:9201", "HTTP control address (also /metrics)")
	f.StringVar(&advertise, "advertise", "", "UDP address peers should probe (default: --listen)")
	tok.Register(f, "shared token (required unless --control is loopback)")
	f.DurationVar(&calibrate, "calibrate", 200*time.Millisecond, "TSC frequency calibration time")
	f.StringVar(&simulate, "simulate", "", "testing: stamp with SCALE,OFFSET applied to the TSC (a simulated node's clock)")
	_ = f.MarkHidden("simulate")
	f.StringVar(&injectDelay, "inject-delay", "", "testing: delay every packet OUT[+JITTER] on leaving and IN[+JITTER] on arriving, in user space (e.g. 20us+200us,50us+400us)")
	_ = f.MarkHidden("inject-delay")
	return cmd
}

func clockProbeCommand() *cobra.Command {
	var pf probeFlags
	var output string
	cmd := &cobra.Command{
		Use:     "probe",
		Short:   "Probe every ordered pair of TSC clients once and write a session file",
		Example: `  cpsweep clock probe --node a=10.0.0.2:9201 --node b=10.0.0.3:9201 --count 100 -o before.json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true
			ns, settings, err := pf.resolve()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			ses, err := probeapi.Probe(ctx, ns, settings)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(os.Stderr, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "A\tB\tgood\tlost\tlate\tdup\tforeign\tmalformed\tMinRTT")
			for _, p := range ses.Pairs {
				best, _ := tsc.MinRTT(p.Probes)
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d ticks\n", p.A, p.B, p.Stats.Good, p.Stats.Lost, p.Stats.Late, p.Stats.Duplicates, p.Stats.Foreign, p.Stats.Malformed, best.RTT())
			}
			tw.Flush()
			return cli.WriteJSONFile(output, ses)
		},
	}
	pf.register(cmd, "round trips per ordered pair")
	cmd.Flags().StringVarP(&output, "output", "o", "-", "session file (- for standard output)")
	return cmd
}

// probeFlags are the flags of every command that probes TSC clients.
type probeFlags struct {
	nodes        []string
	count        int
	gap, timeout time.Duration
	tok          cli.TokenFlags
}

func (pf *probeFlags) register(cmd *cobra.Command, countHelp string) {
	f := cmd.Flags()
	f.StringArrayVar(&pf.nodes, "node", nil, "a TSC client as NAME=CONTROL_HOST:PORT (repeat; at least two)")
	f.IntVar(&pf.count, "count", 100, countHelp)
	f.DurationVar(&pf.gap, "gap", time.Millisecond, "pause between round trips")
	f.DurationVar(&pf.timeout, "timeout", 100*time.Millisecond, "give up on a reply after this long")
	pf.tok.Register(f, "token the clients expect")
}

// resolve reads the token and parses the nodes.
func (pf *probeFlags) resolve() ([]probing.Node, probeapi.Settings, error) {
	tok, err := pf.tok.Read()
	if err != nil {
		return nil, probeapi.Settings{}, err
	}
	var ns []probing.Node
	for _, spec := range pf.nodes {
		name, addr, ok := strings.Cut(spec, "=")
		if !ok || name == "" || addr == "" {
			return nil, probeapi.Settings{}, fmt.Errorf("--node %q: want NAME=HOST:PORT (the client's control address)", spec)
		}
		ns = append(ns, probing.Node{Name: name, Control: addr})
	}
	return ns, probeapi.Settings{Count: pf.count, Gap: pf.gap, Timeout: pf.timeout, Token: tok}, nil
}

func clockMonitorCommand() *cobra.Command {
	var pf probeFlags
	var rounds int
	var every time.Duration
	var output, reference, metrics string
	cmd := &cobra.Command{
		Use:   "monitor",
		Short: "Probe periodically, keep the relation current and export it to Prometheus",
		Long: `Probes every ordered pair once per --every and relates the first round to
the latest, so the bounds, MinRTT and status of every pair are visible as
Prometheus gauges (cp_clock_*) while nodes run: between experiments, or at a
low rate during one. Each new relation is also written to --output.`,
		Example: `  cpsweep clock monitor --node a=10.0.0.2:9201 --node b=10.0.0.3:9201 --reference a \
      --every 30s --metrics 0.0.0.0:9300 -o relation.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true
			ns, settings, err := pf.resolve()
			if err != nil {
				return err
			}
			if rounds == 1 || rounds < 0 {
				return fmt.Errorf("--rounds %d: a relation needs two rounds (0 runs until interrupted)", rounds)
			}
			g := &clockmetrics.Gauges{}
			stop, err := cli.ServeMetricsFor("clock monitor", metrics, g)
			if err != nil {
				return err
			}
			defer stop()
			ctx := cmd.Context()
			return probeapi.ProbeEvery(ctx, ns, settings, reference, every, rounds, func(rf *probing.RelationFile) {
				g.Set(rf)
				for _, r := range rf.Relations {
					c := r.Compare
					if c == nil {
						c = &probing.Comparison{}
					}
					// e is max(MinRTT before, MinRTT after)/2: show those two.
					fmt.Fprintf(os.Stderr, "%s %s -> %s: paper ±%s (MinRTT before %s, after %s: e = the larger / 2), tighter ±%s, %s\n",
						time.Now().Format("15:04:05"), r.Node, r.Reference, numfmt.Ns(c.PaperNs), numfmt.Ns(c.MinRTTNs[0]), numfmt.Ns(c.MinRTTNs[1]), numfmt.Ns(c.TighterNs), r.Status)
				}
				if output != "" {
					if err := cli.WriteJSONFile(output, rf); err != nil {
						fmt.Fprintf(os.Stderr, "clock monitor: %v\n", err)
					}
				}
			})
		},
	}
	pf.register(cmd, "round trips per ordered pair and round")
	f := cmd.Flags()
	f.StringVar(&reference, "reference", "", "the reference node")
	_ = cmd.MarkFlagRequired("reference")
	f.DurationVar(&every, "every", 30*time.Second, "time between rounds")
	f.IntVar(&rounds, "rounds", 0, "stop after this many rounds (0: until interrupted)")
	f.StringVar(&metrics, "metrics", "127.0.0.1:9300", "serve Prometheus metrics here (empty: off)")
	f.StringVarP(&output, "output", "o", "", "write the latest relation file here after every round")
	return cmd
}

func clockRelateCommand() *cobra.Command {
	var reference, output string
	cmd := &cobra.Command{
		Use:     "relate SESSION...",
		Short:   "Build a relation file from sessions taken before and after an experiment",
		Example: `  cpsweep clock relate --reference a before.json after.json -o relation.json`,
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			var sessions []*probing.Session
			for _, path := range args {
				s, err := probing.ReadSession(path)
				if err != nil {
					return err
				}
				sessions = append(sessions, s)
			}
			rf, err := probing.Relate(sessions, reference)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(os.Stderr, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "node\tprobes\tMinRTT before/after\tpaper e (MinRTT/2)\ttighter half-width (mid)\talpha width\tTSC GHz from probes / calibrated\tstatus")
			for _, r := range rf.Relations {
				fmt.Fprintf(tw, "%s\t%d\t%d / %d\t%.0f\t%.0f\t%.3f ppm\t%.6f / %.6f\t%s\n", r.Node, r.Probes, r.MinRTT[0], r.MinRTT[1], r.PaperErr, r.MidHalfWidth, r.AlphaPPM, r.PaperHz/1e9, r.CalibratedHz/1e9, r.Status)
			}
			tw.Flush()
			fmt.Fprintln(os.Stderr)
			rf.WriteText(os.Stderr)
			return cli.WriteJSONFile(output, rf)
		},
	}
	cmd.Flags().StringVar(&reference, "reference", "", "the reference node (every value is translated into its TSC domain)")
	_ = cmd.MarkFlagRequired("reference")
	cmd.Flags().StringVarP(&output, "output", "o", "-", "relation file (- for standard output)")
	return cmd
}

func clockTranslateCommand(code *int) *cobra.Command {
	var relation, node string
	cmd := &cobra.Command{
		Use:   "translate TSC...",
		Short: "Translate TSC values of a node into the reference domain, with bounds",
		Long: `Prints one translation per value, in order, as a JSON list. A value that
cannot be translated (outside the window the probes cover: a bound is never
extrapolated) is marked with "error" and has no bounds; the others are
answered. Exit status: 0 all translated, 3 some were marked, 1 none could be
(or the arguments are not TSC values).`,
		Example: `  cpsweep clock translate --relation relation.json --node b 123456789012 123456799012`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			values := make([]uint64, len(args))
			for i, a := range args {
				v, err := strconv.ParseUint(a, 10, 64)
				if err != nil {
					return fmt.Errorf("%q is not a TSC value (an unsigned number of ticks)", a)
				}
				values[i] = v
			}
			rf, err := probing.ReadRelationFile(relation)
			if err != nil {
				return err
			}
			out, failed := rf.TranslateEach(node, values)
			if failed == len(out) {
				return fmt.Errorf("no value could be translated: %s", out[0].Error)
			}
			if err := cli.WriteJSON(os.Stdout, out); err != nil {
				return err
			}
			if failed > 0 {
				fmt.Fprintf(os.Stderr, "cpsweep clock translate: %d of %d values could not be translated (marked \"error\")\n", failed, len(out))
				*code = 3
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&relation, "relation", rundir.RelationFile, "relation file")
	cmd.Flags().StringVar(&node, "node", "", "the node the TSC values come from")
	_ = cmd.MarkFlagRequired("node")
	return cmd
}

func clockDurationCommand() *cobra.Command {
	var relation string
	cmd := &cobra.Command{
		Use:   "duration FROM_NODE:TSC TO_NODE:TSC",
		Short: "Measure the time between two events on any nodes, with strict bounds",
		Long: `Prints the duration from the first event to the second in the reference
node's ticks and nanoseconds, with the paper's bound for the case of §3.3
(reference, one node, from/to reference, across two non-reference nodes),
its 2e baseline where it applies, and the tighter bound.`,
		Example: `  cpsweep clock duration --relation relation.json b:123456789012 c:98765432100`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			rf, err := probing.ReadRelationFile(relation)
			if err != nil {
				return err
			}
			var nodes [2]string
			var values [2]uint64
			for i, a := range args {
				n, v, ok := strings.Cut(a, ":")
				x, err := strconv.ParseUint(v, 10, 64)
				if !ok || err != nil || n == "" {
					return fmt.Errorf("%q: want NODE:TSC (a TSC value in ticks)", a)
				}
				nodes[i], values[i] = n, x
			}
			d, err := rf.Duration(nodes[0], values[0], nodes[1], values[1])
			if err != nil {
				return err
			}
			return cli.WriteJSON(os.Stdout, d)
		},
	}
	cmd.Flags().StringVar(&relation, "relation", rundir.RelationFile, "relation file")
	return cmd
}
