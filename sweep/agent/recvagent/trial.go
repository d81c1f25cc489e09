package recvagent

import (
	"time"

	"github.com/cloudprofiler-go/cp/driver"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/sweep/agent"
	"github.com/cloudprofiler-go/cp/sweep/protocol"
)

// Config is the trial as a receiver configuration on the agent's
// endpoints; the agent adds what is its own.
func Config(t protocol.ReceiverTrial, endpoints []string, connect bool) receiver.Config {
	return receiver.Config{Receiver: t.Receiver, Agent: t.Agent, Endpoints: endpoints, Connect: connect,
		ExpectStreams: t.ExpectStreams, HWM: t.HWM, Duration: t.Duration, Stalls: t.Stalls}

}

// Validate checks the trial as an agent with these endpoints will run it.
func Validate(t protocol.ReceiverTrial, endpoints []string) error {
	cfg := Config(t, endpoints, false)
	if err := cfg.Validate(); err != nil {
		return err
	}
	return protocol.ValidProfile(t.Profile)
}

// Role is the receiver agent's role.
type Role struct {
	// Brokers are the broker drivers the program was built with.
	Brokers driver.Registry
	// JobInput is the input of the job between the senders and this
	// agent (dgrecv --job-input; docs/sut.md): every trial reads the
	// job's lag on it. "": no job.
	JobInput string
}

// Name implements agent.Role.
func (Role) Name() string { return protocol.RoleReceiver }

// Parse implements agent.Role: the trial runs on the agent's endpoints.
func (r Role) Parse(body []byte, opts agent.Options) (agent.Trial, error) {
	var t protocol.ReceiverTrial
	if err := httpapi.DecodeStrict(body, &t); err != nil {
		return nil, err
	}
	if err := Validate(t, opts.Endpoints); err != nil {
		return nil, err
	}
	return trial{t, r.Brokers, r.JobInput}, nil
}

type trial struct {
	t        protocol.ReceiverTrial
	brokers  driver.Registry
	jobInput string
}

func (tr trial) Profile() *profiler.Handlers { return tr.t.Profile }
func (tr trial) StagePeriod() time.Duration  { return tr.t.StagePeriod }

// Start implements agent.Trial: a receiver on the agent's endpoints, CPUs
// and I/O threads.
func (tr trial) Start(env agent.Env) (*agent.Started, error) {
	cfg := Config(tr.t, env.Endpoints, env.Connect)
	cfg.CPUs, cfg.IOThreads, cfg.Clock, cfg.Logf = env.CPUs, env.IOThreads, env.Clock, env.Logf
	cfg.MemoryBudget, cfg.Brokers, cfg.JobInput = env.MemoryBudget, tr.brokers, tr.jobInput
	cfg.Profile, cfg.Handlers = env.Profile, env.Handlers
	cfg.LiveActivity = protocol.MaxActivityChanges
	r, err := receiver.New(cfg)
	if err != nil {
		return nil, err
	}
	return agent.Start(r, r.Run, func(res *receiver.Result) *protocol.TrialStatus { return &protocol.TrialStatus{Receiver: res} }, env.Logf), nil
}
