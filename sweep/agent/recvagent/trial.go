package recvagent

import (
	"maps"
	"sync"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/receiver/recvmetrics"
	"github.com/cloudprofiler-go/cp/receiver/tally"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/sweep/agent"
)

// Config is the trial as a receiver configuration on the agent's
// endpoints; the agent adds what is its own.
func Config(t protocol.ReceiverTrial, endpoints []string, connect bool) receiver.Config {
	return receiver.Config{Receiver: t.Receiver, Agent: t.Agent, Endpoints: endpoints, Connect: connect,
		ExpectStreams: t.ExpectStreams, HWM: t.HWM, Duration: t.Duration, Stalls: t.Stalls,
		TrialStart: t.TrialStart, SendersEnd: t.SendersEnd, Senders: t.Senders, SenderThreads: t.SenderThreads, Owed: t.Owed, Seal: t.Seal}

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
	// Streams remembers, across trials, where each of the job's output
	// streams is: its next sequence number (nil: not remembered).
	Streams *StreamMemory
}

// StreamMemory is each output stream's next sequence number after the
// agent's last trial: a job's streams go on across trials, and a bucket
// lost between two trials is loss, not a stream joined late.
type StreamMemory struct {
	mu   sync.Mutex
	next map[uint32]uint64
}

// snapshot is a copy of what is remembered (nil: nothing yet).
func (m *StreamMemory) snapshot() map[uint32]uint64 {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.next)
}

// remember records where each stream of a finished trial is.
func (m *StreamMemory) remember(res *tally.Result) {
	if m == nil || res == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next == nil {
		m.next = map[uint32]uint64{}
	}
	for _, s := range res.Streams {
		m.next[s.Stream] = s.NextSeq
	}
}

// Job implements agent.JobReader: the job's input.
func (r Role) Job() string { return r.JobInput }

// Lag implements agent.JobReader: the job's group's lag on its input,
// read now.
func (r Role) Lag() (int64, error) {
	e, err := driver.Parse(r.JobInput)
	if err != nil {
		return 0, err
	}
	return r.Brokers.GroupLag(e)
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
	return trial{t, r.Brokers, r.JobInput, r.Streams}, nil
}

type trial struct {
	t        protocol.ReceiverTrial
	brokers  driver.Registry
	jobInput string
	streams  *StreamMemory
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
	if tr.jobInput != "" {
		cfg.StreamNext = tr.streams.snapshot()
	}
	r, err := receiver.New(cfg)
	if err != nil {
		return nil, err
	}
	return agent.Start(r, recvmetrics.For(r), r.Run, func(res *tally.Result) *protocol.TrialStatus {
		if tr.jobInput != "" {
			tr.streams.remember(res)
		}
		return &protocol.TrialStatus{Receiver: res}
	}, env.Logf), nil
}
