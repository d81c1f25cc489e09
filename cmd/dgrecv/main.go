// Command dgrecv receives tuples over ZeroMQ through the object factory and
// accounts for every stream until its end marker arrives.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cloudprofiler-go/cp/cmd/internal/brokers"
	"github.com/cloudprofiler-go/cp/cmd/internal/cli"
	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/atomicfile"
	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/receiver/recvmetrics"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sweep/agent"
	"github.com/cloudprofiler-go/cp/sweep/agent/recvagent"
	"github.com/cloudprofiler-go/cp/tsc"
)

// exitIncomplete is the exit status of a run that ended with data missing.
const exitIncomplete = 3

const profileChannels = "receive.<lane>, deserialized.<lane>, consumed"

func main() {
	code := 0
	cmd := command(&code)
	os.Exit(cli.Execute(cli.SignalContext("dgrecv"), cmd, termsafe.NewWriter(os.Stderr), &code, 1))
}

// options are dgrecv's flags; the receiver's settings are bound straight
// to the receiver.Config they configure.
type options struct {
	run           cli.RunFlags
	cfg           receiver.Config
	bind, connect []string
	lanes         int
	scenario      string
	cpus          cli.CPUChoice
	agent         bool
	tok           cli.TokenFlags
	probeAdr      string
	hgrm          string
	force         bool // --force: --hgrm may replace existing files
}

func command(code *int) *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "dgrecv",
		Short: "Receive tuples through the object factory and account for every stream",
		Long: `dgrecv pulls buckets of tuples from dgsend (or from a system under test) over
ZeroMQ PULL sockets, one lane per socket. Each lane's deserializer decodes whole
buckets into recycled tuple objects and hands them through a lock-free ring to a
consumer, which takes them a tuple at a time (optionally spending --work per
tuple to emulate a slower system).

It accounts per stream (received, consumed, out of sequence, duplicates,
missing), skips and counts malformed messages, and ends when every stream's end
marker has been consumed (or --expect-streams have ended, or no data arrived for
--end-timeout). Exit status: 0 complete, 3 incomplete (data missing), 4 usage
error (nothing ran), 1 any other error.`,
		Example: `  # receive on port 5555 until the sender's streams end
  dgrecv --bind tcp://*:5555

  # two lanes (ports 5555 and 5556), expect 2 streams, 200 ns of work per tuple
  dgrecv --bind tcp://*:5555 --lanes 2 --expect-streams 2 --work 200ns

  # behind a system under test that pushes transformed tuples to us
  dgrecv --connect tcp://sut-host:6000 --schema raw --json

  # an agent for cpsweep on another host, data on ports 5555-5556
  dgrecv --agent --bind tcp://*:5555 --lanes 2 --metrics-addr 0.0.0.0:9102 --token-file /etc/cp/token

  # the latency distribution for HdrHistogram's plotter (lat.hgrm), and the
  # histogram itself as its interval log (lat.hlog)
  dgrecv --bind tcp://*:5555 --hgrm lat.hgrm

  # profiled: handlers from a configuration server, switched live when it changes
  dgrecv --bind tcp://*:5555 --profile http://cfg:9400/v1/profiler/handlers --profile-follow 1s`,
		Args: cobra.NoArgs,
		PersistentPreRunE: func(c *cobra.Command, args []string) error {
			return cli.Usage(cli.RefuseCredentials(c.Flags(), args))
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.execute(cmd.Context(), cmd.Flags().Changed("scenario"), code)
		},
	}
	o.register(cmd.Flags())
	cli.Conventions(cmd, nil)
	return cmd
}

func (o *options) register(f *pflag.FlagSet) {
	c := &o.cfg
	f.StringArrayVar(&o.bind, "bind", nil, "ZeroMQ endpoint to bind, one lane each (default tcp://*:5555)")
	f.StringVar(&o.cfg.JobInput, "job-input", "", "with a stream processor between the senders and this receiver: its input, a broker URL naming its consumer group\n(jetstream://HOST:PORT/SUBJECT?group=NAME); its lag is read every 500ms for the system-backlog rule (docs/sut.md)")
	f.StringArrayVar(&o.connect, "connect", nil, "ZeroMQ endpoint to connect to instead (a system under test pushes to us), or a broker to consume from: nats://HOST:PORT/SUBJECT, jetstream://HOST:PORT/SUBJECT, redis://HOST:PORT/KEY or kafka://HOST:PORT/TOPIC (docs/brokers.md)")
	f.IntVar(&o.lanes, "lanes", 1, "with one endpoint: open this many lanes on consecutive ports")
	f.StringVar(&c.Schema, "schema", scenarios.SchemaAdEvent, "tuple schema to decode: ad-event, synthetic, raw (id and time only) or window (a job's windowed counts, docs/sut.md)")
	f.StringVar(&o.scenario, "scenario", "", "take the schema from a scenario (name, synthetic:SIZE or YAML file)")
	f.BoolVar(&c.Drain, "drain", false, "check headers and account per stream, but do not decode or consume tuples (measures the sender and network)")
	f.IntVar(&c.ExpectStreams, "expect-streams", 0, "finish when this many streams have ended (0: when every stream seen has ended)")
	f.DurationVar(&c.EndTimeout, "end-timeout", 10*time.Second, "give up waiting for end markers after this long without data, and, without --duration, for the first data after this long from the start")
	f.DurationVar(&c.Settle, "settle", 500*time.Millisecond, "with --expect-streams 0: wait this long after the last end marker for new streams")
	f.DurationVar(&c.Duration, "duration", 0, "stop after this long regardless (0: no limit)")
	f.DurationVar(&c.WorkPerTuple, "work", 0, "busy work per consumed tuple, to emulate a slower system (e.g. 200ns)")
	f.IntVar(&c.Ring, "ring", 256, "buckets per lane ring (power of two)")
	cli.StallsVar(f, &c.Stalls, "stall", "test fixture: stop a stage for a while, e.g. consumer@5s+1s or lane0@2s+500ms (from the start; repeat)")
	f.DurationVar(&c.DecodeWork, "decode-work", 0, "test fixture: busy work per decoded bucket on every lane (e.g. 50us)")
	cli.ScheduleVar(f, &c.WorkSchedule, "work-schedule", "test fixture: the consumer's work per tuple over time, e.g. 10us@0s,40us@20s (instead of --work)")
	f.IntVar(&c.MaxMessage, "max-message", 64<<20, "the largest message a lane takes (bytes): the socket refuses a larger one before it is built (lowered, and said so, to fit --memory-budget)")
	cli.SizeVar(f, &c.MemoryBudget, "memory-budget", "the most memory a run (with --agent, any trial) may hold in messages: lanes × (ring + hwm) × the largest message (0 = half of the host's memory)")
	f.IntVar(&c.HWM, "hwm", 1000, "ZeroMQ receive high-water mark, in messages")
	f.IntVar(&c.IOThreads, "io-threads", 1, "ZeroMQ I/O threads")
	cli.CPUChoiceVar(f, &o.cpus, "cpus", "none", "CPUs for the lane deserializers then the consumer: none, auto, or a list like 0,1")
	o.run.Register(f, "dgrecv", "127.0.0.1:9102", profileChannels)
	f.BoolVar(&o.force, "force", false, "with --hgrm: replace the files that are there already (their modes kept); without it an existing file is refused before the run")
	f.BoolVar(&o.agent, "agent", false, "run as a cpsweep agent: serve the control API on --metrics-addr; every trial binds the --bind endpoints")
	f.StringVar(&o.probeAdr, "probe-addr", "", "agent: answer TSC probes (cpsweep --clock) on this UDP address (default: the --metrics-addr host and port, on UDP)")
	f.StringVar(&o.hgrm, "hgrm", "", "write the latency distribution (intended send to consumed) to this file as HdrHistogram's .hgrm,\nand the histogram itself beside it as its interval log (.hlog), which HdrHistogram's tools decode (docs/results.md)")
	o.tok.Register(f, "agent: shared token the controller must send (required unless --metrics-addr is loopback)")
}

// endpoints are the lanes' endpoints from --bind or --connect and --lanes.
func (o *options) endpoints() ([]string, error) {
	if len(o.bind) > 0 && len(o.connect) > 0 {
		return nil, errors.New("give --bind or --connect, not both")
	}
	endpoints := o.bind
	if len(o.connect) > 0 {
		endpoints = o.connect
	}
	if len(endpoints) == 0 {
		endpoints = []string{"tcp://*:5555"}
	}
	return expandLanes(endpoints, o.lanes)
}

func (o *options) execute(ctx context.Context, scenarioSet bool, code *int) error {
	cfg := o.cfg
	cfg.Brokers = brokers.All()
	var err error
	if err := o.run.ConfineOthers(); err != nil { // before any thread is pinned or ZeroMQ starts its threads
		return err
	}
	if cfg.Endpoints, err = o.endpoints(); err != nil {
		return cli.Usage(err)
	}
	cfg.Connect = len(o.connect) > 0
	if scenarioSet {
		sc, err := scenarios.Load(o.scenario)
		if err != nil {
			return cli.Usage(err)
		}
		cfg.Schema = sc.Schema
	}
	if cfg.CPUs, err = o.cpus.Resolve(len(cfg.Endpoints) + 1); err != nil {
		return cli.Usage(err)
	}
	if !o.agent {
		// Bad settings are the caller's (a usage error), found before
		// anything binds; the run validates its own copy again.
		check := cfg
		check.StagePeriod = o.run.StagePeriod
		if err := check.Validate(); err != nil {
			return cli.Usage(err)
		}
	}
	if cfg.JobInput != "" { // the job's input and group, where missing (never deleted)
		if e, err := driver.Parse(cfg.JobInput); err != nil {
			return cli.Usage(fmt.Errorf("--job-input: %w", err))
		} else if err := brokers.All().Ensure(e); err != nil && !errors.Is(err, driver.ErrNoAdmin) {
			return fmt.Errorf("--job-input %s: make its stream and the job's group where missing: %w", cfg.JobInput, err)
		}
	}
	if o.agent && o.hgrm != "" {
		return cli.Usage(errors.New("--hgrm is for a run of its own: an agent's trials are cpsweep's, whose report writes the answer's .hgrm (cpsweep report)"))
	}
	if o.force && o.hgrm == "" {
		return cli.Usage(errors.New("--force lets --hgrm replace its files: give --hgrm too"))
	}
	if o.hgrm != "" {
		if err := checkHgrm(o.hgrm, o.force); err != nil {
			return cli.Usage(fmt.Errorf("--hgrm: %w", err))
		}
	}
	if o.agent {
		return agent.Run(ctx, agent.Options{Role: recvagent.Role{Brokers: brokers.All(), JobInput: cfg.JobInput, Streams: &recvagent.StreamMemory{}}, Endpoints: cfg.Endpoints, Connect: cfg.Connect, CPUs: cfg.CPUs, IOThreads: cfg.IOThreads, ProbeAddr: o.probeAdr, MemoryBudget: cfg.MemoryBudget},
			o.run.MetricsAddr, o.tok.Token, o.tok.File, o.run.Calibrate)
	}
	var recv *receiver.Receiver
	res, err := cli.RunCommand(ctx, o.run, func(clock *tsc.Clock, prof *cli.Profile) (cli.Runner[*tally.Result], httpapi.Collectors, error) {
		cfg.Clock, cfg.Profile, cfg.Handlers, cfg.Logf = clock, prof.Profiler, prof.Handlers, cli.Logf("dgrecv")
		cfg.StagePeriod = o.run.StagePeriod
		cfg.NoServiceRates = !o.run.ServiceRates
		r, err := receiver.New(cfg)
		if err != nil {
			return nil, nil, err
		}
		recv = r
		fmt.Fprintf(os.Stderr, "dgrecv: listening on %s (messages up to %s: --max-message, within --memory-budget)\n", strings.Join(r.BoundEndpoints(), " "), numfmt.Bytes(int64(r.MaxMessage())))
		return r, recvmetrics.For(r), nil
	}, func(r cli.Runner[*tally.Result], done <-chan struct{}) {
		reportProgress(r.(*receiver.Receiver), done)
	})
	if res != nil && !res.Complete {
		*code = exitIncomplete
	}
	if res != nil && o.hgrm != "" { // also for an incomplete run: what it measured is kept
		err = errors.Join(err, writeHgrm(o.hgrm, o.force, res, recv))
	}
	return err
}

// writeHgrm writes the run's latency as HdrHistogram's .hgrm to path and
// its histogram as an interval log beside it (path's .hlog).
func writeHgrm(path string, force bool, res *tally.Result, r *receiver.Receiver) error {
	if res.LatencyDistribution == nil {
		return fmt.Errorf("--hgrm %s: no latency was recorded (nothing was consumed)", termsafe.Escape(path))
	}
	for _, f := range []struct {
		path  string
		write func(io.Writer) error
	}{{path, res.LatencyDistribution.WriteHgrm}, {hlogPath(path), r.WriteLatencyLog}} {
		// checked again: the run may have lasted hours
		mode, err := atomicfile.Target(f.path, force, 0o644)
		if err == nil {
			err = atomicfile.WriteWith(f.path, mode, f.write)
		}
		if err != nil {
			return fmt.Errorf("--hgrm: %w", err)
		}
	}
	return nil
}

// hlogPath is where the histogram log goes beside the .hgrm file: its
// name with its extension (if any) replaced.
func hlogPath(hgrm string) string { return strings.TrimSuffix(hgrm, filepath.Ext(hgrm)) + ".hlog" }

// checkHgrm says, before a run, when path's directory is not there to
// write in, or path or the log beside it may not be written (a device, a
// FIFO, or a file already there without force): the files are written at
// the end.
func checkHgrm(path string, force bool) error {
	for _, p := range []string{path, hlogPath(path)} {
		if _, err := atomicfile.Target(p, force, 0o644); err != nil {
			return err
		}
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("its directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if hlogPath(path) == path {
		return fmt.Errorf("%s would be both the .hgrm and the histogram log beside it: name it .hgrm", path)
	}
	return nil
}

func expandLanes(endpoints []string, lanes int) ([]string, error) {
	if lanes < 1 || lanes > receiver.MaxLanes {
		return nil, fmt.Errorf("--lanes must be 1 to %d, got %d", receiver.MaxLanes, lanes)
	}
	if lanes == 1 {
		return endpoints, nil
	}
	if len(endpoints) != 1 {
		return nil, errors.New("--lanes needs exactly one --bind/--connect endpoint (or list every endpoint instead)")
	}
	if driver.IsBroker(endpoints[0]) {
		return driver.LaneEndpoints(endpoints[0], lanes)
	}
	i := strings.LastIndex(endpoints[0], ":")
	port, err := strconv.Atoi(endpoints[0][i+1:])
	if i < 0 || err != nil {
		return nil, fmt.Errorf("--lanes needs an endpoint with a numeric port, got %q", endpoints[0])
	}
	out := make([]string, lanes)
	for k := range out {
		out[k] = fmt.Sprintf("%s:%d", endpoints[0][:i], port+k)
	}
	return out, nil
}

func reportProgress(r *receiver.Receiver, done <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var prev receiver.Progress
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			p := r.Snapshot()
			dt := (p.Elapsed - prev.Elapsed).Seconds()
			fmt.Fprintf(os.Stderr, "dgrecv: %5.0fs  consumed %-9s  %-14s  backlog %-4d streams %d (%d ended)  malformed %d\n",
				p.Elapsed.Seconds(), numfmt.Count(p.Consumed), numfmt.Rate(float64(p.Consumed-prev.Consumed)/dt), p.Backlog, p.Streams, p.Ended, p.Malformed)
			prev = p
		}
	}
}
