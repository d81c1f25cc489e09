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

// stopWait bounds how long Stop waits for an operator to leave a log call.
const stopWait = 5 * time.Second

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
		if r := o.acct.Read(now); r.Ticks != ([stage.MaxStates]uint64{}) || r.Items > 0 {
			logs[i].activity.LogTSAt(now, stage.ActivityID(r.State, r.Items))
		}
		o.trace.Store(logs[i])
	}
	t.logs = logs
	j.tracing = true
	return t, nil
}

// Stop ends the trace: no operator logs on its channels after it returns,
// and each one's activity log ends with the state it is in then, so that
// its last activity has an end. The trace's profiler can then be closed.
// An error is an operator that stayed inside a log call for seconds (the
// profiler must then be left open).
func (t *Trace) Stop() error {
	for _, o := range t.ops {
		o.trace.Store(nil)
	}
	deadline := time.Now().Add(stopWait)
	var stuck []string
	for _, o := range t.ops {
		for o.inTrace.Load() && time.Now().Before(deadline) {
			runtime.Gosched()
		}
		if o.inTrace.Load() {
			stuck = append(stuck, o.name)
		}
	}
	if len(stuck) > 0 {
		return fmt.Errorf("dataflow: operators %v stayed inside a log call for %v: their trace logs cannot be closed", stuck, stopWait)
	}
	now := tsc.ReadFast()
	for i, o := range t.ops {
		if r := o.acct.Read(now); r.Ticks != ([stage.MaxStates]uint64{}) || r.Items > 0 {
			t.logs[i].activity.LogTSAt(now, stage.ActivityID(r.State, r.Items))
		}
	}
	t.job.mu.Lock()
	t.job.tracing = false
	t.job.mu.Unlock()
	return nil
}
