package agent

import (
	"time"

	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/stage"
)

// Role is one kind of agent: it turns a trial request into a trial it can
// start. The agent serves the protocol; the role knows its trials (package
// sendagent for dgsend, recvagent for dgrecv), so that a binary links
// only its own side.
type Role interface {
	Name() string // protocol.RoleSender or protocol.RoleReceiver
	// Parse decodes and validates a request's body strictly: nothing is
	// allocated for the trial before it passes.
	Parse(body []byte, opts Options) (Trial, error)
}

// JobReader is a role that reads a job's lag on its input (a receiver
// behind a stream processor): the agent's info carries it, so that the
// controller, which links no broker client, knows when the job has
// caught up.
type JobReader interface {
	// Job is the job's input ("": none).
	Job() string
	// Lag is the job's group's lag on its input, read now (it may take
	// as long as the broker does: the agent bounds its wait).
	Lag() (int64, error)
}

// Trial is a parsed and validated trial.
type Trial interface {
	// Profile is the trial's handler configuration (nil: none) and
	// StagePeriod its stage accounting's period (0: off), which the agent
	// sets its profiling up with.
	Profile() *profiler.Handlers
	StagePeriod() time.Duration
	// Start prepares and starts the trial; a preparation still running
	// when env.Abort closes ends early.
	Start(env Env) (*Started, error)
}

// Env is what a trial starts with: the agent's own settings and the
// trial's profiler (nil: not profiled).
type Env struct {
	Options
	Profile  *profiler.Profiler
	Handlers *profiler.Handlers
	Abort    <-chan struct{}
}

// Started is a running trial.
type Started struct {
	Metrics httpapi.Collectors
	Stages  *stage.Set // nil: no stage accounting
	Stop    func()
	// Wait blocks until the trial ends and returns its result.
	Wait func() (*protocol.TrialStatus, error)
}

// CodedError is a refusal with the HTTP status to answer it with (a
// sender's rate above its send cost is protocol.StatusCapacity); any
// other error of Start is a 400.
type CodedError struct {
	Code int
	Err  error
}

func (e *CodedError) Error() string { return e.Err.Error() }
func (e *CodedError) Unwrap() error { return e.Err }

// Measurer is what a role starts: a sender or a receiver.
type Measurer interface {
	Stages() *stage.Set
	Stop()
	Close()
}

// Start wraps a role's new runner as a started trial: its stages are
// watched for stalls, and Wait runs it, closes it and puts its result in a
// status (result: the status of a run's result).
func Start[R any](r Measurer, metrics httpapi.Collectors, run func() (R, error), status func(R) *protocol.TrialStatus, logf func(string, ...any)) *Started {
	if r.Stages() != nil {
		diagnose.LogStalls(r.Stages(), diagnose.DefaultConfirm, logf)
	}
	wait := func() (*protocol.TrialStatus, error) {
		defer r.Close()
		res, err := run()
		if err != nil {
			return nil, err
		}
		return status(res), nil
	}
	return &Started{Metrics: metrics, Stages: r.Stages(), Stop: r.Stop, Wait: wait}
}
