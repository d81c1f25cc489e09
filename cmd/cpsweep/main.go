// Command cpsweep finds the maximum sustainable throughput of a receiving
// system by driving dgsend and dgrecv agents through trials at rising rates.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cloudprofiler-go/cp/internal/cli"
	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/internal/readfile"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/sweep"
)

func main() {
	code := sweep.ExitAnswer
	cmd := command(&code)
	if err := cmd.Execute(); err != nil && code == sweep.ExitAnswer {
		code = sweep.ExitError
	}
	os.Exit(code)
}

func command(code *int) *cobra.Command {
	var (
		senders, receivers, relayInputs         []string
		token, tokenFile, method, name          string
		scenario, overflow, idle, schema, shape string
		resultsDir, profileFile                 string
		factor, precision, profileAt            float64
		budgets, backlog                        float64
		confirm, maxTrials, threads, bucket     int
		lanes, localSenders, ring               int
		duration, warmup, work, endTimeout      time.Duration
		latenessFloor, latencyP99               time.Duration
		agentTimeout, retryAgent                time.Duration
		search                                  sweep.Search
		drain, jsonOut, clock                   bool
	)
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
failing trials actually achieved, and repeats the final pass to confirm. The
linear search is the paper's (--from --to --step).

With no --sender/--receiver, cpsweep starts local agents on loopback (dgsend and
dgrecv next to it or on PATH) and stops them afterwards. Every sweep writes
results/<time>-<name>/ (config, trials as JSON and CSV, full agent results per
trial, summary.json, sweep.svg). Ctrl-C stops the running trial and keeps every
finished one.`,
		Example: `  # on this machine: local agents on loopback
  cpsweep --duration 3s --bucket 100

  # two sender hosts, one receiver host, agents started there with --agent --token-file
  cpsweep --sender 10.0.0.2:9101 --sender 10.0.0.3:9101 --receiver 10.0.0.4:9102 --token-file token --threads 2

  # the paper's linear search, 1 M to 5 M tuples/s in steps of 100 k
  cpsweep --search linear --from 1M --to 5M --step 100k

  # a system under test between senders and receivers (relay)
  cpsweep --sender h1:9101 --receiver h3:9102 --relay-input tcp://sut:6000 --schema raw

  # relate the agents' TSCs, profile one trial at 90% of the answer, then read it
  cpsweep --clock --profile handlers.yaml --name run1
  cpsweep analyze results/*-run1 && cpsweep report results/*-run1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true
			invalid := func(err error) error {
				*code = sweep.ExitInvalidPlan
				return err
			}
			tok, err := httpapi.ReadToken(token, tokenFile)
			if err != nil {
				return invalid(err)
			}
			if (len(senders) == 0) != (len(receivers) == 0) {
				return invalid(errors.New("give both --sender and --receiver agents, or neither (local agents on loopback)"))
			}
			if localSenders < 1 || localSenders > 64 || lanes < 1 || lanes > 64 {
				return invalid(fmt.Errorf("--local-senders and --lanes must be 1..64, got %d and %d", localSenders, lanes))
			}
			plan := sweep.TrialPlan{Duration: duration, Warmup: warmup, Threads: threads, BucketSize: bucket,
				Scenario: scenario, Shape: shape, Overflow: overflow, Idle: idle, Schema: schema, Drain: drain, WorkPerTuple: work, Ring: ring,
				EndTimeout: endTimeout, Relay: len(relayInputs) > 0, SenderTargets: relayInputs,
				Rules: sweep.Rules{LatenessBudgets: budgets, LatenessFloor: latenessFloor, BacklogGrowth: backlog, LatencyP99: latencyP99}}
			search.Method = method
			search.Fast.Factor, search.Fast.Precision, search.Fast.Confirm, search.Fast.MaxTrials = factor, precision, confirm, maxTrials
			var profile []byte
			if profileFile != "" {
				if profile, err = readfile.Limited(profileFile, profiler.MaxHandlersBytes); err != nil {
					return invalid(fmt.Errorf("--profile: %w", err))
				}
			}
			nSenders := len(senders)
			if nSenders == 0 {
				nSenders = localSenders
			}
			// The whole plan is checked before any agent starts and before
			// a run directory is created.
			if err := plan.Resolve(); err != nil {
				return invalid(err)
			}
			if err := sweep.CheckPlan(plan, search, nSenders, string(profile), profileAt); err != nil {
				return invalid(err)
			}
			if agentTimeout < time.Second || agentTimeout > 10*time.Minute || retryAgent < 0 || retryAgent > time.Hour {
				return invalid(fmt.Errorf("--agent-timeout must be 1s..10m and --retry-agent 0..1h, got %v and %v", agentTimeout, retryAgent))
			}
			// The first signal stops the running trial and keeps what is
			// done; a second one aborts at once.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cli.StopOnSignal("cpsweep", cancel)

			ctrl := &sweep.Controller{Plan: plan, AgentTimeout: agentTimeout}
			if len(senders) == 0 {
				local, err := sweep.StartLocal(ctx, localSenders, lanes, nil)
				if err != nil {
					return err
				}
				defer local.Close()
				ctrl.Senders, ctrl.Receivers = local.Senders, local.Receivers
			} else {
				for _, a := range senders {
					ctrl.Senders = append(ctrl.Senders, sweep.NewClient(a, tok))
				}
				for _, a := range receivers {
					ctrl.Receivers = append(ctrl.Receivers, sweep.NewClient(a, tok))
				}
			}
			s := &sweep.Sweep{Ctrl: ctrl, Name: name, Results: resultsDir, Log: os.Stderr, Live: cli.IsTerminal(os.Stderr), Args: os.Args, Clock: clock,
				Profile: string(profile), ProfileAt: profileAt, RetryAgent: retryAgent, Search: search}
			report, err := s.Execute(ctx)
			if report != nil {
				if jsonOut {
					if werr := cli.WriteJSON(os.Stdout, report); werr != nil && err == nil {
						err = werr
					}
				} else {
					report.WriteText(os.Stdout)
				}
			}
			*code = sweep.ExitCode(report, err)
			if *code == sweep.ExitNoRatePassed && err == nil {
				fmt.Fprintln(os.Stderr, "cpsweep: no rate passed (exit status 3): the system did not sustain even the lowest rate tried")
			}
			return err
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		*code = sweep.ExitInvalidPlan
		return err
	})
	cmd.AddCommand(clockCommand(code), logsCommand(), profilerCommand(), analyzeCommand(), reportCommand())
	f := cmd.Flags()
	f.StringVar(&profileFile, "profile", "", "after the search, run one profiled trial with these handlers (YAML) on every agent and collect the logs into the run directory")
	f.Float64Var(&profileAt, "profile-at", 0.9, "the profiled trial's rate, as a fraction of the highest passing rate")
	f.StringArrayVar(&senders, "sender", nil, "sender agent control address host:port (repeat); none: local agents")
	f.StringArrayVar(&receivers, "receiver", nil, "receiver agent control address host:port (repeat)")
	f.StringArrayVar(&relayInputs, "relay-input", nil, "relay topology: senders send to these endpoints of a system under test (repeat)")
	f.StringVar(&token, "token", "", "token the agents expect")
	f.StringVar(&tokenFile, "token-file", "", "read the token from this file")
	f.StringVar(&method, "search", "fast", "fast or linear")
	// Rates are read once, into the search plan (one parse, with the flags).
	search.Fast.Start, search.Linear.From, search.Linear.To, search.Linear.Step = 500e3, 100e3, 5e6, 100e3
	cli.RateVar(f, &search.Fast.Start, "start", "fast: first rate (tuples/s, k/M suffixes)")
	cli.RateVar(f, &search.Fast.Max, "max-rate", "fast: never try above this (0: no limit)")
	cli.RateVar(f, &search.Fast.Min, "min-rate", "fast: the floor: when trials keep failing, the search ramps down geometrically to this before it says no rate passed (0: --start/1024)")
	f.Float64Var(&factor, "factor", 2, "fast: ramp multiplier")
	f.Float64Var(&precision, "precision", 0.01, "fast: stop when (first fail - last pass) / last pass is at most this")
	f.IntVar(&confirm, "confirm", 1, "fast: repeat the final pass this many times")
	f.IntVar(&maxTrials, "max-trials", 20, "fast: give up after this many trials")
	cli.RateVar(f, &search.Linear.From, "from", "linear: first rate")
	cli.RateVar(f, &search.Linear.To, "to", "linear: last rate")
	cli.RateVar(f, &search.Linear.Step, "step", "linear: step")
	f.DurationVar(&duration, "duration", 3*time.Second, "measured window of each trial")
	f.DurationVar(&warmup, "warmup", time.Second, "warm-up before the measured window")
	f.IntVar(&threads, "threads", 1, "emission threads per sender agent")
	f.IntVar(&bucket, "bucket", 100, "tuples per message")
	f.StringVar(&scenario, "scenario", "synthetic-100", "workload (see dgsend --help)")
	f.StringVar(&shape, "shape", "constant", "rate shape of each trial around its target (see dgsend --help), e.g. poisson or sine:0.2,1s")
	f.StringVar(&overflow, "overflow", "block", "sender overflow policy: block or drop")
	f.StringVar(&idle, "idle", "auto", "sender idle strategy (see dgsend --help)")
	f.StringVar(&schema, "schema", "synthetic", "receiver schema: ad-event, synthetic or raw")
	f.BoolVar(&drain, "drain", false, "receivers only count headers (measures senders and network)")
	f.DurationVar(&work, "work", 0, "busy work per consumed tuple at the receivers (emulates a slower system)")
	f.IntVar(&ring, "ring", 0, "receiver ring size in buckets (0: default)")
	f.DurationVar(&endTimeout, "end-timeout", 5*time.Second, "receivers give up on end markers after this long without data")
	f.Float64Var(&budgets, "lateness-budgets", sweep.DefaultRules.LatenessBudgets, "rule: p99 lateness at most this many slot budgets")
	f.DurationVar(&latenessFloor, "lateness-floor", sweep.DefaultRules.LatenessFloor, "rule: ... but never a bound below this")
	f.Float64Var(&backlog, "backlog-growth", sweep.DefaultRules.BacklogGrowth, "rule: receiver backlog may grow at most this fraction of the rings over the window")
	f.DurationVar(&latencyP99, "latency-p99", 0, "rule: p99 end-to-end latency objective (0: off)")
	f.IntVar(&lanes, "lanes", 1, "local mode: receiver lanes")
	f.IntVar(&localSenders, "local-senders", 1, "local mode: sender agents")
	f.StringVar(&resultsDir, "results", "results", "directory for run directories")
	f.StringVar(&name, "name", "sweep", "name of this sweep (in the run directory's name)")
	f.BoolVar(&jsonOut, "json", false, "print the summary as JSON")
	f.DurationVar(&agentTimeout, "agent-timeout", sweep.DefaultAgentTimeout, "an agent that answers no status poll for this long during a trial has failed (the sweep stops)")
	f.DurationVar(&retryAgent, "retry-agent", 0, "after an agent failure, wait this long for the agents to answer again and repeat the trial (0: stop the sweep)")
	f.BoolVar(&clock, "clock", false, "probe the agents' TSCs before the first trial and after the last, and write relation.json (see cpsweep clock --help)")
	return cmd
}
