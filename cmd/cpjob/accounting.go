package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/cloudprofiler-go/cp/cmd/internal/cli"
	"github.com/cloudprofiler-go/cp/dataflow"
	"github.com/cloudprofiler-go/cp/dataflow/jobagent"
	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/servicerate"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/stage/stagemetrics"
	"github.com/cloudprofiler-go/cp/sweep/agent"
	"github.com/cloudprofiler-go/cp/tsc"
)

// accountingFlags are the job's own operators' accounting (docs/dataflow.md).
type accountingFlags struct {
	metricsAddr, profile, profileDir string
	agentAddr, token, tokenFile      string
	stalls                           []string
	parsed                           []dataflow.Stall // stalls, as start read them
	period                           time.Duration
}

func (a *accountingFlags) register(f *pflag.FlagSet) {
	f.StringVar(&a.metricsAddr, "metrics-addr", "", "serve the operators' accounting on /metrics at HOST:PORT: cp_stage_* (busy, waiting, blocked; items) and Flink's names (busyTimeMsPerSecond, ...: cpsweep --job-metrics)")
	f.StringVar(&a.profile, "profile", "", "a profiler handlers file (profiles/default.yaml): each operator logs every tuple id at its point op.NAME")
	f.StringVar(&a.profileDir, "profile-dir", "cpjob-profile", "with --profile: the directory the operators' logs go to (made if missing)")
	f.StringVar(&a.agentAddr, "agent-addr", "", "serve the operators' accounting to cpsweep as an agent does (cpsweep --job-agent HOST:PORT): its control API at HOST:PORT, TSC probes on the same port (UDP)")
	f.StringVar(&a.token, "token", "", "the agent's bearer token (required off loopback; or --token-file)")
	f.StringVar(&a.tokenFile, "token-file", "", "a file holding the agent's token")
	f.DurationVar(&a.period, "stage-period", dataflow.DefaultPeriod, "how often the operators' states are sampled for the analyses (10ms to 10s): a stall is found from two periods on (run the sweep at the same --stage-period)")
	f.StringArrayVar(&a.stalls, "stall", nil, "an injected stall (experiments only: how well the analyses find it): OPERATOR@START+LENGTH after the job's start, e.g. join@20s+500ms; the operator holds, busy, at its first batch in that span until its end; repeat; needs --agent-addr or --metrics-addr")
}

// parseStalls reads --stall.
func (a *accountingFlags) parseStalls() ([]dataflow.Stall, error) {
	var out []dataflow.Stall
	for _, spec := range a.stalls {
		s, err := inject.ParseStall(spec)
		if err != nil {
			return nil, fmt.Errorf("--stall: %w", err)
		}
		out = append(out, dataflow.Stall{Operator: s.Stage, At: s.At, For: s.For})
	}
	if len(out) > 0 && a.metricsAddr == "" && a.agentAddr == "" {
		return nil, errors.New("--stall: the stalls are for the analyses to find: serve them with --agent-addr or --metrics-addr")
	}
	return out, nil
}

// stallCheck ends a run whose --stall names an operator its job does not
// have: the engine declares its operators as it starts, so check (call
// it once the job has connected) cancels the run's context with the
// error, and cause returns it after the run (nil when none).
func (a *accountingFlags) stallCheck(ctx context.Context, df *dataflow.Job) (run context.Context, check func() bool, cause func() error) {
	run, cancel := context.WithCancelCause(ctx)
	check = func() bool {
		if err := a.checkStalls(df); err != nil {
			cancel(cli.Usage(err))
			return false
		}
		return true
	}
	cause = func() error {
		if err := context.Cause(run); run.Err() != nil && ctx.Err() == nil {
			return err
		}
		return nil
	}
	return run, check, cause
}

// checkStalls refuses a stall of an operator the running job does not have.
func (a *accountingFlags) checkStalls(df *dataflow.Job) error {
	if df == nil {
		return nil
	}
	for _, s := range a.parsed {
		if df.Op(s.Operator) == nil {
			return fmt.Errorf("--stall %s: the job has no operator %q (its operators: docs/dataflow.md)", s.Operator, s.Operator)
		}
	}
	return nil
}

// start makes the job's accounting, serves it and starts its sampling;
// stop stops it, and closes the profiler's logs. Without a flag the job
// is not accounted (nil).
func (a *accountingFlags) start(name string) (df *dataflow.Job, stop func() error, err error) {
	stalls, err := a.parseStalls()
	if err != nil {
		return nil, nil, cli.Usage(err)
	}
	a.parsed = stalls
	if err := stage.CheckPeriod(a.period); err != nil {
		return nil, nil, cli.Usage(fmt.Errorf("--stage-period: %w", err))
	}
	if a.metricsAddr == "" && a.profile == "" && a.agentAddr == "" {
		return nil, func() error { return nil }, nil
	}
	clock, err := tsc.NewClock(20 * time.Millisecond)
	if err != nil {
		return nil, nil, fmt.Errorf("the operators' clock: %w", err)
	}
	cfg := dataflow.Config{Clock: clock, Stalls: stalls, Period: a.period}
	if a.profile != "" {
		if cfg.Handlers, err = profiler.LoadHandlers(a.profile); err != nil {
			return nil, nil, fmt.Errorf("--profile: %w", err)
		}
		if err := cfg.Handlers.CheckLocal(); err != nil {
			return nil, nil, fmt.Errorf("--profile: %w", err)
		}
		if err := os.MkdirAll(a.profileDir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("--profile-dir: %w", err)
		}
		if cfg.Profile, err = profiler.NewIn(a.profileDir, time.Second); err != nil {
			return nil, nil, fmt.Errorf("--profile-dir: %w", err)
		}
	}
	closeLogs := func() error {
		if cfg.Profile == nil {
			return nil
		}
		if err := cfg.Profile.Close(); err != nil {
			return fmt.Errorf("close the operators' logs: %w", err)
		}
		return nil
	}
	if df, err = dataflow.New(cfg); err != nil {
		return nil, nil, errors.Join(err, closeLogs())
	}
	// cp_stage_* as every agent serves them, and Flink's names, the
	// convention cpsweep --job-metrics reads a job in any language by
	metrics := httpapi.Collectors{stagemetrics.Collector{Set: df.Stages()}, stagemetrics.NewFlink(df.Stages(), name)}
	addr, closeMetrics, err := httpapi.ServeMetrics(a.metricsAddr, metrics)
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("--metrics-addr: %w", err), closeLogs())
	}
	if addr != "" {
		fmt.Fprintf(os.Stderr, "cpjob: the operators' accounting on http://%s/metrics\n", addr)
	}
	var rates *servicerate.Tracker
	if a.agentAddr != "" { // before the first operator: its periods are closed for the estimates
		rates = servicerate.Track(df.Stages(), clock)
	}
	df.Start()
	closeAgent := func() {}
	if a.agentAddr != "" {
		srv, err := agent.Listen(agent.Options{Role: jobagent.Role{JobName: name, Job: df, Rates: rates}}, a.agentAddr, a.token, a.tokenFile, 20*time.Millisecond)
		if err != nil {
			df.Stop()
			closeMetrics()
			return nil, nil, errors.Join(fmt.Errorf("--agent-addr: %w", err), closeLogs())
		}
		closeAgent = srv.Close
	}
	return df, func() error {
		closeAgent()
		df.Stop()
		closeMetrics()
		return closeLogs()
	}, nil
}
