package sweep

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sender"
	"github.com/cloudprofiler-go/cp/sweep/agent/recvagent"
	"github.com/cloudprofiler-go/cp/sweep/agent/sendagent"
	"github.com/cloudprofiler-go/cp/sweep/search"
)

// PlanError is an invalid sweep plan, found before any agent is started or
// any run directory is created.
type PlanError struct{ Problems []string }

func (e *PlanError) Error() string {
	return "invalid plan: " + strings.Join(e.Problems, "; ")
}

// Resolve reads the plan's scenario and shape on the controller's host (a
// built-in name, synthetic:SIZE or the user's YAML file; a replay trace
// file) into the specifications sent inline to the agents.
func (p *TrialPlan) Resolve() error {
	sc, err := scenarios.LoadWith(p.Scenario, p.Events)
	if err != nil {
		return &PlanError{Problems: []string{err.Error()}}
	}
	sh, err := scenarios.ParseShape(p.Shape)
	if err != nil {
		return &PlanError{Problems: []string{err.Error()}}
	}
	p.ScenarioSpec, p.ShapeSpec = sc, sh
	return nil
}

// senderTrial is sender i's share of a trial.
//
// It is the one place where a trial's rate is split: evenly over the
// senders; each sender splits its share over its threads
// (sender.ThreadRate), so every thread of every sender gets total/(senders
// × threads).
func (p TrialPlan) senderTrial(endpoints []string, i, senders int, total float64) protocol.SenderTrial {
	rate := total / float64(senders)
	var sc scenarios.Scenario
	if p.ScenarioSpec != nil {
		sc = *p.ScenarioSpec
	}
	return protocol.SenderTrial{Sender: p.Sender, Agent: p.Agent, Endpoints: endpoints, SenderID: uint8(i), Rate: rate,
		Duration: p.Warmup + p.Duration, Warmup: p.Warmup, Scenario: sc, Shape: p.ShapeSpec, Stalls: inject.OfKind(p.Stalls, "thread")}

}

// receiverTrial is a receiver's part of a trial that may last limit.
func (p TrialPlan) receiverTrial(limit time.Duration) protocol.ReceiverTrial {
	return protocol.ReceiverTrial{Receiver: p.Receiver, Agent: p.Agent, Duration: limit, Stalls: inject.OfKind(p.Stalls, "consumer", "lane")}

}

// CheckPlan validates a whole sweep before it starts: the trials every agent
// would be sent (with the same checks the agents make), the search, the
// rules and the profiled trial's handlers. The plan must be resolved. One
// error lists every problem. target is where the senders send when the
// caller knows it and the plan does not say (a broker as the system under
// test, local mode); "" checks the senders on a placeholder endpoint.
func CheckPlan(p TrialPlan, method Search, senders int, target string, profile *profiler.Handlers, profileAt float64) error {
	var problems []string
	add := func(err error) {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	if p.ScenarioSpec == nil {
		add(errors.New("the scenario is not resolved"))
	}
	if p.Duration <= 0 || p.Warmup < 0 {
		add(fmt.Errorf("a trial needs a positive --duration and a --warmup of 0 or more, got %v and %v", p.Duration, p.Warmup))
	}
	if senders < 1 {
		senders = 1
	}
	if p.Threads < 1 || p.Threads > sender.MaxThreads {
		add(fmt.Errorf("--threads must be 1..%d, got %d", sender.MaxThreads, p.Threads))
	}
	if senders*max(p.Threads, 1) > 256 {
		add(fmt.Errorf("%d senders × %d threads exceed 256 streams", senders, p.Threads))
	}
	problems = append(problems, p.jobProblems()...)
	if p.Relay && len(p.SenderTargets) == 0 {
		add(errors.New("a relay needs the system under test's input endpoints"))
	}
	// What every sender and receiver would be sent, at the rates the search
	// starts from (the same checks the agents make on arrival).
	lowest, highest, err := method.rates()
	add(err)
	switch {
	case method.Fast.Hint != "" && method.Fast.Hint != search.HintServiceRate:
		add(fmt.Errorf("--hint %q: the only hint is %q", method.Fast.Hint, search.HintServiceRate))
	case method.Fast.Hint != "" && method.Method == "linear":
		add(errors.New("--hint applies to the fast search only"))
	case method.Fast.Hint != "" && p.StagePeriod == 0:
		add(errors.New("--hint service-rate reads the stages' estimates: it needs the stage accounting (--stage-period above 0)"))
	}
	if p.ScenarioSpec != nil && p.Threads >= 1 && p.Threads <= sender.MaxThreads && err == nil {
		add(p.checkSenderTrials(senders, target, lowest, highest))
	}
	// The receivers' lanes are known only once they answer: a lane a stall
	// names is checked by the agent.
	lanes := 1
	for _, s := range p.Stalls {
		if k, i, err := inject.Stage(s.Stage); err == nil && k == "lane" {
			lanes = max(lanes, i+1)
		}
	}
	if len(inject.OfKind(p.Stalls, "consumer", "lane", "thread")) != len(p.Stalls) {
		add(fmt.Errorf("--stall: stages are consumer, lane<N> or thread<N>"))
	}
	eps := make([]string, min(lanes, receiver.MaxLanes))
	for i := range eps {
		eps[i] = fmt.Sprintf("tcp://127.0.0.1:%d", i+1)
	}
	add(recvagent.Validate(p.receiverTrial(time.Hour), eps))
	add(p.Rules.Validate())
	if profile != nil {
		add(protocol.ValidProfile(profile))
		if profileAt <= 0 || profileAt > 1 || math.IsNaN(profileAt) {
			add(fmt.Errorf("--profile-at %v: want a fraction in (0, 1]", profileAt))
		}
	}
	if len(problems) > 0 {
		return &PlanError{Problems: problems}
	}
	return nil
}

// rates are the lowest and highest rates the search can try (as far as
// they are known before it runs), after checking its parameters.
func (s Search) rates() (lowest, highest float64, err error) {
	switch s.Method {
	case "linear":
		l := s.Linear
		if l.From <= 0 || l.Step <= 0 || l.To < l.From {
			return 0, 0, fmt.Errorf("linear search needs 0 < --from <= --to and --step > 0 (got from %g, to %g, step %g)", l.From, l.To, l.Step)
		}
		if n := (l.To - l.From) / l.Step; n > 1e6 {
			return 0, 0, fmt.Errorf("linear search from %g to %g in steps of %g is %.0f trials; use --search fast", l.From, l.To, l.Step, n)
		}
		return l.From, l.To, nil
	case "fast", "":
		fast := s.Fast
		fast.Floor = sender.MinRate
		p, err := fast.WithDefaults()
		if err != nil {
			return 0, 0, err
		}
		if p.MaxTrials < 1 || p.MaxTrials > 10000 {
			return 0, 0, fmt.Errorf("--max-trials must be 1..10000, got %d", p.MaxTrials)
		}
		if p.Runs > 100 {
			return 0, 0, fmt.Errorf("--boundary-runs must be at most 100, got %d", p.Runs)
		}
		return p.Start, p.Start, nil
	}
	return 0, 0, fmt.Errorf("--search must be fast or linear, got %.32q", s.Method)
}

// checkSenderTrials checks the senders' trials at the lowest and highest
// rates as an agent will, on the system's first input (or target, or a
// placeholder ZeroMQ endpoint), in its format.
func (p TrialPlan) checkSenderTrials(senders int, target string, lowest, highest float64) error {
	eps := []string{"tcp://127.0.0.1:1"}
	switch {
	case len(p.SenderTargets) > 0:
		eps = p.SenderTargets[:1]
	case target != "":
		eps = []string{target}
	}
	for _, rate := range []float64{lowest, highest} {
		t := p.senderTrial(eps, 0, senders, rate)
		t.Endpoints = make([]string, p.Threads)
		for i := range t.Endpoints {
			t.Endpoints[i] = eps[0]
		}
		if err := sendagent.Validate(t); err != nil {
			return fmt.Errorf("sender trial: %w", err)
		}
	}
	return nil
}
