package sweep

import (
	"context"
	"fmt"
	"time"

	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/sweep/jobmetrics"
	"github.com/cloudprofiler-go/cp/sweep/remote"
)

// prepareJobs checks that every job agent answers as a job.
func (c *Controller) prepareJobs(ctx context.Context) ([]protocol.AgentInfo, error) {
	var infos []protocol.AgentInfo
	for _, j := range c.Jobs {
		info, err := describe(ctx, j, protocol.RoleJob, " (cpjob --agent-addr)")
		if err != nil {
			return nil, err
		}
		infos = append(infos, info)
	}
	return infos, nil
}

// describe asks an agent for its description, which must be of role
// (hint: how to start one).
func describe(ctx context.Context, a *remote.Agent, role, hint string) (protocol.AgentInfo, error) {
	info, err := a.Info(ctx)
	if err != nil {
		return info, agentFault(a, err)
	}
	if info.Role != role {
		return info, &PlanError{Problems: []string{fmt.Sprintf("agent %s is a %s, not a %s%s", a.Addr, info.Role, role, hint)}}
	}
	return info, nil
}

// startJobs starts every job agent's window; each runs until the
// senders and receivers are done (awaitJobs), within the trial's deadline.
func (r *trialRun) startJobs() error {
	for _, src := range r.c.JobMetrics {
		r.scrapers = append(r.scrapers, jobmetrics.Start(src, r.metricsPeriod(), r.c.agentTimeout()))
	}
	for _, a := range r.c.Jobs {
		if _, err := a.Start(r.tctx, protocol.JobTrial{Duration: r.deadline, Profile: r.c.TrialProfile}); err != nil {
			return agentFault(a, fmt.Errorf("start the job's window: %w", err))
		}
		r.jobs = append(r.jobs, a)
	}
	return nil
}

// awaitJobs ends every job agent's window, now that the senders and the
// receivers are done, and collects their operators' series.
func (r *trialRun) awaitJobs(lastOK map[*remote.Agent]time.Time, silentFor time.Duration) error {
	for _, a := range r.jobs {
		if _, err := a.Stop(r.tctx); err != nil {
			return agentFault(a, fmt.Errorf("end the job's window: %w", err))
		}
		lastOK[a] = time.Now()
	}
	for _, w := range r.scrapers {
		res, err := w.Stop()
		if err != nil {
			return &AgentError{Agent: "job metrics", Err: err, System: true}
		}
		r.watched = append(r.watched, res)
	}
	r.scrapers = nil
	pending := append([]*remote.Agent(nil), r.jobs...)
	for len(pending) > 0 {
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
		if pending = next; len(pending) == 0 {
			break
		}
		select {
		case <-r.tctx.Done():
			if r.ctx.Err() != nil {
				return r.ctx.Err()
			}
			return agentFault(pending[0], fmt.Errorf("the job's window did not end within %v", r.deadline))
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// stopWatches ends the metrics watches of a trial that will not be judged.
func (r *trialRun) stopWatches() {
	for _, w := range r.scrapers {
		_, _ = w.Stop()
	}
	r.scrapers = nil
}

// metricsPeriod is how often a job's metrics are scraped: the trial's
// stage period (100 ms when the stage accounting is off).
func (r *trialRun) metricsPeriod() time.Duration {
	if p := r.c.Plan.StagePeriod; p > 0 {
		return p
	}
	return 100 * time.Millisecond
}

// agentTimeout is how long an agent (or a job's metrics) may not answer.
func (c *Controller) agentTimeout() time.Duration {
	if c.AgentTimeout > 0 {
		return c.AgentTimeout
	}
	return DefaultAgentTimeout
}
