package sendagent

import (
	"errors"
	"net/http"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/sender/sendmetrics"
	"github.com/cloudprofiler-go/cp/sender/tally"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/sender"
	"github.com/cloudprofiler-go/cp/sweep/agent"
)

// Role is the sender agent's role.
type Role struct {
	// Brokers are the broker drivers the program was built with.
	Brokers driver.Registry
}

// Name implements agent.Role.
func (Role) Name() string { return protocol.RoleSender }

// Parse implements agent.Role.
func (r Role) Parse(body []byte, _ agent.Options) (agent.Trial, error) {
	var t protocol.SenderTrial
	if err := httpapi.DecodeStrict(body, &t); err != nil {
		return nil, err
	}
	if err := Validate(t); err != nil {
		return nil, err
	}
	return trial{t, r.Brokers}, nil
}

type trial struct {
	t       protocol.SenderTrial
	brokers driver.Registry
}

func (tr trial) Profile() *profiler.Handlers { return tr.t.Profile }
func (tr trial) StagePeriod() time.Duration  { return tr.t.StagePeriod }

// Start implements agent.Trial: a sender with the agent's CPUs, I/O
// threads, clock and memory budget.
func (tr trial) Start(env agent.Env) (*agent.Started, error) {
	cfg, err := Config(tr.t)
	if err != nil {
		return nil, err
	}
	cfg.CPUs, cfg.IOThreads, cfg.Clock = env.CPUs, env.IOThreads, env.Clock
	cfg.MemoryBudget, cfg.Cancel, cfg.Brokers = env.MemoryBudget, env.Abort, tr.brokers
	cfg.Profile, cfg.Handlers = env.Profile, env.Handlers
	cfg.LiveActivity = protocol.MaxActivityChanges
	s, err := sender.New(cfg)
	var rate *sender.RateError
	switch {
	case errors.As(err, &rate):
		return nil, &agent.CodedError{Code: protocol.StatusCapacity, Err: err}
	case errors.Is(err, sender.ErrCancelled):
		return nil, &agent.CodedError{Code: http.StatusConflict, Err: err}
	case err != nil:
		return nil, err
	}
	return agent.Start(s, sendmetrics.For(s), s.Run, func(res *tally.Result) *protocol.TrialStatus { return &protocol.TrialStatus{Sender: res} }, env.Logf), nil
}
