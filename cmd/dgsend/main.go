// Command dgsend is the throughput-controlled load generator: it sends
// pre-serialized tuples over ZeroMQ at a fixed rate from pinned threads.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cloudprofiler-go/cp/cmd/internal/brokers"
	"github.com/cloudprofiler-go/cp/cmd/internal/cli"
	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sender"
	"github.com/cloudprofiler-go/cp/sender/sendmetrics"
	"github.com/cloudprofiler-go/cp/sender/tally"
	"github.com/cloudprofiler-go/cp/sweep/agent"
	"github.com/cloudprofiler-go/cp/sweep/agent/sendagent"
	"github.com/cloudprofiler-go/cp/trialcfg"
	"github.com/cloudprofiler-go/cp/tsc"
)

const profileChannels = "emit.<thread>"

func main() {
	code := 0
	os.Exit(cli.Execute(cli.SignalContext("dgsend"), command(), termsafe.NewWriter(os.Stderr), &code, 1))
}

// options are dgsend's flags; the sender's settings are bound straight to
// the sender.Config they configure.
type options struct {
	run            cli.RunFlags
	cfg            sender.Config
	connect, bind  []string
	scenario       string
	scenarioGiven  bool // --scenario was set (--events is the other)
	events         cli.Events
	expect         string
	cpus           cli.CPUChoice
	overflow, idle string
	strict, agent  bool
	tok            cli.TokenFlags
	probeAdr       string
}

func command() *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "dgsend",
		Short: "Send tuples over ZeroMQ at a controlled rate",
		Long: `dgsend sends tuples to dgrecv (or to a system under test) over ZeroMQ PUSH
sockets, one per emission thread, at a fixed rate paced on the CPU's TSC. Tuples
are serialized before the run; each carries a unique 64-bit id and its intended
emission time, so latency is measured from the schedule. Every stream ends with
a marker carrying its final counts.

The run reports tuples emitted and dropped, the schedule's shortfall (tuples it
fell behind on), per-second achieved rates, and lateness (actual minus intended
send time) with the fraction of late slots.`,
		Example: `  # 1 M tuples/s of YSB ad events for 10 s to a receiver on another host
  dgsend --connect tcp://recv-host:5555 --rate 1M --duration 10s

  # a 10 s sine wave of +-30% around 2 M tuples/s, for a minute
  dgsend --connect tcp://recv:5555 --rate 2M --shape sine:0.3,10s --duration 1m --bucket 100

  # 5 M tuples/s in buckets of 100, two threads to two receiver lanes
  dgsend --connect tcp://recv:5555 --connect tcp://recv:5556 --threads 2 --bucket 100 --rate 5M --duration 30s

  # exactly 1e6 synthetic 200-byte tuples, as fast as possible, JSON result
  dgsend --connect tcp://127.0.0.1:5555 --scenario synthetic:200 --rate 0 --count 1000000 --json

  # an agent for cpsweep on another host (trials come from the controller)
  dgsend --agent --metrics-addr 0.0.0.0:9101 --token-file /etc/cp/token

  # every tuple's send instant logged (channels emit.<thread>), switchable live
  dgsend --connect tcp://127.0.0.1:5555 --rate 1M --profile handlers.yaml --profile-follow 2s`,
		Args: cobra.NoArgs,
		PersistentPreRunE: func(c *cobra.Command, args []string) error {
			return cli.Usage(cli.RefuseCredentials(c.Flags(), args))
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.scenarioGiven = cmd.Flags().Changed("scenario")
			return o.execute(cmd.Context())
		},
	}
	o.register(cmd.Flags())
	cli.Conventions(cmd, nil)
	return cmd
}

func (o *options) register(f *pflag.FlagSet) {
	c := &o.cfg
	f.StringArrayVar(&o.connect, "connect", nil, "ZeroMQ endpoint to connect to (repeat for several receivers; thread i uses endpoint i mod n), or a broker to publish into: nats://HOST:PORT/SUBJECT, jetstream://HOST:PORT/SUBJECT, redis://HOST:PORT/KEY or kafka://HOST:PORT/TOPIC (docs/brokers.md)")
	f.StringArrayVar(&o.bind, "bind", nil, "ZeroMQ endpoint to bind instead (a system under test pulls from dgsend)")
	c.Rate = 1e6
	cli.RateVar(f, &c.Rate, "rate", "total tuples per second over all threads (k, M suffixes; 0 = unpaced, as fast as possible)")
	cli.ShapeVar(f, &c.Shape, "shape", "constant", "how the rate varies around --rate (its mean): constant, step:1x@2s,2x@1s (repeating),\nramp:0.5x..1.5x (over the run), sine:0.2,10s, poisson[:SEED] (exponential gaps), replay:FILE (lines \"seconds rate\")")
	f.DurationVar(&c.Duration, "duration", 10*time.Second, "how long to send (0 with --count: until the count is sent)")
	f.Uint64Var(&c.Count, "count", 0, "total tuples to send (rounded up to whole buckets per thread); 0 = no limit")
	f.IntVar(&c.Threads, "threads", 1, "emission threads, each with its own socket and stream")
	f.IntVar(&c.BucketSize, "bucket", 1, "tuples per ZeroMQ message (1 reproduces the paper)")
	f.DurationVar(&c.ExpectWindow, "expect-window", 0, "the window of a windowed count between this sender and the receiver (YSB's, of event time; ad-event only):\nthe tuples sent that --expect-filter keeps are counted per campaign and window, what each window owes (docs/sut.md)")
	f.StringVar(&o.expect, "expect-filter", "", "the predicate of a filter between this sender and the receiver, e.g. 'event_type == view' (clauses FIELD == VALUE\nor FIELD != VALUE joined by &&; ad_type, event_type): the tuples sent that it keeps are counted, the filter's exact output (docs/sut.md)")
	f.StringVar(&o.scenario, "scenario", "ad-event", "workload: a built-in name ("+fmt.Sprint(scenarios.Builtins())+"), synthetic:SIZE, or a YAML file")
	o.events.Register(f)
	f.StringVar(&o.overflow, "overflow", "block", "when the socket is full: block (lateness grows) or drop (count dropped buckets)")
	f.StringVar(&o.idle, "idle", "auto", "how to wait for the next slot: spin (the paper's busy-wait), sleep (nanosleep until just before the slot, then spin),\nyield (spin with sched_yield), or auto (spin with 4+ CPUs, else sleep)")
	cli.CPUChoiceVar(f, &o.cpus, "cpus", "auto", "CPUs to pin threads to: auto (the last CPUs), none, or a list like 1 or 2-3")
	f.Uint8Var(&c.SenderID, "sender-id", 0, "this sender's id (0-255), distinct per dgsend process feeding one receiver")
	f.IntVar(&c.HWM, "hwm", 1000, "ZeroMQ send high-water mark, in messages")
	f.IntVar(&c.SendBatch, "send-batch", 0, fmt.Sprintf("most buckets a thread hands to libzmq per call from Go (each still sent at its own slot; a batch spans at most %v);\n0 = auto (up to 16, fewer for big buckets), 1 = one call per bucket", sender.BatchSpan))
	f.IntVar(&c.IOThreads, "io-threads", 1, "ZeroMQ I/O threads")
	f.DurationVar(&c.LateThreshold, "late-threshold", 10*time.Microsecond, "a slot sent later than this after its intended time counts as late")
	f.Float64Var(&c.MaxLateFraction, "max-late-fraction", sender.DefaultMaxLateFraction, "a paced run with more than this share of late slots did not keep its schedule (said first in the summary)")
	f.BoolVar(&o.strict, "strict", false, "exit 1 when the schedule was not kept (shortfall, or late slots above --max-late-fraction)")
	cli.SizeVar(f, &c.MemoryBudget, "memory-budget", "the most memory a run (or, with --agent, any trial) may plan to use: threads x distinct tuples x size, socket queues (0 = half of the host's memory)")
	f.BoolVar(&c.SkipRateCheck, "no-rate-check", false, "do not refuse a rate above what the measured send cost allows")
	cli.StallsVar(f, &c.Stalls, "stall", "test fixture: stop an emission thread for a while, e.g. thread0@5s+1s (from the first slot; repeat)")
	f.DurationVar(&c.SendWork, "send-work", 0, "test fixture: busy work per bucket in the sending state before each send (a slower sender, e.g. 20us; one bucket per call into C)")
	o.run.Register(f, "dgsend", "127.0.0.1:9101", profileChannels)
	f.BoolVar(&o.agent, "agent", false, "run as a cpsweep agent: serve the control API on --metrics-addr and take trials from the controller")
	f.StringVar(&o.probeAdr, "probe-addr", "", "agent: answer TSC probes (cpsweep --clock) on this UDP address (default: the --metrics-addr host and port, on UDP)")
	o.tok.Register(f, "agent: shared token the controller must send (required unless --metrics-addr is loopback)")
}

// config completes the sender's configuration from the flags that need
// reading (endpoints, scenario, shape) and validates it before anything
// that depends on it (the CPU choice needs a valid thread count).
func (o *options) config() (sender.Config, error) {
	cfg := o.cfg
	cfg.Brokers = brokers.All()
	if len(o.connect) > 0 && len(o.bind) > 0 {
		return cfg, errors.New("give --connect or --bind, not both")
	}
	cfg.Endpoints, cfg.Bind = o.connect, len(o.bind) > 0
	if cfg.Bind {
		cfg.Endpoints = o.bind
	}
	cfg.Overflow, cfg.Idle = trialcfg.Overflow(o.overflow), trialcfg.Idle(o.idle)
	var err error
	name, events, err := o.events.Scenario(o.scenario, o.scenarioGiven)
	if err != nil {
		return cfg, err
	}
	if cfg.Scenario, err = scenarios.LoadWith(name, events); err != nil {
		return cfg, err
	}
	if o.expect != "" {
		if cfg.Expect, err = scenarios.ParsePredicate(cfg.Scenario.Schema, o.expect); err != nil {
			return cfg, fmt.Errorf("--expect-filter: %w", err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	cfg.CPUs, err = o.cpus.Resolve(cfg.Threads)
	return cfg, err
}

func (o *options) execute(ctx context.Context) error {
	if err := o.run.ConfineOthers(); err != nil { // before any thread is pinned or ZeroMQ starts its threads
		return err
	}
	if o.agent {
		cpus, err := o.cpus.Resolve(1)
		if err != nil {
			return err
		}
		return agent.Run(ctx, agent.Options{Role: sendagent.Role{Brokers: brokers.All()}, CPUs: cpus, IOThreads: o.cfg.IOThreads, ProbeAddr: o.probeAdr, MemoryBudget: o.cfg.MemoryBudget},
			o.run.MetricsAddr, o.tok.Token, o.tok.File, o.run.Calibrate)
	}
	cfg, err := o.config()
	if err != nil {
		return cli.Usage(err)
	}
	if features, err := tsc.DetectFeatures(); err == nil && features.Problem() != "" {
		fmt.Fprintf(os.Stderr, "dgsend: warning: %s\n", features.Problem())
	}
	res, err := cli.RunCommand(ctx, o.run, func(clock *tsc.Clock, prof *cli.Profile) (cli.Runner[*tally.Result], httpapi.Collectors, error) {
		cfg.Clock, cfg.Profile, cfg.Handlers, cfg.StagePeriod = clock, prof.Profiler, prof.Handlers, o.run.StagePeriod
		cfg.NoServiceRates = !o.run.ServiceRates
		s, err := sender.New(cfg)
		if err != nil {
			return nil, nil, err
		}
		return s, sendmetrics.For(s), nil
	}, func(s cli.Runner[*tally.Result], done <-chan struct{}) {
		reportProgress(s.(*sender.Sender), cfg.Rate, done)
	})
	if err != nil {
		return err
	}
	if len(res.Errors) > 0 {
		return errors.New("run finished with errors")
	}
	if o.strict && !res.ScheduleKept {
		return fmt.Errorf("--strict: the schedule was not kept: %s", res.Schedule)
	}
	return nil
}

func reportProgress(s *sender.Sender, target float64, done <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var prev sender.Progress
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			p := s.Snapshot()
			dt := (p.Elapsed - prev.Elapsed).Seconds()
			fmt.Fprintf(os.Stderr, "dgsend: %5.0fs  emitted %-9s  %-14s  late slots %-8d dropped buckets %d\n",
				p.Elapsed.Seconds(), numfmt.Count(p.Emitted), numfmt.Rate(float64(p.Emitted-prev.Emitted)/dt), p.LateSlots, p.DroppedBuckets)
			prev = p
		}
	}
}
