// Command cpsweep finds the maximum sustainable throughput of a receiving
// system by driving dgsend and dgrecv agents through trials at rising rates.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cloudprofiler-go/cp/analysis/report"
	"github.com/cloudprofiler-go/cp/cmd/internal/cli"
	"github.com/cloudprofiler-go/cp/internal/readfile"
	"github.com/cloudprofiler-go/cp/internal/redact"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/sweep"
	"github.com/cloudprofiler-go/cp/sweep/jobmetrics"
	"github.com/cloudprofiler-go/cp/sweep/remote"
	"github.com/cloudprofiler-go/cp/sweep/search"
	"github.com/cloudprofiler-go/cp/sweep/verdict"
)

func main() {
	code := sweep.ExitAnswer
	cmd := command(&code)
	// An error may quote a name read from a run directory, which must not
	// drive the terminal.
	os.Exit(cli.Execute(cli.SignalContext("cpsweep"), cmd, termsafe.NewWriter(os.Stderr), &code, sweep.ExitError))
}

// options are cpsweep's flags; the trial plan, its rules and the search
// are bound straight to the sweep types they configure.
type options struct {
	verbose                  bool
	plan                     sweep.TrialPlan
	events                   cli.Events // --events: the plan's scenario is events:FILE
	search                   sweep.Search
	senders, receivers       []string
	jobAgents                []string
	jobMetrics               []string
	jobMetricsMap            string
	jobMapping               jobmetrics.Mapping
	discover                 discovery
	tok                      cli.TokenFlags
	name                     string
	resultsDir, profileFile  string
	profileAt                cli.ProfileAt
	profileRate              cli.Rate
	profileSearch            bool
	lanes, localSenders      int
	sut                      string
	job                      jobFlags
	agentTimeout, retryAgent time.Duration
	host                     verdict.HostRules
	jsonOut, clock           bool
	planFile                 string   // --plan: the settings' file
	yes                      bool     // --yes: what a plan file reads and contacts was seen
	fromPlan                 []string // the settings the plan file set
	expect                   sweep.Expectation
	ran                      []byte // the settings the sweep ran with, as a plan file
}

// notInPlans are the settings a plan file neither holds nor records: the
// plan itself, and the token, a secret (--token-file names a file, which
// is no secret).
var notInPlans = []string{"plan", "token", "yes"}

// sweepExamples are cpsweep's --help examples.
const sweepExamples = `  # on this machine: local agents on loopback
  cpsweep --duration 3s --bucket 100

  # two sender hosts, one receiver host, agents started there with --agent --token-file
  cpsweep --sender 10.0.0.2:9101 --sender 10.0.0.3:9101 --receiver 10.0.0.4:9102 --token-file token --threads 2

  # agents found by DNS (a Kubernetes headless Service; cpsweep deploy kubernetes)
  cpsweep --senders-from dns:cp-sender.cp.svc.cluster.local --sender-count 2 \
    --receivers-from dns:cp-receiver.cp.svc.cluster.local --token-file /etc/cp/token/token

  # the paper's linear search, 1 M to 5 M tuples/s in steps of 100 k
  cpsweep --search linear --from 1M --to 5M --step 100k

  # a stream processor between two topics (docs/sut.md): cpjob ysb, or your own job
  cpsweep --input 'jetstream://127.0.0.1:4222/ysb.in?group=ysb' --output jetstream://127.0.0.1:4222/ysb.out \
    --scenario ad-event --schema window --expect-filter 'event_type == view'

  # a system under test between senders and receivers (relay)
  cpsweep --sender h1:9101 --receiver h3:9102 --relay-input tcp://sut:6000 --schema raw

  # relate the agents' TSCs, profile one trial at 90% of the answer, then read it
  cpsweep --clock --profile handlers.yaml --name run1
  cpsweep analyze runs/*-run1 && cpsweep report runs/*-run1

  # why the limit is where it is: every trial's stages, stalls and limiting stage
  cpsweep diagnose runs/*-run1

  # start where the stages' service-rate estimates say the answer is
  cpsweep --hint service-rate --work 10us --bucket 10

  # a stage's capacity measured alone (ground truth for the estimates)
  cpsweep capacity consumer --work 10us --bucket 10`

func command(code *int) *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "cpsweep",
		Short: "Find the maximum sustainable throughput with dgsend/dgrecv agents",
		Long: `cpsweep runs trials: every sender agent emits its share of a target rate for a
warm-up plus a measured window, and the receivers account for every tuple. A
trial passes only if the schedule was met, every emitted tuple was consumed
(nr_emit == nr_recv), lateness stayed within budget, the receivers' backlog did
not grow, and (optionally) p99 latency met its objective. A failing trial names
every rule that failed, with the numbers.

The fast search (default) ramps the rate up geometrically until a trial fails,
then narrows [last pass, first fail] to --precision, guided by the rate the
failing trials actually achieved. Then it repeats the last pass and the first
fail (--boundary-runs, interleaved): the answer is the highest rate that passed
every run, and rates above it that passed only sometimes are its measured
uncertainty, printed beside the search's resolution. A trial during which other
processes used the host (--max-others, --max-steal) is disturbed: repeated, never
judged. The linear search is the paper's (--from --to --step).

With no --sender/--receiver, cpsweep starts local agents on loopback (dgsend and
dgrecv next to it or on PATH) and stops them afterwards. Every sweep writes
runs/<time>-<name>/ (config, trials as JSON and CSV, full agent results per
trial, summary.json, sweep.svg, diagnosis.json). Every agent accounts its
stages' time, and every failing trial and the answer say which stage limited
them ("limited by: consumer (...)"; cpsweep diagnose, docs/diagnosis.md).
Ctrl-C stops the running trial and keeps every finished one.`,
		Example:           sweepExamples,
		Args:              cobra.NoArgs,
		PersistentPreRunE: applyPlan(code, &o.planFile, &o.yes, &o.fromPlan),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true
			o.job.bucketGiven = cmd.Flags().Changed("bucket")
			o.ran = cli.PlanOf(cmd.Flags(), planHeader, notInPlans...)
			unused, err := checkNeeds(cmd.Flags(), o.fromPlan)
			if err != nil {
				*code = sweep.ExitInvalidPlan
				return err
			}
			if unused != "" {
				fmt.Fprintf(termsafe.NewWriter(os.Stderr), "note: %s\n", unused)
			}
			if o.plan.Scenario, o.plan.Events, err = o.events.Scenario(o.plan.Scenario, cmd.Flags().Changed("scenario")); err != nil {
				*code = sweep.ExitInvalidPlan
				return err
			}
			if o.profileFile != "" && !cmd.Flags().Changed("clock") {
				o.clock = true // a profiled run's records are joined across hosts by the clocks' relation
			}
			return o.execute(cmd.Context(), code)
		},
	}
	cmd.SetErr(termsafe.NewWriter(os.Stderr))
	cmd.AddCommand(clockCommand(code), logsCommand(), profilerCommand(), analyzeCommand(), reportCommand(), diagnoseCommand(), capacityCommand(), invariantsCommand(code), watchCommand(), deployCommand(code), demoCommand(code), compareCommand(code), rerunCommand(code))
	o.register(cmd.Flags())
	cli.Conventions(cmd, func(c *cobra.Command, err error) string {
		// A sweep flag given to a command that passes the sweep's flags
		// after "--" (demo nats, deploy kubernetes).
		if c != cmd && strings.Contains(c.Use, "[-- sweep flags]") {
			if f := cli.FlagNamed(cmd.Flags(), err); f != nil {
				return fmt.Sprintf("--%s is a sweep flag: put it after --, e.g. %s -- --%s ...", f.Name, c.CommandPath(), f.Name)
			}
		}
		return ""
	})
	return cmd
}

// planHeader heads the plan.yaml of every run directory.
const planHeader = `cpsweep's settings as this sweep ran with them: its flags, without the dashes.
cpsweep rerun RUN_DIR repeats the sweep; cpsweep --plan FILE reads this file,
and a flag given beside it wins. The token is left out: give --token-file.`

// applyPlan runs before every subcommand: the sweep's --plan file sets the
// flags the command line did not, and what those settings read, write and
// contact is shown and goes on only when confirmed (a plan may come from
// someone else: a run directory downloaded to rerun it); then a URL with
// credentials in any flag or argument is an invalid plan, wherever it
// came from.
func applyPlan(code *int, planFile *string, yes *bool, fromPlan *[]string) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		if c.Flags().Lookup("plan") != nil && *planFile != "" {
			set, err := cli.ApplyPlan(c.Flags(), *planFile, notInPlans...)
			*fromPlan = set
			if err == nil {
				err = confirmPlan(c.Flags(), set, *planFile, *yes)
			}
			if err != nil {
				*code = sweep.ExitInvalidPlan
				c.SilenceUsage = true
				return err
			}
		}
		if err := cli.RefuseCredentials(c.Flags(), args); err != nil {
			*code = sweep.ExitInvalidPlan
			c.SilenceUsage = true
			return err
		}
		return nil
	}
}

// confirmPlan shows what the settings a plan file set read, write and
// contact, and goes on when that is confirmed (--yes, or y on a terminal).
func confirmPlan(f *pflag.FlagSet, set []string, planFile string, yes bool) error {
	reach := cli.PlanReach(f, set, sweepFileOf)
	if reach.Empty() {
		return nil
	}
	w := termsafe.NewWriter(os.Stderr)
	fmt.Fprintf(w, "the plan %s:\n", termsafe.Escape(planFile))
	reach.Write(w)
	return cli.Confirm(os.Stdin, w, yes, "the plan "+termsafe.Escape(planFile))
}

// sweepFileOf is the file a sweep setting's value reads: a scenario or a
// shape may name a built-in instead.
func sweepFileOf(name, value string) string {
	switch name {
	case "scenario":
		return scenarios.FileOf(value)
	case "shape":
		return scenarios.ShapeFileOf(value)
	}
	return value
}

// markReach says which of the sweep's settings name files it reads, the
// directory it writes in and the hosts it contacts (cli.PlanReach).
func markReach(f *pflag.FlagSet) {
	cli.MarkReach(f, cli.ReachReads, "events", "job-metrics-map", "profile", "scenario", "shape", "token-file")
	cli.MarkReach(f, cli.ReachWrites, "results")
	cli.MarkReach(f, cli.ReachContacts, "dns-server", "input", "job-agent", "job-metrics", "jobs-from", "output", "receiver",
		"receivers-from", "relay-input", "sender", "senders-from", "sut")
}

func (o *options) register(f *pflag.FlagSet) {
	p, s := &o.plan, &o.search
	f.BoolVar(&o.yes, "yes", false, "go on with a --plan (or cpsweep rerun) that reads files, writes outside the working directory or contacts hosts,\nafter the list of them is shown, without asking (with no terminal to ask on, such a plan is refused without it)")
	f.StringVar(&o.planFile, "plan", "", "read the sweep's settings from this YAML file: the flags' names without the dashes, a list for a flag given\nmore than once (examples/plans/; every run directory keeps its own as plan.yaml). A flag given beside it wins;\nthe files, directories and hosts it names are shown first, and used only when confirmed (--yes)")
	f.StringVar(&o.profileFile, "profile", "", "after the search, run one profiled trial with these handlers (YAML) on every agent and collect the logs into the run directory")
	o.profileAt = cli.ProfileAt{Frac: 0.9}
	f.Var(&o.profileAt, "profile-at", "the profiled trial's rate, as a fraction of the highest passing rate (latencies at a sustainable rate),\nor limit: the first failing rate, at least 110% of the answer (the activity graph names what limits the run)")
	f.Var(&o.profileRate, "profile-rate", "the profiled trial's rate instead of --profile-at (e.g. above the answer, to see what limits an overloaded run: cpsweep analyze --pag)")
	f.BoolVar(&o.profileSearch, "profile-search", false, "profile every trial of the search with --profile too: the answer is the maximum sustainable rate while profiled (compare with a sweep without to measure the profiler's overhead)")
	f.StringArrayVar(&o.senders, "sender", nil, "sender agent control address host:port (repeat); none: local agents")
	f.StringArrayVar(&o.receivers, "receiver", nil, "receiver agent control address host:port (repeat)")
	f.StringArrayVar(&o.jobMetrics, "job-metrics", nil, "a job's Prometheus metrics http://HOST:PORT/metrics (repeat), read by Flink's names (busyTimeMsPerSecond, backPressuredTimeMsPerSecond, idleTimeMsPerSecond, numRecordsIn) or --job-metrics-map's: its operators join every trial's diagnosis (docs/dataflow.md)")
	f.StringVar(&o.jobMetricsMap, "job-metrics-map", "", "a mapping file (YAML) for --job-metrics: the job's name, its metrics' names, the labels naming an operator, the dataflow's edges")
	f.StringArrayVar(&o.jobAgents, "job-agent", nil, "a job's control address host:port (cpjob --agent-addr; repeat): its operators' own accounting joins every trial's diagnosis (docs/dataflow.md)")
	o.discover.register(f)
	f.StringArrayVar(&p.SenderTargets, "relay-input", nil, "relay topology: senders send to these endpoints of a system under test (repeat)")
	o.tok.Register(f, "token the agents expect")
	f.StringVar(&s.Method, "search", "fast", "fast or linear")
	// Rates are read once, into the search plan (one parse, with the flags).
	s.Fast.Start, s.Linear.From, s.Linear.To, s.Linear.Step = 500e3, 100e3, 5e6, 100e3
	cli.RateVar(f, &s.Fast.Start, "start", "fast: first rate (tuples/s, k/M suffixes)")
	cli.RateVar(f, &s.Fast.Max, "max-rate", "fast: never try above this (0: no limit)")
	cli.RateVar(f, &s.Fast.Min, "min-rate", "fast: the floor: when trials keep failing, the search ramps down geometrically to this before it says no rate passed (0: --start/1024)")
	f.Float64Var(&s.Fast.Factor, "factor", search.DefaultFactor, "fast: ramp multiplier")
	f.Float64Var(&s.Fast.Precision, "precision", 0.02, "fast: the search's resolution: narrow until (first fail - last pass) / last pass is at most this (the boundary's repeats then measure how reproducible the answer is)")
	f.IntVar(&s.Fast.Runs, "boundary-runs", search.DefaultBoundaryRuns, "fast: run the last pass and the first fail this many times each in all (interleaved); the answer is the highest rate that passed every run (1: no repeats)")
	f.IntVar(&s.Fast.MaxTrials, "max-trials", 24, "fast: give up after this many trials (the boundary's repeats included; a sweep that runs out says so and states what it had)")
	f.StringVar(&s.Fast.Hint, "hint", "", "fast: \"service-rate\" runs one short trial at --start first, reads every stage's service-rate estimates and starts from the smallest: a trial at 120% of it measures the capacity, the narrowing starts just below (after a later pass when none converged there; docs/service-rate.md)")
	cli.RateVar(f, &s.Linear.From, "from", "linear: first rate")
	cli.RateVar(f, &s.Linear.To, "to", "linear: last rate")
	cli.RateVar(f, &s.Linear.Step, "step", "linear: step")
	f.DurationVar(&p.Duration, "duration", 3*time.Second, "measured window of each trial")
	f.DurationVar(&p.Warmup, "warmup", time.Second, "warm-up before the measured window")
	f.IntVar(&p.Threads, "threads", 1, "emission threads per sender agent")
	f.IntVar(&p.BucketSize, "bucket", 100, "tuples per message")
	f.StringVar(&p.Scenario, "scenario", "synthetic-100", "workload (see dgsend --help)")
	o.events.Register(f)
	f.StringVar(&p.Shape, "shape", "constant", "rate shape of each trial around its target (see dgsend --help), e.g. poisson or sine:0.2,1s")
	f.StringVar((*string)(&p.Overflow), "overflow", "block", "sender overflow policy: block or drop")
	f.StringVar((*string)(&p.Idle), "idle", "auto", "sender idle strategy (see dgsend --help)")
	f.StringVar(&p.Schema, "schema", "synthetic", "receiver schema: ad-event, synthetic, raw, or window (a windowed job's counts, docs/wire.md)")
	f.BoolVar(&p.Drain, "drain", false, "receivers only count headers (measures senders and network)")
	f.DurationVar(&p.WorkPerTuple, "work", 0, "busy work per consumed tuple at the receivers (emulates a slower system)")
	cli.StallsVar(f, &p.Stalls, "stall", "test fixture: in every trial, stop a stage for a while: consumer@5s+1s, lane<N>@..., thread<N>@... (repeat; see dgrecv/dgsend --help)")
	f.DurationVar(&p.DecodeWork, "decode-work", 0, "test fixture: busy work per decoded bucket on every receiver lane")
	f.DurationVar(&p.SendWork, "send-work", 0, "test fixture: busy work per bucket on every sender thread, before each send (a sender-bound pipeline)")
	f.DurationVar(&p.StagePeriod, "stage-period", stage.DefaultPeriod, "every agent accounts its stages' time and samples it this often, 10ms..10s\n(the diagnosis's snapshot period, docs/diagnosis.md); 0 turns the accounting off")
	cli.ScheduleVar(f, &p.WorkSchedule, "work-schedule", "test fixture: the receivers' work per tuple over each trial, e.g. 10us@0s,40us@2s (instead of --work)")
	f.IntVar(&p.Ring, "ring", 0, "receiver ring size in buckets (0: default)")
	f.DurationVar(&p.EndTimeout, "end-timeout", 5*time.Second, "receivers give up on end markers after this long without data")
	f.Float64Var(&p.Rules.LatenessBudgets, "lateness-budgets", verdict.DefaultRules.LatenessBudgets, "rule: p99 lateness at most this many slot budgets")
	f.DurationVar(&p.Rules.LatenessFloor, "lateness-floor", verdict.DefaultRules.LatenessFloor, "rule: ... but never a bound below this")
	f.Float64Var(&p.Rules.BacklogGrowth, "backlog-growth", verdict.DefaultRules.BacklogGrowth, "rule: receiver backlog may grow at most this fraction of the rings over the window")
	cli.RateVar(f, &o.expect.MinRate, "expect-min-rate", "a gate for CI: exit with status 10 when the answer is below this rate (tuples/s, k/M suffixes), as k6's thresholds do")
	f.DurationVar(&o.expect.P99, "expect-p99", 0, "a gate for CI: exit with status 10 when the p99 latency at the answer is above this (0: off)")
	f.DurationVar(&p.Rules.LatencyP99, "latency-p99", 0, "rule: p99 end-to-end latency objective (0: off)")
	f.IntVar(&o.lanes, "lanes", 1, "local mode: receiver lanes")
	f.StringArrayVar(&p.SUTProcesses, "sut-process", nil, "the system under test's processes on the agents' hosts, by name (as ps shows it, e.g. nats-server; repeat): their CPU is the system's, not other processes' (--max-others)")
	f.StringVar(&o.sut, "sut", "", "local mode: a broker as the system under test, nats://HOST:PORT/SUBJECT, jetstream://HOST:PORT/SUBJECT[?storage=memory&ack=explicit],\nredis://HOST:PORT/KEY (Redis Streams) or kafka://HOST:PORT/TOPIC: the senders publish into it and the receiver consumes from it (docs/brokers.md)")
	o.job.register(f, p)
	f.IntVar(&o.localSenders, "local-senders", 1, "local mode: sender agents")
	f.StringVar(&o.resultsDir, "results", "runs", "the folder that run directories are written in (runs/<time>-<name>/)")
	f.StringVar(&o.name, "name", "sweep", "name of this sweep (in the run directory's name)")
	f.BoolVar(&o.jsonOut, "json", false, "print the summary as JSON")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "print each trial's details too: every failed rule's numbers, what limited it and the evidence, the hosts' CPU, the service rates'\nnext limit, the trials left, the clock relations, and the trials' table (trials.json and the report keep them either way)")
	f.DurationVar(&o.agentTimeout, "agent-timeout", sweep.DefaultAgentTimeout, "an agent that answers no status poll for this long during a trial has failed (the sweep stops)")
	o.host = verdict.DefaultHostRules
	f.Float64Var(&o.host.MaxOthers, "max-others", o.host.MaxOthers, "a trial during which other processes used more than this share of a host's CPUs is disturbed: repeated, never judged (0: off; docs/sweep.md says how the default was chosen)")
	f.Float64Var(&o.host.MaxSteal, "max-steal", o.host.MaxSteal, "a trial during which the hypervisor stole more than this share of a host's CPUs is disturbed (0: off)")
	f.DurationVar(&o.host.Backoff, "disturbed-backoff", o.host.Backoff, "pause before repeating a disturbed trial, doubled for each next repeat (at most 2m)")
	f.Float64Var(&o.host.MaxWait, "max-wait", o.host.MaxWait, "a trial whose hot threads waited runnable more than this share of the time is disturbed (0: off; see docs/sweep.md)")
	f.IntVar(&o.host.MaxRepeats, "max-repeats", o.host.MaxRepeats, "how many times a disturbed trial is repeated before the sweep ends without an answer (exit 7)")
	f.DurationVar(&o.retryAgent, "retry-agent", 0, "after an agent failure, wait this long for the agents to answer again and repeat the trial (0: stop the sweep)")
	f.BoolVar(&o.clock, "clock", false, "probe the agents' TSCs before the first trial and after the last, and write relation.json (see cpsweep clock --help);\non by default with --profile, whose records the analyses join across hosts by it (--clock=false: not probed)")
	markReach(f)
}

// check validates the whole plan before any agent starts and before a run
// directory exists; every error is an invalid plan (exit status 4). It
// returns the handler configuration of --profile, parsed once (and its
// text, for the record).
func (o *options) check() (string, *profiler.Handlers, error) {
	if (len(o.senders) == 0) != (len(o.receivers) == 0) {
		return "", nil, errors.New("give both --sender and --receiver agents, or neither (local agents on loopback)")
	}
	if err := o.discover.check(o); err != nil {
		return "", nil, err
	}
	if err := o.checkJobMetrics(); err != nil {
		return "", nil, err
	}
	if err := checkSUT(o.sut, len(o.senders) > 0 || o.discover.senders != "", len(o.plan.SenderTargets) > 0); err != nil {
		return "", nil, err
	}
	if err := rundir.CheckResults(o.resultsDir); err != nil {
		return "", nil, err
	}
	if o.localSenders < 1 || o.localSenders > 64 || o.lanes < 1 || o.lanes > 64 {
		return "", nil, fmt.Errorf("--local-senders and --lanes must be 1..64, got %d and %d", o.localSenders, o.lanes)
	}
	if err := o.host.Validate(); err != nil {
		return "", nil, err
	}
	if o.agentTimeout < time.Second || o.agentTimeout > 10*time.Minute || o.retryAgent < 0 || o.retryAgent > time.Hour {
		return "", nil, fmt.Errorf("--agent-timeout must be 1s..10m and --retry-agent 0..1h, got %v and %v", o.agentTimeout, o.retryAgent)
	}
	var profile []byte
	if o.profileSearch && o.profileFile == "" {
		return "", nil, errors.New("--profile-search profiles the search with the handlers of --profile: give --profile too")
	}
	if o.profileFile != "" {
		var err error
		if profile, err = readfile.Limited(o.profileFile, profiler.MaxHandlersBytes); err != nil {
			return "", nil, fmt.Errorf("--profile: %w", err)
		}
	}
	if err := o.job.apply(&o.plan, o.sut, len(o.plan.SenderTargets) > 0, o.lanes); err != nil {
		return "", nil, err
	}
	o.plan.Relay = len(o.plan.SenderTargets) > 0
	if o.search.Method != "linear" { // a job's kept rate may fall short by what the search cannot resolve
		o.plan.Rules.JobKept = o.search.Fast.Precision
	}
	if o.profileRate > 0 && o.profileFile == "" {
		return "", nil, &sweep.PlanError{Problems: []string{"--profile-rate needs --profile handlers.yaml"}}
	}
	if err := o.plan.Resolve(); err != nil {
		return "", nil, err
	}
	nSenders := len(o.senders)
	switch {
	case o.discover.senders != "":
		nSenders = o.discover.nSenders
	case nSenders == 0:
		nSenders = o.localSenders
	}
	var handlers *profiler.Handlers
	var problems []string
	if profile != nil {
		var err error
		if handlers, err = profiler.ParseHandlers(profile, o.profileFile); err != nil {
			problems = append(problems, err.Error())
		}
	}
	at := o.profileAt.Frac
	if o.profileAt.Limit {
		at = 1 // a fraction the check accepts: the limit's rate comes from the search
	}
	err := sweep.CheckPlan(o.plan, o.search, nSenders, o.sut, handlers, at)
	var pe *sweep.PlanError
	switch {
	case len(problems) == 0:
	case errors.As(err, &pe):
		pe.Problems = append(problems, pe.Problems...)
	case err == nil:
		err = &sweep.PlanError{Problems: problems}
	}
	return string(profile), handlers, err
}

// agents connects to the agents given, or starts local ones (closed by
// the returned function).
func (o *options) agents(ctx context.Context, ctrl *sweep.Controller, tok string) (func(), error) {
	if o.discover.jobs != "" {
		var err error
		if o.jobAgents, err = o.discover.resolveJobs(ctx); err != nil {
			return nil, err
		}
	}
	for _, a := range o.jobAgents {
		ctrl.Jobs = append(ctrl.Jobs, remote.New(a, tok))
	}
	for _, u := range o.jobMetrics {
		ctrl.JobMetrics = append(ctrl.JobMetrics, jobmetrics.Source{URL: u, Mapping: o.jobMapping})
	}
	if o.discover.senders != "" {
		var err error
		if o.senders, o.receivers, err = o.discover.resolve(ctx); err != nil {
			return nil, err
		}
	}
	if len(o.senders) == 0 {
		local, err := sweep.StartLocal(ctx, sweep.LocalTopology{Senders: o.localSenders, Lanes: o.lanes, SUT: o.sut, Job: o.plan.Job})
		if err != nil {
			return nil, err
		}
		ctrl.Senders, ctrl.Receivers = local.Senders, local.Receivers
		return func() { local.Close() }, nil
	}
	for _, a := range o.senders {
		ctrl.Senders = append(ctrl.Senders, remote.New(a, tok))
	}
	for _, a := range o.receivers {
		ctrl.Receivers = append(ctrl.Receivers, remote.New(a, tok))
	}
	if o.discover.senders != "" || o.discover.jobs != "" {
		// in DNS before they answer: wait for them (Prepare names one that never does)
		ctrl.WaitAnswering(ctx, o.discover.timeout)
	}
	return func() {}, nil
}

func (o *options) execute(ctx context.Context, code *int) error {
	invalid := func(err error) error {
		*code = sweep.ExitInvalidPlan
		return err
	}
	tok, err := o.tok.Read()
	if err != nil {
		return invalid(err)
	}
	profileYAML, profile, err := o.check()
	if err != nil {
		return invalid(err)
	}
	// The first signal stops the running trial and keeps what is done; a
	// second one aborts at once (cli.SignalContext).
	ctrl := &sweep.Controller{Plan: o.plan, AgentTimeout: o.agentTimeout}
	closeAgents, err := o.agents(ctx, ctrl, tok)
	if err != nil {
		*code = sweep.ExitCode(nil, err)
		return err
	}
	defer closeAgents()
	if o.plan.Job != nil && len(o.plan.SUTProcesses) == 0 {
		fmt.Fprintln(os.Stderr, "note: the job, its brokers and any store it reads (Redis) count as other processes on a shared host, which disturbs trials:\n      name them, e.g. --sut-process cpjob --sut-process nats-server --sut-process redis-server")
	}
	s := &sweep.Sweep{Ctrl: ctrl, Name: o.name, Results: o.resultsDir, Log: termsafe.NewWriter(os.Stderr), Verbose: o.verbose, Live: liveTerminal(), Args: redact.Args(os.Args), Plan: o.ran, Plot: report.WriteSweepPlot, Clock: o.clock,
		Profile: profile, ProfileYAML: profileYAML, ProfileAt: o.profileAt.Frac, ProfileAtLimit: o.profileAt.Limit, ProfileRate: float64(o.profileRate), ProfileSearch: o.profileSearch, RetryAgent: o.retryAgent, Search: o.search, Host: o.host}
	report, err := s.Execute(ctx)
	if report != nil {
		if o.jsonOut {
			if werr := cli.WriteJSON(os.Stdout, report); werr != nil && err == nil {
				err = werr
			}
		} else if o.verbose {
			sweep.WriteText(os.Stdout, report)
		} else {
			sweep.WriteAnswer(os.Stdout, report)
		}
	}
	*code = sweep.ExitCode(report, err)
	if short := o.expect.Shortfall(report); short != "" && *code == sweep.ExitAnswer {
		*code = sweep.ExitShort
		fmt.Fprintf(os.Stderr, "cpsweep: SHORT of what was expected (exit status %d): %s\n", sweep.ExitShort, short)
	}
	if *code == sweep.ExitContradicted && o.jsonOut {
		fmt.Fprintf(os.Stderr, "cpsweep: NOT TRUSTWORTHY (exit status 6): %s\n", report.Contradicted)
	}
	if *code == sweep.ExitNoRatePassed && err == nil {
		fmt.Fprintln(os.Stderr, "cpsweep: no rate passed (exit status 3): the system did not sustain even the lowest rate tried")
	}
	return err
}

// checkJobMetrics reads --job-metrics-map (Flink's names without it) and
// checks the URLs.
func (o *options) checkJobMetrics() error {
	o.jobMapping = jobmetrics.Flink()
	if o.jobMetricsMap != "" {
		if len(o.jobMetrics) == 0 {
			return errors.New("--job-metrics-map maps --job-metrics: give the job's metrics URL too")
		}
		m, err := jobmetrics.LoadMapping(o.jobMetricsMap)
		if err != nil {
			return fmt.Errorf("--job-metrics-map: %w", err)
		}
		o.jobMapping = m
	}
	if len(o.jobMetrics) > 8 {
		return fmt.Errorf("--job-metrics: at most 8, got %d", len(o.jobMetrics))
	}
	for _, u := range o.jobMetrics {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("--job-metrics %.64q: an http:// URL of the job's metrics, e.g. http://10.0.0.5:9105/metrics", u)
		}
	}
	return nil
}

// liveTerminal is standard error when it is a terminal, where the running
// trial's line is shown and cleared (nil: none).
func liveTerminal() io.Writer {
	if cli.IsTerminal(os.Stderr) {
		return os.Stderr
	}
	return nil
}
