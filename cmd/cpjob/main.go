// Command cpjob runs a stream-processing job on the Benthos engine between
// two broker topics, for the sweep to measure: the Yahoo Streaming
// Benchmark (cpjob ysb), or any Benthos configuration that reads with
// cp_input and writes with cp_output (cpjob run).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/spf13/cobra"

	"github.com/cloudprofiler-go/cp/cmd/internal/brokers"
	"github.com/cloudprofiler-go/cp/cmd/internal/cli"
	"github.com/cloudprofiler-go/cp/dataflow"
	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/readfile"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sut/ysb"
)

func main() {
	code := 0
	root := &cobra.Command{
		Use:   "cpjob",
		Short: "Run a stream-processing job on the Benthos engine, between two broker topics, for cpsweep to measure",
		Long: `cpjob runs a job on the Benthos stream engine (github.com/redpanda-data/benthos/v4)
with the harness's broker drivers as its input and output: it reads the
buckets dgsend publishes to one topic and writes its results, as buckets, to
another, where dgrecv reads them. docs/sut.md is the contract a job keeps.`,
	}
	root.AddCommand(ysbCommand(), runCommand(), campaignsCommand())
	cli.Conventions(root, nil)
	os.Exit(cli.Execute(cli.SignalContext("cpjob"), root, termsafe.NewWriter(os.Stderr), &code, 1))
}

// ysbExamples are cpjob ysb's --help examples.
const ysbExamples = `  redis-server --port 6379 &
  cpjob ysb --input 'jetstream://127.0.0.1:4222/ysb.in?group=ysb' --output jetstream://127.0.0.1:4222/ysb.out --redis 127.0.0.1:6379

  # the same job as two processes, the views in a topic between them
  cpjob ysb --part filter --input 'jetstream://10.0.0.1:4222/ysb.in?group=ysb' --output jetstream://10.0.0.1:4222/ysb.views
  cpjob ysb --part count --input 'jetstream://10.0.0.1:4222/ysb.views?group=ysb-count' --output jetstream://10.0.0.1:4222/ysb.out --redis 10.0.0.3:6379

  # its operators' own accounting on /metrics, and every tuple id at each operator's point
  cpjob ysb ... --metrics-addr 127.0.0.1:9105 --profile profiles/default.yaml --profile-dir logs

  # serve them to the sweep as an agent does: cpsweep ... --job-agent 10.0.0.5:9103 names the limiting operator
  cpjob ysb ... --agent-addr 10.0.0.5:9103 --token-file tok

  # print the engine's configuration instead of running it
  cpjob ysb --input 'kafka://k:9092/ads?group=ysb' --output kafka://k:9092/windows --redis r:6379 --print-config`

// ysbLong is cpjob ysb's --help text.
const ysbLong = `Runs YSB: ad events from --input (the job reads in the consumer group the URL
names), the event filter (views), the projection, the join with the campaigns
held in the Redis at --redis (loaded from the scenario at start), counts per
campaign in event-time windows of --window, written to --output as windows
(schema "window": campaign, window end, count, and the identity of the latest
event counted). It runs until interrupted.

With --part the job runs as two processes, on hosts of their own, with a
topic between them: --part filter reads the ad events and writes the views
(schema ad-event, each with its identity) to that topic; --part count reads
them there, joins and counts. The topic is the filter's --output and the
count's --input (in a group of its own).`

func ysbCommand() *cobra.Command {
	c := ysb.Defaults()
	var scenario string
	var load, print bool
	var acct accountingFlags
	cmd := &cobra.Command{
		Use:     "ysb --input URL --output URL --redis HOST:PORT",
		Short:   "The Yahoo Streaming Benchmark: views filtered, projected, joined with campaigns in Redis, counted per campaign and window",
		Long:    ysbLong,
		Example: ysbExamples,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkYSB(c); err != nil {
				return cli.Usage(err)
			}
			if print {
				conf, err := c.YAML()
				if err == nil {
					fmt.Print(conf)
				}
				return err
			}
			s, err := scenarios.Load(scenario)
			if err != nil {
				return cli.Usage(fmt.Errorf("--scenario: %w", err))
			}
			ctx := cmd.Context()
			if load && c.Part != ysb.PartFilter {
				if err := ysb.LoadCampaigns(ctx, c.Redis, s); err != nil {
					return err
				}
			}
			df, stopAccounting, err := acct.start(ysbJobName(c.Part))
			if err != nil {
				return err
			}
			ctx, stallsOK, stallErr := acct.stallCheck(ctx, df)
			ready := whenConnected(c.Copies, func() {
				if !stallsOK() {
					return
				}
				if c.Part == ysb.PartFilter {
					fmt.Fprintf(os.Stderr, "cpjob ysb: reading %s, writing the views to %s (part filter)\n", c.Input, c.Output)
				} else {
					fmt.Fprintf(os.Stderr, "cpjob ysb: reading %s, writing windows of %v to %s, campaigns in Redis %s (part %s)\n", c.Input, c.Window, c.Output, c.Redis, c.Part)
				}
			})
			job, err := ysb.Build(brokers.All(), c, ysb.Hooks{Operators: df, Connected: ready})
			if err != nil {
				return errors.Join(err, stopAccounting())
			}
			return errors.Join(run(ctx, job.Run, job.Stop), stallErr(), stopAccounting())
		},
	}
	f := cmd.Flags()
	acct.register(f)
	f.StringVar(&c.Input, "input", "", "the job's input, a broker URL naming its group: jetstream://HOST:PORT/SUBJECT?group=ysb (docs/brokers.md)")
	f.StringVar(&c.Output, "output", "", "the job's output, a broker URL")
	f.StringVar(&c.Redis, "redis", "", "HOST:PORT of the Redis that holds the campaigns")
	f.StringVar(&scenario, "scenario", "ad-event", "the ad-event scenario whose campaigns are loaded (the one dgsend sends)")
	f.BoolVar(&load, "load-campaigns", true, "load the scenario's campaigns into Redis at start (replacing the hash "+ysb.CampaignsHash+")")
	f.DurationVar(&c.Window, "window", c.Window, "the windows' size (YSB's is 10s)")
	f.DurationVar(&c.Lateness, "lateness", c.Lateness, "how long after its end a window waits for late events; later ones are not counted")
	f.IntVar(&c.Copies, "copies", c.Copies, "input copies, each with its own filter, projection and join (consumers in the input's group)")
	f.IntVar(&c.Stream, "stream", c.Stream, "the output's stream id, 0..65535")
	f.StringVar(&c.LogLevel, "log-level", c.LogLevel, "the engine's log level: error, warn, info, debug")
	f.StringVar(&c.Part, "part", c.Part, "which operators this process runs: all, filter (to a topic between the two) or count (from it)")
	f.BoolVar(&print, "print-config", false, "print the engine's configuration and exit")
	f.DurationVar(&c.FilterWork, "filter-work", 0, "an injected limit (experiments only): CPU the filter spends on each event, e.g. 50us")
	f.DurationVar(&c.JoinWork, "join-work", 0, "an injected limit (experiments only): CPU the join spends on each view, e.g. 100us")
	f.DurationVar(&c.WindowWork, "window-work", 0, "an injected limit (experiments only): CPU the window operator spends on each view it counts, e.g. 100us")
	f.DurationVar(&c.JoinDelay, "join-delay", 0, "an injected limit (experiments only): how much longer the join waits for each lookup, as against a slow Redis, e.g. 10ms")
	return cmd
}

func checkYSB(c ysb.Config) error {
	var errs []error
	switch {
	case !slices.Contains(ysb.Parts, c.Part):
		errs = append(errs, fmt.Errorf("--part %.32q: one of %v", c.Part, ysb.Parts))
	case c.Input == "" || c.Output == "" || (c.Redis == "" && c.Part != ysb.PartFilter):
		errs = append(errs, errors.New("give --input, --output and --redis (the filter's part needs no Redis)"))
	}
	for _, u := range []string{c.Input, c.Output} {
		if u == "" {
			continue
		}
		if _, err := driver.Parse(u); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Lateness >= c.Window && c.Part != ysb.PartFilter {
		errs = append(errs, fmt.Errorf("--lateness %v must be shorter than --window %v (the engine's window buffer refuses it)", c.Lateness, c.Window))
	}
	for _, w := range []struct {
		flag string
		d    time.Duration
	}{{"filter-work", c.FilterWork}, {"join-work", c.JoinWork}, {"window-work", c.WindowWork}, {"join-delay", c.JoinDelay}} {
		if w.d < 0 || w.d > time.Second {
			errs = append(errs, fmt.Errorf("--%s %v: 0 to 1s", w.flag, w.d))
		}
	}
	if c.Window < time.Millisecond || c.Lateness < 0 || c.Copies < 1 || c.Copies > 64 || c.Stream < 0 || c.Stream > 0xffff {
		errs = append(errs, fmt.Errorf("--window %v (at least 1ms), --lateness %v (not negative), --copies %d (1..64), --stream %d (0..65535)", c.Window, c.Lateness, c.Copies, c.Stream))
	}
	return errors.Join(errs...)
}

// ysbJobName names the job in the analyses: ysb, or ysb-filter and
// ysb-count for its parts (ysb-count/join), which may run side by side.
func ysbJobName(part string) string {
	if part == ysb.PartAll {
		return "ysb"
	}
	return "ysb-" + part
}

func runCommand() *cobra.Command {
	var acct accountingFlags
	cmd := &cobra.Command{
		Use:   "run CONFIG.yaml",
		Short: "Run a Benthos configuration with the harness's cp_input and cp_output (and YSB's operators)",
		Long: `Runs any Benthos configuration (https://warpstreamlabs.github.io/bento/ and the
Benthos docs describe the format) with the engine's own components and these:
cp_input (the harness's buckets from a broker, one message per tuple, its
identity in the metadata), cp_output (tuples or windows back to a broker as
buckets), ysb_redis_join and ysb_window_count. docs/sut.md has the contract.`,
		Example: `  # a map job: every tuple from one subject to another, as it came
  cat > map.yaml <<'YAML'
  input:
    cp_input: {url: 'jetstream://127.0.0.1:4222/in?group=map', schema: raw}
  output:
    cp_output: {url: 'jetstream://127.0.0.1:4222/out', schema: raw}
  YAML
  cpjob run map.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conf, err := readfile.Limited(args[0], 1<<20)
			if err != nil {
				return cli.Usage(fmt.Errorf("the configuration: %w", err))
			}
			df, stopAccounting, err := acct.start(jobName(args[0]))
			if err != nil {
				return err
			}
			ctx, stallsOK, stallErr := acct.stallCheck(cmd.Context(), df)
			job, err := buildRun(df, conf, args[0], stallsOK)
			if err != nil {
				return errors.Join(err, stopAccounting())
			}
			fmt.Fprintf(os.Stderr, "cpjob run: %s\n", args[0])
			return errors.Join(run(ctx, job.Run, job.Stop), stallErr(), stopAccounting())
		},
	}
	acct.register(cmd.Flags())
	return cmd
}

// buildRun makes the stream of a configuration.
// connected (each plugin's connection) checks the job's stalls.
func buildRun(df *dataflow.Job, conf []byte, name string, connected func() bool) (*service.Stream, error) {
	env, err := ysb.Environment(brokers.All(), ysb.Hooks{Operators: df, Connected: func(plugin, where string) {
		if connected() {
			fmt.Fprintf(os.Stderr, "cpjob run: %s connected to %s\n", plugin, where)
		}
	}})
	if err != nil {
		return nil, err
	}
	b := env.NewStreamBuilder()
	if err := b.SetYAML(string(conf)); err != nil {
		return nil, cli.Usage(fmt.Errorf("%s: %w", name, err))
	}
	job, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return job, nil
}

// jobName names a configuration's job in the analyses: its file's base
// name without the extension, as a job name may be ("map.yaml": map).
func jobName(path string) string {
	n := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	n = strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == '\t' || r == '\n' || r == '\\' {
			return '-'
		}
		return r
	}, n)
	if n == "" {
		return "job"
	}
	return n[:min(len(n), 64)]
}

// run runs a job until ctx ends (a signal), then stops it within 10 s.
func run(ctx context.Context, runJob, stop func(context.Context) error) error {
	jobCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runJob(jobCtx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	stopCtx, cancelStop := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelStop()
	if err := stop(stopCtx); err != nil {
		return fmt.Errorf("stop the job: %w", err)
	}
	return nil
}
