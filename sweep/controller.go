package sweep

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sender/tally"
	"github.com/cloudprofiler-go/cp/sweep/jobmetrics"
	"github.com/cloudprofiler-go/cp/sweep/remote"
	"github.com/cloudprofiler-go/cp/sweep/verdict"
	"github.com/cloudprofiler-go/cp/trialcfg"
	"github.com/cloudprofiler-go/cp/wire"
)

// senderLead is how far ahead the common start of the senders is set:
// enough for every sender to prepare (pre-serialization, send-cost
// measurement) before it.
const senderLead = time.Second

// TrialPlan is what every trial of a sweep has in common.
type TrialPlan struct {
	// The settings every sender and receiver of every trial gets, defined
	// once (package trialcfg) and embedded here, in the agents' protocol
	// and in the sender's and receiver's configurations; the plan's JSON
	// stays flat.
	trialcfg.Sender
	trialcfg.Receiver
	trialcfg.Agent

	Duration time.Duration `json:"duration_ns"` // measured window
	Warmup   time.Duration `json:"warmup_ns"`
	Scenario string        `json:"scenario"`
	// Events names the fields of a user's events (Scenario events:FILE).
	Events        scenarios.EventsOptions `json:"events_fields,omitzero"`
	Shape         string                  `json:"shape,omitempty"` // rate shape of every trial around its target rate
	Rules         verdict.Rules           `json:"rules"`
	Relay         bool                    `json:"relay,omitempty"`          // a system under test between senders and receivers
	SenderTargets []string                `json:"sender_targets,omitempty"` // relay: where senders send (the system's inputs)
	// Job is a stream processor as the system under test (UseJob; nil:
	// none).
	Job *JobPlan `json:"job,omitempty"`
	// The workload as it is sent to the agents, resolved on the
	// controller's host from Scenario and Shape (Resolve).
	ScenarioSpec *scenarios.Scenario `json:"scenario_spec,omitempty"`
	ShapeSpec    scenarios.Shape     `json:"shape_spec"`
	// Injected faults and phases of every trial (test fixtures, see
	// internal/inject): stalls of receiver stages go to every receiver,
	// of sender threads to every sender.
	Stalls []inject.Stall `json:"stalls,omitempty"`
}

// Controller runs trials on a set of agents.
type Controller struct {
	Senders   []*remote.Agent
	Receivers []*remote.Agent
	// Jobs are job agents (cpjob --agent-addr): jobs under test that
	// serve their own operators' accounting for each trial.
	Jobs []*remote.Agent
	// JobMetrics are jobs read from their Prometheus metrics instead
	// (cpsweep --job-metrics), scraped every stage period of each trial.
	JobMetrics []jobmetrics.Source
	Plan       TrialPlan
	// Progress, if set, is told what a trial is doing (a detail), and
	// Waiting what it waits for before it can start (said every time: a
	// wait longer than a second says what it waits for).
	Progress, Waiting func(format string, args ...any)
	// TrialProfile, if set, profiles the trials started from now on with
	// this handler configuration (YAML) on every agent.
	TrialProfile *profiler.Handlers
	// AgentTimeout is how long an agent may not answer during a trial
	// (0: DefaultAgentTimeout).
	AgentTimeout time.Duration

	endpoints []string          // receivers' data endpoints, resolved
	hostOf    map[string]string // node (receiver0, sender0) -> the host name its agent reported
	expect    []int             // streams each receiver should see
	owed      *scenarios.Owed   // the declared filter's identities (Prepare; nil: every one is owed)
}

// Prepare checks every agent and works out where senders send.
func (c *Controller) Prepare(ctx context.Context) ([]protocol.AgentInfo, error) {
	if len(c.Senders) == 0 || len(c.Receivers) == 0 {
		return nil, fmt.Errorf("need at least one sender and one receiver agent")
	}
	if c.Plan.Threads < 1 {
		c.Plan.Threads = 1
	}
	var infos []protocol.AgentInfo
	c.hostOf = map[string]string{}
	machines := machineNames{}
	recvOf := map[string]int{} // endpoint -> receiver index
	for i, r := range c.Receivers {
		info, err := describe(ctx, r, protocol.RoleReceiver, "")
		if err != nil {
			return nil, err
		}
		if len(info.DataEndpoints) == 0 {
			return nil, agentFault(r, errors.New("it reports no data endpoints"))
		}
		for _, ep := range info.DataEndpoints {
			resolved, err := resolveEndpoint(ep, r.Addr)
			if err != nil {
				return nil, err
			}
			c.endpoints = append(c.endpoints, resolved)
			recvOf[resolved] = i
		}
		infos = append(infos, info)
		c.hostOf[fmt.Sprintf("receiver%d", i)] = machines.host(info)
	}
	for i, s := range c.Senders {
		info, err := describe(ctx, s, protocol.RoleSender, "")
		if err != nil {
			return nil, err
		}
		infos = append(infos, info)
		c.hostOf[fmt.Sprintf("sender%d", i)] = machines.host(info)
	}
	jobs, err := c.prepareJobs(ctx)
	if err != nil {
		return nil, err
	}
	infos = append(infos, jobs...)
	// Thread t of sender s (global index g) sends to endpoint g mod n, so
	// threads spread evenly over every receiver lane.
	c.expect = make([]int, len(c.Receivers))
	targets := c.endpoints
	if c.Plan.Relay {
		targets = c.Plan.SenderTargets
		if len(targets) == 0 {
			return nil, fmt.Errorf("relay topology needs the system under test's input endpoints")
		}
		c.expect = nil // the system decides how many streams reach each receiver
	} else {
		for g := 0; g < len(c.Senders)*c.Plan.Threads; g++ {
			c.expect[recvOf[targets[g%len(targets)]]]++
		}
	}
	if c.owed, err = c.Plan.owedPattern(); err != nil {
		return nil, err
	}
	return infos, nil
}

// WaitIdle waits up to timeout for every agent to answer and to have no
// trial running (a running one is asked to stop): after an agent failure,
// before a trial is repeated.
func (c *Controller) WaitIdle(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	all := append(append(append([]*remote.Agent(nil), c.Receivers...), c.Senders...), c.Jobs...)
	for {
		var last error
		for _, a := range all {
			st, err := a.Status(ctx)
			if err == nil && (st.State == protocol.StateStarting || st.State == protocol.StateRunning) {
				_, _ = a.Stop(ctx)
				err = fmt.Errorf("agent %s is still %s", a.Addr, st.State)
			}
			if err != nil {
				last = err
				break
			}
		}
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the agents did not come back within %v: %w", timeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// AgentError is a trial that could not be judged: an agent refused it,
// died, stopped answering or failed. It is not a failed trial (it says
// nothing about the capacity), and it ends the search.
type AgentError struct {
	Agent string // host:port, or the system under test's endpoint
	Err   error
	// System: the system under test failed (a broker closed its
	// connections), not an agent.
	System bool
}

func (e *AgentError) Error() string {
	if e.System {
		return fmt.Sprintf("the system under test failed: %v", e.Err)
	}
	return fmt.Sprintf("agent %s: %v", e.Agent, e.Err)
}
func (e *AgentError) Unwrap() error { return e.Err }

// DefaultAgentTimeout is how long an agent may go without answering a
// status poll during a trial before it counts as failed.
const DefaultAgentTimeout = 5 * time.Second

// agentFault wraps err as an *AgentError of agent a, unless it is one.
func agentFault(a *remote.Agent, err error) error {
	var ae *AgentError
	if errors.As(err, &ae) {
		return err
	}
	// the agent is named once, by the AgentError
	msg := strings.Replace(err.Error(), "agent "+a.Addr+": ", "", 1)
	msg = strings.Replace(msg, "agent "+a.Addr+" ", "it ", 1)
	return &AgentError{Agent: a.Addr, Err: errors.New(msg)}
}

// RunTrial runs every agent at its share of rate and judges the outcome.
// A sender that refuses the rate because it is above its measured send
// cost fails the trial (rule send-cost). Any other refusal, an agent that
// dies, stops answering for AgentTimeout, fails or does not finish in
// time makes the trial invalid: an *AgentError, with the outcome so far.
// The error is ctx's when the context is cancelled.
func (c *Controller) RunTrial(ctx context.Context, rate float64, purpose string) (t rundir.Trial, err error) {
	t = rundir.Trial{StartedAt: time.Now()}
	o := &rundir.Outcome{Rate: rate}
	t.Outcome = o
	defer func() { t.Elapsed = time.Since(t.StartedAt) }()
	p := c.Plan
	// Bound everything: warm-up, window, end markers, startup and slack.
	deadline := senderLead + p.Warmup + p.Duration + p.EndTimeout + 20*time.Second
	if p.Job != nil {
		deadline += p.Job.catchUp() + jobLead + p.JobQuiet + trialcfg.DefaultJobQuiet + receiver.JobStuckAfter
		o.Job = p.jobOutput()
	}
	tctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	r := &trialRun{c: c, ctx: ctx, tctx: tctx, deadline: deadline, o: o, done: map[*remote.Agent]*protocol.TrialStatus{}}
	invalid := func(err error) (rundir.Trial, error) {
		r.stopAll()
		r.stopWatches()
		t.Verdict = verdict.Judge(o, p.Rules)
		if ctx.Err() != nil {
			return t, ctx.Err()
		}
		return t, err
	}
	if p.Job != nil {
		if err := c.waitForJob(ctx); err != nil {
			return invalid(err)
		}
		r.startAt = time.Now().Add(senderLead + jobLead) // the receivers are told the senders' start
		r.seal = newSealKey()
	}
	if err := r.startJobs(); err != nil {
		return invalid(err)
	}
	if err := r.startReceivers(); err != nil {
		return invalid(err)
	}
	if err := r.startSenders(rate); err != nil {
		return invalid(err)
	}
	if len(o.Refused) > 0 {
		r.stopAll()
		t.Verdict = verdict.Judge(o, p.Rules)
		return t, ctx.Err()
	}
	if c.Progress != nil {
		c.Progress("running %.0f tuples/s for %v (+%v warm-up)", rate, p.Duration, p.Warmup)
	}
	if err := r.await(); err != nil {
		return invalid(err)
	}
	if err := systemFailure(o); err != nil {
		return invalid(err)
	}
	o.Window = window(o.Senders)
	t.Achieved = verdict.WindowRate(o)
	t.Verdict = verdict.Judge(o, p.Rules)
	return t, ctx.Err()
}

// trialRun is one trial in progress: the agents started so far, and what
// they have reported.
type trialRun struct {
	c         *Controller
	ctx, tctx context.Context // the caller's, and bounded by deadline
	deadline  time.Duration
	started   []*remote.Agent
	jobs      []*remote.Agent // the job agents started (not in started: they end when the others have)
	scrapers  []*jobmetrics.Scraper
	// done is each agent's result, collected into the outcome in the
	// agents' order (collect), not the order they finished in: the run
	// directory names them by that order (sender0, job1, ...).
	done    map[*remote.Agent]*protocol.TrialStatus
	watched []*protocol.JobResult // the metrics scrapers' results
	o       *rundir.Outcome
	startAt time.Time    // the senders' common start, fixed before the receivers start (zero: when the senders start)
	seal    wire.SealKey // the intended times' key in a trial of a job (zero: none)
}

// newSealKey is a trial's key for the intended times: random, so that a
// job cannot know it from an earlier trial.
func newSealKey() wire.SealKey {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return wire.SealKey{binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:]) | 1}
}

// stopAll asks every started agent to stop and waits until it has (a
// stop ends a trial in the background; the next trial's start would find
// it still running), bounded even when the caller's context is done.
func (r *trialRun) stopAll() {
	sctx, scancel := context.WithTimeout(context.WithoutCancel(r.ctx), remote.ControlTimeout)
	defer scancel()
	var wg sync.WaitGroup
	for _, a := range append(append([]*remote.Agent(nil), r.started...), r.jobs...) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := a.Stop(sctx)
			for err == nil && (st.State == protocol.StateStarting || st.State == protocol.StateRunning) {
				select {
				case <-sctx.Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
				st, err = a.Status(sctx)
			}
		}()
	}
	wg.Wait()
}

func (r *trialRun) startReceivers() error {
	c, p := r.c, r.c.Plan
	for i, a := range c.Receivers {
		cfg := p.receiverTrial(r.deadline - 5*time.Second)
		cfg.Profile = c.TrialProfile
		if c.expect != nil {
			cfg.ExpectStreams = c.expect[i]
		}
		if p.Job != nil {
			cfg.TrialStart, cfg.SendersEnd = r.startAt, r.startAt.Add(p.Warmup+p.Duration)
			cfg.Senders, cfg.SenderThreads = len(c.Senders), p.Threads
			cfg.Owed, cfg.Seal = c.owed, r.seal
		}
		if _, err := a.Start(r.tctx, cfg); err != nil {
			return agentFault(a, fmt.Errorf("start receiver: %w", err))
		}
		r.started = append(r.started, a)
	}
	return nil
}

// startSenders starts every sender at its share of rate. Senders prepare
// (pre-serialize, measure their send cost) in parallel and then start
// together at a common instant. A sender refusing its share as above its
// send cost is recorded in Outcome.Refused; any other refusal is the
// error.
func (r *trialRun) startSenders(rate float64) error {
	c, p := r.c, r.c.Plan
	targets := c.endpoints
	if p.Relay {
		targets = p.SenderTargets
	}
	startAt := r.startAt
	if startAt.IsZero() {
		startAt = time.Now().Add(senderLead)
	}
	errs := make([]error, len(c.Senders))
	var wg sync.WaitGroup
	for i, s := range c.Senders {
		eps := make([]string, p.Threads)
		for k := range eps {
			eps[k] = targets[(i*p.Threads+k)%len(targets)]
		}
		cfg := p.senderTrial(eps, i, len(c.Senders), rate)
		cfg.StartAt, cfg.Profile, cfg.Seal = startAt, c.TrialProfile, r.seal
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Start(r.tctx, cfg)
		}()
	}
	wg.Wait()
	var fault error
	for i, err := range errs {
		var se *remote.StatusError
		switch {
		case err == nil:
			r.started = append(r.started, c.Senders[i])
		case errors.As(err, &se) && se.Code == protocol.StatusCapacity:
			r.o.Refused = append(r.o.Refused, fmt.Sprintf("sender %s: %s", c.Senders[i].Addr, se.Msg))
		case fault == nil:
			fault = agentFault(c.Senders[i], fmt.Errorf("start sender: %w", err))
		}
	}
	return fault
}

// await polls every started agent until all have finished; one that
// fails, stops answering for the agent timeout, or never finishes is the
// error. The results go into the outcome.
func (r *trialRun) await() error {
	defer r.collect()
	silentFor := r.c.AgentTimeout
	if silentFor <= 0 {
		silentFor = DefaultAgentTimeout
	}
	pending := append([]*remote.Agent(nil), r.started...)
	lastOK := map[*remote.Agent]time.Time{}
	for _, a := range pending {
		lastOK[a] = time.Now()
	}
	for len(pending) > 0 {
		select {
		case <-r.tctx.Done():
			if r.ctx.Err() != nil {
				return r.ctx.Err()
			}
			return agentFault(pending[0], fmt.Errorf("the trial did not finish within %v", r.deadline))
		case <-time.After(200 * time.Millisecond):
		}
		next := pending[:0]
		for _, a := range pending {
			done, err := r.poll(a, lastOK, silentFor)
			if err != nil {
				return err
			}
			if !done {
				next = append(next, a)
			}
		}
		pending = next
	}
	return r.awaitJobs(lastOK, silentFor)
}

// window is the measured window, when every sender runs past its warm-up:
// from the latest end of a warm-up to the earliest end of a schedule.
func window(senders []*tally.Result) [2]int64 {
	var w [2]int64
	for i, s := range senders {
		from := s.StartUnixNs + s.WarmupNs
		to := s.StartUnixNs + int64(s.DurationS*1e9)
		if i == 0 || from > w[0] {
			w[0] = from
		}
		if i == 0 || to < w[1] {
			w[1] = to
		}
	}
	return w
}

// AgentsSummary is a one-line description of the topology.
func (c *Controller) AgentsSummary() string {
	var s, r []string
	for _, a := range c.Senders {
		s = append(s, a.Addr)
	}
	for _, a := range c.Receivers {
		r = append(r, a.Addr)
	}
	return fmt.Sprintf("senders %s -> receivers %s (data %s)", strings.Join(s, ","), strings.Join(r, ","), strings.Join(c.endpoints, ","))
}

// BlackBox is the system between the senders and the receivers, as the
// diagnosis names it (Report.BlackBox), from the plan and the receivers'
// data endpoints.
func (c *Controller) BlackBox() string {
	if c.Plan.Relay {
		return "sut"
	}
	for _, ep := range c.endpoints {
		if driver.IsBroker(ep) {
			scheme, _, _ := strings.Cut(ep, "://")
			return scheme
		}
	}
	return ""
}

// NodeNames names the agents as the run directory does: receiver0, ...,
// sender0, ..., job0, ... (the TSC relation and the collected profiles).
func (c *Controller) NodeNames() map[string]*remote.Agent {
	out := map[string]*remote.Agent{}
	for prefix, agents := range map[string][]*remote.Agent{"receiver": c.Receivers, "sender": c.Senders, "job": c.Jobs} {
		for i, a := range agents {
			out[fmt.Sprintf("%s%d", prefix, i)] = a
		}
	}
	return out
}
