package dataflow

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"time"

	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/tsc"
)

// ActivityChannel is the channel an operator's state changes are traced
// on (Trace): "activity.op.join". The "op." tells the activity graph that
// the stage is an operator (its states: waiting, busy, blocked).
func ActivityChannel(operator string) string { return "activity." + PointChannel(operator) }

// PointChannel is the channel an operator's tuple ids are logged on: "op.join".
func PointChannel(operator string) string { return "op." + operator }

// traceLogs are one trace's channels of an operator.
type traceLogs struct {
	points, activity *profiler.Channel
}

// Trace is a span of the job (a sweep's profiled trial) whose operators
// log their points and state changes on a profiler of its own, as a
// sender's or a receiver's stages do in a profiled trial.
type Trace struct {
	job  *Job
	ops  []*Operator
	logs []*traceLogs
}

// Trace makes every operator declared so far log its tuple ids (op.NAME)
// and its state changes (activity.op.NAME, stage.ActivityID records) on
// p, with the handlers h gives those names, until Stop. One trace at a
// time. Each operator's activity log starts with the state it is in now;
// a change it makes while the trace starts may be missed (at most one,
// at that instant).
func (j *Job) Trace(p *profiler.Profiler, h *profiler.Handlers) (*Trace, error) {
	if p == nil {
		return nil, errors.New("dataflow: trace without a profiler")
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.tracing {
		return nil, errors.New("dataflow: a trace is already running")
	}
	t := &Trace{job: j}
	for _, o := range j.names {
		t.ops = append(t.ops, o)
	}
	sort.Slice(t.ops, func(a, b int) bool { return t.ops[a].name < t.ops[b].name })
	logs := make([]*traceLogs, len(t.ops))
	for i, o := range t.ops {
		pts, err := p.OpenNamed(PointChannel(o.name), h)
		if err != nil {
			return nil, fmt.Errorf("dataflow: trace operator %q: %w", o.name, err)
		}
		act, err := p.OpenNamed(ActivityChannel(o.name), h)
		if err != nil {
			return nil, fmt.Errorf("dataflow: trace operator %q: %w", o.name, err)
		}
		logs[i] = &traceLogs{points: pts, activity: act}
	}
	now := tsc.ReadFast()
	for i, o := range t.ops {
		// Written here before the writer can see the channel (published
		// by the Store after it): the activity log's first record.
		o.logState(logs[i].activity, now)
		o.trace.Store(logs[i])
	}
	t.logs = logs
	j.tracing = true
	return t, nil
}

// Stop ends the trace: no operator logs on its channels after it returns,
// and each one's activity log ends with the state it is in then, so that
// its last activity has an end. The trace's profiler can then be closed.
// It waits for an operator inside a log call to leave it (a log call
// always returns): handing its channels back earlier would let the
// profiler close them under it.
func (t *Trace) Stop() {
	for _, o := range t.ops {
		o.trace.Store(nil)
	}
	for _, o := range t.ops {
		for spins := 0; o.inTrace.Load(); spins++ {
			if spins < 1000 {
				runtime.Gosched()
			} else {
				time.Sleep(time.Millisecond) // a log call held up (a handler's full queue)
			}
		}
	}
	now := tsc.ReadFast()
	for i, o := range t.ops {
		o.logState(t.logs[i].activity, now)
	}
	t.job.mu.Lock()
	t.job.tracing = false
	t.job.mu.Unlock()
}

// logState logs on ch the state the operator is in at now, and the items
// it has done (nothing for an operator that never entered a state).
func (o *Operator) logState(ch *profiler.Channel, now uint64) {
	if r := o.acct.Read(now); r.Ticks != ([stage.MaxStates]uint64{}) || r.Items > 0 {
		ch.LogTSAt(now, stage.ActivityID(r.State, r.Items))
	}
}
