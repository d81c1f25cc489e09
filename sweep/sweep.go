package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
	"github.com/cloudprofiler-go/cp/limits"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/sender"
	"github.com/cloudprofiler-go/cp/sweep/search"
	"github.com/cloudprofiler-go/cp/sweep/verdict"
	"github.com/cloudprofiler-go/cp/tsc/probing"
	"github.com/cloudprofiler-go/cp/tsc/probing/probeapi"
)

// Search selects and configures the search method.
type Search struct {
	Method string            `json:"method"` // fast or linear
	Fast   search.FastPlan   `json:"fast"`
	Linear search.LinearPlan `json:"linear"`
}

// Sweep runs one sweep and records it.
type Sweep struct {
	Ctrl   *Controller
	Search Search
	Name   string
	// Results is where the run directory is created (after the agents
	// have answered: a failed pre-flight leaves nothing behind); Run is
	// that directory once Execute has made it.
	Results string
	Out     *rundir.Writer // the run directory being written
	// Plot draws the sweep plot into the run directory (the binary wires
	// report.WriteSweepPlot; nil: none), so that the sweep links no
	// plotting library.
	Plot func(dir, title string, pts []rundir.SweepPoint, lastPass, firstFail float64) error
	// RetryAgent, if above 0, is how long to wait for a failed agent to
	// answer again before repeating its trial (at most MaxAgentRetries
	// times); 0: an agent failure ends the sweep.
	RetryAgent time.Duration
	Log        io.Writer // progress lines (nil: none)
	// Live is the terminal Log escapes its text to, itself: the running
	// trial's line is cleared on it with a control sequence that Log
	// would show as text (nil: no running line).
	Live io.Writer
	// Verbose prints each trial's prediction of its next limit (the
	// service rates', at rates no trial ran) beside its outcome; the
	// trial's record holds it either way.
	Verbose bool
	Args    []string // the command line, recorded in config.json
	// Plan is every setting the sweep ran with, as a plan file (cpsweep
	// --plan), secrets left out: written as plan.yaml, which cpsweep rerun
	// repeats (nil: none written).
	Plan []byte
	// Clock probes the agents' TSCs before the first trial and after the
	// last (ClockCount round trips per ordered pair) and writes
	// relation.json, with the first receiver as the reference.
	Clock      bool
	ClockCount int
	// Profile, if set, is a handler configuration, parsed once
	// (profiler.ParseHandlers): after the search, one more trial runs at
	// ProfileAt × the highest passing rate with it on every agent, and each
	// agent's logs are collected into profiles/<node>/. ProfileYAML is its
	// text as the user wrote it, for config.json.
	Profile     *profiler.Handlers
	ProfileYAML string
	ProfileAt   float64
	// ProfileAtLimit runs the profiled trial at the limit instead: the
	// first failing rate, and at least LimitOverload × the answer, so that
	// the activity graph sees the overloaded pipeline and names what
	// limits it (docs/activity.md).
	ProfileAtLimit bool
	// ProfileRate, if positive, is the profiled trial's rate instead
	// (e.g. above the answer, to profile an overloaded run: what limits
	// it shows in its activity graph).
	ProfileRate float64
	// ProfileSearch runs every trial of the search with Profile's handlers
	// too: the answer is then the maximum sustainable rate while
	// profiled, and its ratio to a sweep without is the profiler's
	// overhead where it matters.
	ProfileSearch bool
	// Host says when a trial's host was too busy with other work to judge
	// it (the zero value judges every trial: verdict.DefaultHostRules is cpsweep's
	// default).
	Host   verdict.HostRules
	report rundir.Summary
	// prior are the earlier sweeps' answers to compare with (History),
	// read once, when the first answer is saved.
	prior     []float64
	priorRead bool
}

// Execute prepares the agents, runs the search and writes the run
// directory as it goes. An interrupted sweep (ctx cancelled) keeps every
// finished trial and returns the partial report with Interrupted set. A
// profile or a TSC relation that was asked for and could not be made is
// an error after the answer (which stands, and is saved).
func (s *Sweep) Execute(ctx context.Context) (*rundir.Summary, error) {
	say := func(format string, args ...any) { s.logf("          "+format+"\n", args...) }
	if s.Ctrl.Waiting == nil { // a wait says what it waits for
		s.Ctrl.Waiting = say
	}
	if s.Ctrl.Progress == nil && s.Verbose {
		s.Ctrl.Progress = say
	}
	agents, err := s.Ctrl.Prepare(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.begin(agents); err != nil {
		return nil, err
	}
	var before *probing.Session
	if s.Clock {
		if before, err = s.probeClocks(ctx); err != nil {
			return &s.report, &AgentError{Agent: "TSC probing", Err: fmt.Errorf("before the sweep: %w", err)}
		}
	}
	rec := &recorder{s: s, partial: &rundir.Result{Method: s.Search.Method}}
	var res *rundir.Result
	if s.ProfileSearch && s.Profile != nil {
		s.Ctrl.TrialProfile, s.report.ProfiledSearch = s.Profile, true
	}
	switch s.Search.Method {
	case "linear":
		res, err = search.Linear(ctx, s.Search.Linear, rec.run)
	default:
		fast := s.Search.Fast
		fast.Floor = sender.MinRate
		res, err = search.Fast(ctx, fast, rec.run)
	}
	s.Ctrl.TrialProfile = nil
	if res == nil {
		res = rec.partial
	}
	interrupted := ctx.Err() != nil
	var agentErr *AgentError
	var disturbed *verdict.DisturbedError
	var wrong *verdict.WrongOutputError
	if errors.As(err, &wrong) { // a judged trial that ended the search: the recorder's trials hold it
		res = rec.partial
		res.FirstFail = wrong.Rate
	}
	failed := errors.As(err, &agentErr) || errors.As(err, &disturbed) || wrong != nil || rec.writeErr != nil
	profileErr := s.profile(ctx, res, rec.run, interrupted, failed)
	var clockErr error
	if before != nil && !interrupted && !failed {
		clockErr = s.relate(ctx, before, rec)
	}
	if serr := s.save(res, interrupted); serr != nil && rec.writeErr == nil {
		rec.writeErr = serr
	}
	if derr := s.diagnoseRun(); derr != nil && rec.writeErr == nil {
		rec.writeErr = derr
	}
	switch {
	case rec.writeErr != nil:
		return &s.report, fmt.Errorf("the run directory could not be written completely (the finished trials are what is on disk): %w", rec.writeErr)
	case err != nil && !interrupted:
		return &s.report, err
	case ctx.Err() != nil:
		return &s.report, nil
	case profileErr != nil:
		return &s.report, fmt.Errorf("the answer stands, but the profile asked for is incomplete: %w", profileErr)
	case clockErr != nil:
		return &s.report, fmt.Errorf("the answer stands, but the TSC relation asked for (--clock) could not be made: %w", clockErr)
	}
	return &s.report, nil
}

// undisturbed runs a trial, and again (at most verdict.HostRules.MaxRepeats more
// times) while its host was disturbed: a disturbed run is neither a pass
// nor a fail, and the search never moves on one. The runs it repeated are
// kept in the trial (Disturbed). When every run was disturbed the sweep
// ends with a *verdict.DisturbedError naming what disturbed it.
func (rec *recorder) undisturbed(ctx context.Context, n int, rate float64, purpose string) (rundir.Trial, error) {
	s := rec.s
	var attempts []rundir.Attempt
	for {
		t, err := s.runTrial(ctx, rec.partial, n, rate, purpose)
		if err != nil {
			return t, err
		}
		t.Hosts = trialHosts(t.Outcome, s.Ctrl.hostOf)
		why := s.Host.Disturbed(t.Hosts)
		if why == "" {
			t.Disturbed = attempts
			return t, nil
		}
		attempts = append(attempts, rundir.Attempt{Reason: why, Pass: t.Verdict.Pass, Achieved: t.Achieved, Hosts: t.Hosts})
		if len(attempts) > s.Host.MaxRepeats || ctx.Err() != nil {
			t.Disturbed = attempts
			s.report.Disturbed = fmt.Sprintf("trial %d at %s: %s (%d run(s), every one disturbed)", n, numfmt.Rate(rate), why, len(attempts))
			return t, &verdict.DisturbedError{Rate: rate, Attempts: len(attempts), Reason: why}
		}
		pause := s.Host.Pause(len(attempts))
		s.logf("trial %-3d %s  DISTURBED: %s; repeating in %v (%d of %d)\n", n, numfmt.Rate(rate), why, pause, len(attempts), s.Host.MaxRepeats)
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
}

// begin creates the run directory (after the agents answered: a failed
// pre-flight leaves nothing behind) and records the configuration.
func (s *Sweep) begin(agents []protocol.AgentInfo) error {
	if s.Out == nil {
		var err error
		if s.Out, err = rundir.Create(s.Results, s.Name, time.Now()); err != nil {
			return err
		}
	}
	settings := make([]json.RawMessage, 3)
	for i, v := range []any{s.Ctrl.Plan, s.Search, s.Host} {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("record the sweep's settings: %w", err)
		}
		settings[i] = b
	}
	s.report = rundir.Summary{FormatVersion: rundir.FormatVersion, Name: s.Name, Started: time.Now().UTC(), Plan: settings[0],
		Search: settings[1], Agents: agents, Topology: s.Ctrl.AgentsSummary(), BlackBoxName: s.Ctrl.BlackBox(), Dir: s.Out.Dir, HostRules: settings[2]}
	if err := s.Out.WriteJSON(rundir.ConfigFile, map[string]any{"plan": s.Ctrl.Plan, "search": s.Search, "agents": agents,
		"topology": s.report.Topology, "args": s.Args, "profile": s.ProfileYAML, "profile_at": s.ProfileAt, "profile_at_limit": s.ProfileAtLimit, "profile_rate": s.ProfileRate, "profile_search": s.ProfileSearch,
		"clock": s.Clock}); err != nil {
		return err
	}
	if s.Plan != nil {
		if err := s.Out.WritePlan(s.Plan); err != nil {
			return fmt.Errorf("record the sweep's plan: %w", err)
		}
	}
	s.logf("sweep %q: %s\nresults in %s\n", s.Name, s.report.Topology, s.Out.Dir)
	return nil
}

// The hint's estimate trial: long enough for RaftLib's estimates to
// converge at a few hundred non-blocking periods a second.
const (
	EstimateDuration = 2 * time.Second
	EstimateWarmup   = 500 * time.Millisecond
)

// recorder runs the search's trials and writes each into the run
// directory as it finishes; a failed write ends the sweep.
type recorder struct {
	s        *Sweep
	partial  *rundir.Result
	writeErr error
}

func (rec *recorder) run(ctx context.Context, rate float64, purpose string) (rundir.Trial, error) {
	s := rec.s
	n := len(rec.partial.Trials) + 1
	short := false
	if purpose == rundir.PurposeEstimate { // short: the estimates converge in a second or two
		plan := s.Ctrl.Plan
		s.Ctrl.Plan.Duration, s.Ctrl.Plan.Warmup = min(plan.Duration, EstimateDuration), min(plan.Warmup, EstimateWarmup)
		short = s.Ctrl.Plan.Duration < plan.Duration || s.Ctrl.Plan.Warmup < plan.Warmup
		defer func() { s.Ctrl.Plan = plan }()
	}
	t, err := rec.undisturbed(ctx, n, rate, purpose)
	t.N, t.Rate, t.Purpose, t.Short = n, rate, purpose, short
	if err != nil {
		return t, err
	}
	d := s.diagnoseTrial(&t)
	t.ServiceRates = limits.KeptShares(limits.TrialRates(t.Outcome, d), rec.partial.Trials)
	sofar := append(slices.Clip(rec.partial.Trials), t)
	t.NextLimit = limits.Next(t.ServiceRates, rate, t.Verdict.Pass && t.Judged(), limits.HighestPasses(sofar), limits.LowestFail(rec.partial.Trials))
	limits.NextHostCPU(&t)
	rec.partial.Trials = append(rec.partial.Trials, t)
	s.logf("%s\n", s.trialLine(t))
	if l := limits.NextLine(t); l != "" && s.Verbose {
		s.logf("          %s\n", l)
	}
	if l := hostLine(t); l != "" && s.Verbose {
		s.logf("          %s\n", l)
	}
	if err := s.Out.WriteJSON(rundir.TrialFileName(n), rundir.TrialFile{Trial: &t, Outcome: t.Outcome}); err != nil {
		rec.writeErr = err
		return t, err
	}
	if err := s.save(rec.partial, false); err != nil {
		rec.writeErr = err
		return t, err
	}
	if left := s.estimateLeft(rec.partial); left != "" && s.Verbose {
		s.logf("          %s\n", left)
	}
	if why := rec.wrongOutput(t); why != "" {
		s.report.WrongOutput = fmt.Sprintf("trial %d at %s: %s", n, numfmt.Rate(rate), why) // saved by Execute
		return t, &verdict.WrongOutputError{Rate: rate, Why: why}
	}
	return t, nil
}

// wrongOutput says why trial t shows a job's output to be wrong, not
// slow, before any rate passed ("": it does not). A job that was right at
// a lower rate and loses tuples at a higher one is at its limit, not
// wrong: the search goes on.
func (rec *recorder) wrongOutput(t rundir.Trial) string {
	for _, p := range rec.partial.Trials {
		if p.Verdict.Pass {
			return ""
		}
	}
	why := verdict.WrongOutput(t.Outcome, t.Verdict)
	if why == "" {
		return ""
	}
	var consumed uint64
	for _, r := range t.Outcome.Receivers {
		consumed += r.Consumed + r.WindowCount
	}
	if job := rec.s.Ctrl.Plan.Job; consumed == 0 && job != nil {
		return fmt.Sprintf("nothing owed arrived on its output %s while it read its input %s to the end (is that the topic it writes, with the fields the mapping names?): %s",
			termsafe.Escape(job.Output), termsafe.Escape(job.Input), why)
	}
	return why
}

// relate probes the agents' TSCs again and writes relation.json from
// both sessions (a failed write is the recorder's write error).
func (s *Sweep) relate(ctx context.Context, before *probing.Session, rec *recorder) error {
	after, err := s.probeClocks(context.WithoutCancel(ctx))
	if err != nil {
		s.logf("TSC probing after the sweep: %v\n", err)
		return fmt.Errorf("probing after the sweep: %w", err)
	}
	rf, err := probing.Relate([]*probing.Session{before, after}, "receiver0")
	if err != nil {
		s.logf("TSC relation: %v\n", err)
		return err
	}
	if err := s.Out.WriteJSON(rundir.RelationFile, rf); err != nil {
		rec.writeErr = err
		return nil
	}
	clock := map[string]string{}
	for _, n := range rf.Nodes {
		clock[n.Name] = n.Info.Clock()
	}
	for _, r := range rf.Relations {
		if !s.Verbose && r.Status == "ok" {
			continue // a relation that holds is relation.json's and the report's
		}
		same := ""
		if c := clock[r.Node]; c != "" && c == clock["receiver0"] {
			// The analysis reads one clock there (analysis: "same machine").
			same = " (one machine with receiver0: one clock, so the analysis uses no relation and no clock error between them)"
		}
		s.logf("TSC %s -> receiver0: %s; paper e %.0f ticks, tighter half-width %.0f ticks, slope width %.3f ppm%s\n",
			r.Node, r.Status, r.PaperErr, r.MidHalfWidth, r.AlphaPPM, same)
	}
	return nil
}

// MaxAgentRetries bounds how often one trial is repeated after agent
// failures (with RetryAgent).
const MaxAgentRetries = 3

// runTrial runs one trial; after an agent failure it waits for the agents
// and repeats the trial (with RetryAgent), or records the trial as invalid
// and returns the *AgentError.
func (s *Sweep) runTrial(ctx context.Context, sofar *rundir.Result, n int, rate float64, purpose string) (rundir.Trial, error) {
	for retries := 0; ; retries++ {
		if s.Live != nil && s.Log != nil {
			s.logf("trial %2d  %-7s  %12s  running ... %s", n, purpose, numfmt.Rate(rate), s.aboutLeft(sofar, n, rate))
		}
		t, err := s.Ctrl.RunTrial(ctx, rate, purpose)
		if s.Live != nil && s.Log != nil {
			fmt.Fprint(s.Live, "\r\033[K") // past the escaping: it clears the line, shows nothing
		}
		if err == nil || ctx.Err() != nil {
			if ctx.Err() != nil {
				s.logf("trial %2d  %-7s  %12s  interrupted\n", n, purpose, numfmt.Rate(rate))
			}
			return t, err
		}
		var ae *AgentError
		if !errors.As(err, &ae) {
			return t, err
		}
		s.logf("trial %2d  %-7s  %12s  INVALID  %v\n", n, purpose, numfmt.Rate(rate), ae)
		if s.RetryAgent > 0 && retries < MaxAgentRetries {
			s.logf("          waiting up to %v for the agents to answer again (--retry-agent)\n", s.RetryAgent)
			if werr := s.Ctrl.WaitIdle(ctx, s.RetryAgent); werr == nil {
				continue
			} else {
				s.logf("          %v\n", werr)
			}
		}
		inv := &rundir.InvalidTrial{N: n, Rate: rate, Purpose: purpose, Agent: ae.Agent, System: ae.System, Error: ae.Err.Error(), Retries: retries}
		s.report.Invalid = inv
		if werr := s.Out.WriteJSON(rundir.TrialFileName(n), rundir.TrialFile{Invalid: inv, Outcome: t.Outcome}); werr != nil {
			return t, errors.Join(err, werr)
		}
		return t, err
	}
}

// probeClocks runs one probing session over every agent.
func (s *Sweep) probeClocks(ctx context.Context) (*probing.Session, error) {
	var nodes []probing.Node
	token := ""
	for i, r := range s.Ctrl.Receivers {
		nodes, token = append(nodes, probing.Node{Name: fmt.Sprintf("receiver%d", i), Control: r.Addr}), r.Token
	}
	for i, a := range s.Ctrl.Senders {
		nodes = append(nodes, probing.Node{Name: fmt.Sprintf("sender%d", i), Control: a.Addr})
	}
	for i, a := range s.Ctrl.Jobs { // a job agent answers probes as the agents do
		nodes = append(nodes, probing.Node{Name: fmt.Sprintf("job%d", i), Control: a.Addr})
	}
	count := s.ClockCount
	if count <= 0 {
		count = 100
	}
	if s.Verbose { // a few milliseconds: no wait to explain
		s.logf("probing the agents' TSCs (%d round trips per ordered pair)\n", count)
	}
	return probeapi.Probe(ctx, nodes, probeapi.Settings{Count: count, Gap: 200 * time.Microsecond, Timeout: 100 * time.Millisecond, Token: token})
}

func (s *Sweep) logf(format string, args ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, format, args...)
	}
}

func (s *Sweep) save(r *rundir.Result, interrupted bool) error {
	s.report.Result, s.report.Interrupted = r, interrupted
	limits.Recheck(r.Trials)
	s.report.Contradicted = search.Contradiction(r)
	s.report.Latency = answerLatency(r, s.report.Agents)
	s.report.Colocated, s.report.Unsteady = "", ""
	for _, t := range r.Trials { // the agents' hosts in the latest judged trial
		if t.Judged() && len(t.Hosts) > 0 {
			s.report.Colocated, s.report.Unsteady = verdict.Colocation(t.Hosts)
		}
	}
	s.report.History = nil // only beside an answer the sweep stands by
	if b := r.Boundary; b != nil && b.Answer.Rate > 0 && s.report.Contradicted == "" && s.report.Disturbed == "" {
		if !s.priorRead {
			s.prior, s.priorRead = priorAnswers(filepath.Dir(s.Out.Dir), s.Out.Dir, s.Ctrl.Plan, s.report.Agents, s.Host), true
		}
		s.report.History = history(b.Answer.Rate, s.prior)
	}
	s.report.LimitingStage, s.report.LimitingEvidence = limits.Answer(r.Trials, r.FirstFail)
	pts := make([]rundir.SweepPoint, 0, len(r.Trials))
	for _, t := range r.Trials {
		pts = append(pts, rundir.SweepPoint{Target: t.Rate, Achieved: t.Achieved, Pass: t.Verdict.Pass})
	}
	err := errors.Join(s.Out.WriteTrials(r.Trials), s.Out.WriteJSON(rundir.SummaryFile, s.report))
	if len(pts) > 0 && s.Plot != nil { // no plotter wired (a library's sweep): no sweep.svg
		if perr := s.Plot(s.Out.Dir, fmt.Sprintf("%s: target vs achieved", s.Name), pts, r.LastPass, r.FirstFail); perr != nil {
			err = errors.Join(err, perr)
		}
	}
	return err
}
