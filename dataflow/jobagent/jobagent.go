package jobagent

import (
	"fmt"
	"sync"
	"time"

	"github.com/cloudprofiler-go/cp/dataflow"
	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/servicerate"
	"github.com/cloudprofiler-go/cp/stage/stagemetrics"
	"github.com/cloudprofiler-go/cp/sweep/agent"
)

// Role is the job agent's role: JobName names the job in the analyses
// ("ysb": its operators are ysb/join, ysb/window), Job is its accounting,
// started.
type Role struct {
	JobName string
	Job     *dataflow.Job
	// Rates, when set, estimates the operators' service rates
	// (servicerate.Track on the job's stages before its first operator),
	// afresh in each trial.
	Rates *servicerate.Tracker
}

// Name implements agent.Role: the protocol's role.
func (r Role) Name() string { return protocol.RoleJob }

// Parse implements agent.Role: a protocol.JobTrial, strictly.
func (r Role) Parse(body []byte, _ agent.Options) (agent.Trial, error) {
	var t protocol.JobTrial
	if err := httpapi.DecodeStrict(body, &t); err != nil {
		return nil, err
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &trial{role: r, cfg: t}, nil
}

type trial struct {
	role Role
	cfg  protocol.JobTrial
}

// Profile is the trial's handlers: the agent makes the trial's profiler,
// which the operators' trace logs on (dataflow.Trace).
func (t *trial) Profile() *profiler.Handlers { return t.cfg.Profile }

// StagePeriod: the job samples at its own period (dataflow.Config.Period).
func (t *trial) StagePeriod() time.Duration { return 0 }

// Start records the window's start; the trial ends at a stop or after
// its duration, and its result is the job's series cut to the window.
func (t *trial) Start(env agent.Env) (*agent.Started, error) {
	set := t.role.Job.Stages()
	from := env.Clock.NowUnixNano()
	t.role.Rates.Reset() // before the sample: the trial's estimates start there
	set.Sample()         // the window starts now, not at the last period's tick
	rt := dataflow.ReadRuntime()
	var trace *dataflow.Trace
	if env.Profile != nil {
		var err error
		if trace, err = t.role.Job.Trace(env.Profile, env.Handlers); err != nil {
			return nil, err
		}
	}
	stop := make(chan struct{})
	var once sync.Once
	wait := func() (*protocol.TrialStatus, error) {
		select {
		case <-stop:
		case <-time.After(t.cfg.Duration):
		}
		set.Sample() // the window ends now, not at the last period's tick
		to := env.Clock.NowUnixNano()
		if trace != nil {
			trace.Stop() // before the agent closes the trial's profiler
		}
		res := &protocol.JobResult{Name: t.role.JobName, StageSeries: set.Series().Cut(from, to)}
		if d := dataflow.ReadRuntime().Sub(rt); d.CPUSeconds > 0 {
			res.GoRuntime = &protocol.GoRuntime{CPUSeconds: d.CPUSeconds, GCCPUSeconds: min(d.GCCPUSeconds, d.CPUSeconds),
				GCPauseSeconds: d.GCPauseSeconds, GCCycles: d.GCCycles, GOGC: d.GOGC}
		}
		res.Reads, res.Writes = t.role.Job.Topics()
		if t.role.Rates != nil {
			res.ServiceRates = t.role.Rates.Rates()
		}
		for _, e := range t.role.Job.Edges() {
			res.Edges = append(res.Edges, [2]string{e.From, e.To})
		}
		for _, st := range t.role.Job.Injected(from, to) {
			res.Injected = append(res.Injected, protocol.InjectedStall{Operator: st.Operator, FromUnixNs: st.FromUnixNs, ToUnixNs: st.ToUnixNs})
		}
		if err := res.Validate(); err != nil {
			return nil, fmt.Errorf("the job's accounting: %w", err)
		}
		return &protocol.TrialStatus{Job: res}, nil
	}
	return &agent.Started{
		Metrics: httpapi.Collectors{stagemetrics.Collector{Set: set}},
		Stages:  set,
		Stop:    func() { once.Do(func() { close(stop) }) },
		Wait:    wait,
	}, nil
}
