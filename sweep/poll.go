package sweep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/sweep/remote"
)

// poll asks one agent for its status: done with its result recorded, not
// yet, or an error that makes the trial invalid.
func (r *trialRun) poll(a *remote.Agent, lastOK map[*remote.Agent]time.Time, silentFor time.Duration) (bool, error) {
	st, err := a.Status(r.tctx)
	switch {
	case err != nil && r.ctx.Err() != nil:
		return false, r.ctx.Err()
	case err != nil:
		if since := time.Since(lastOK[a]); since >= silentFor {
			return false, agentFault(a, fmt.Errorf("stopped answering mid-trial (nothing for %v): %w", since.Round(100*time.Millisecond), err))
		}
		return false, nil
	case !st.Finished():
		lastOK[a] = time.Now()
		return false, nil
	case st.State == protocol.StateFailed:
		return false, agentFault(a, fmt.Errorf("trial failed: %s", st.Error))
	case st.Sender != nil, st.Receiver != nil:
		r.done[a] = &st
	case st.Job != nil:
		if err := st.Job.Validate(); err != nil {
			return false, agentFault(a, fmt.Errorf("its operators' accounting: %w", err))
		}
		r.done[a] = &st
	default:
		return false, agentFault(a, errors.New("finished without a result"))
	}
	return true, nil
}

// collect puts the agents' results into the outcome in the agents'
// order, then the metrics watches'; a job's result is named by its node
// (job0, ... by --job-agent, then the watches).
func (r *trialRun) collect() {
	for _, a := range r.c.Receivers {
		if st := r.done[a]; st != nil && st.Receiver != nil {
			r.o.Receivers = append(r.o.Receivers, st.Receiver)
		}
	}
	for _, a := range r.c.Senders {
		if st := r.done[a]; st != nil && st.Sender != nil {
			r.o.Senders = append(r.o.Senders, st.Sender)
		}
	}
	for i, a := range r.c.Jobs {
		if st := r.done[a]; st != nil && st.Job != nil {
			st.Job.Node = fmt.Sprintf("job%d", i)
			r.o.Jobs = append(r.o.Jobs, st.Job)
		}
	}
	for i, res := range r.watched {
		res.Node = fmt.Sprintf("job%d", len(r.c.Jobs)+i)
		r.o.Jobs = append(r.o.Jobs, res)
	}
	r.done, r.watched = nil, nil
}

// WaitAnswering waits up to timeout until every agent answers its info
// request: agents found by DNS (a Kubernetes Service's pods) may be in it
// before their address takes a connection (CI, 2026-11-28: a receiver's
// pod unreachable for the sweep's first request, ready a moment later).
// Prepare names an agent that never answers.
func (c *Controller) WaitAnswering(ctx context.Context, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pending := append(append(append([]*remote.Agent(nil), c.Receivers...), c.Senders...), c.Jobs...)
	for len(pending) > 0 {
		next := pending[:0]
		for _, a := range pending {
			if _, err := a.Info(ctx); err != nil {
				next = append(next, a)
			}
		}
		if pending = next; len(pending) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}
