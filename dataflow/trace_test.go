package dataflow_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/dataflow"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/stage"
)

// readLog is a closed log's records.
func readLog(t *testing.T, path string) []profiler.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []profiler.Record
	if _, err := profiler.ReadBlocks(f, func(recs []profiler.Record) error {
		out = append(out, recs...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestATraceLogsItsSpanOnly: traces of a running operator (a sweep's
// profiled trials, one after another) get its points and state changes
// in their span and nothing after Stop, each activity log opening with
// the state the operator was in and closing with the one it is in at the
// end; the operator never waits for a trace and runs on after it.
func TestATraceLogsItsSpanOnly(t *testing.T) {
	job, err := dataflow.New(dataflow.Config{Clock: newClock(t)})
	if err != nil {
		t.Fatal(err)
	}
	op, err := job.Operator("join", nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	logged := map[uint64]bool{} // ids logged while the operator saw a trace
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the operator: batches of 10 tuples
		defer wg.Done()
		for id := uint64(0); ; id += 10 {
			select {
			case <-done:
				return
			default:
			}
			op.Busy()
			traced := op.Profiled()
			op.LogRange(id, 10)
			op.Processed(1, 10)
			op.Waiting()
			if traced {
				mu.Lock()
				logged[id] = true
				mu.Unlock()
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	for round := range 3 {
		dir := t.TempDir()
		p, h := profiled(t, dir)
		tr, err := job.Trace(p, h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := job.Trace(p, h); err == nil {
			t.Fatal("a second trace at once was accepted")
		}
		time.Sleep(30 * time.Millisecond)
		tr.Stop()
		if err := p.Close(); err != nil { // the operator runs on: it must not log here any more
			t.Fatal(err)
		}
		points := readLog(t, filepath.Join(dir, "op.join.log"))
		acts := readLog(t, filepath.Join(dir, "activity.op.join.log"))
		if len(points) < 100 || len(points)%10 != 0 {
			t.Fatalf("round %d: %d points: want whole batches of 10, many", round, len(points))
		}
		mu.Lock()
		for _, r := range points {
			if r.ID%10 == 0 && !logged[r.ID] {
				t.Errorf("round %d: id %d logged without the operator seeing the trace", round, r.ID)
			}
		}
		mu.Unlock()
		if len(acts) < 20 {
			t.Fatalf("round %d: %d state changes", round, len(acts))
		}
		prevItems, prevTSC := uint64(0), uint64(0)
		for i, r := range acts {
			state, items := stage.ActivityOf(r.ID)
			if state != stage.OpBusy && state != stage.OpWaiting || items < prevItems || r.TSC < prevTSC {
				t.Fatalf("round %d: change %d is state %d at %d items %d (after %d at %d)", round, i, state, r.TSC, items, prevItems, prevTSC)
			}
			prevItems, prevTSC = items, r.TSC
		}
		first, _ := stage.ActivityOf(acts[0].ID)
		lastState, lastItems := stage.ActivityOf(acts[len(acts)-1].ID)
		if lastItems < uint64(len(points))/10 || first < 0 || lastState < 0 {
			t.Errorf("round %d: the last change counts %d items, the log %d batches", round, lastItems, len(points)/10)
		}
	}
	close(done)
	wg.Wait()
}

// TestTracedOperatorCallsAllocateNothing: with a trace running, every
// call an operator's loop makes allocates nothing.
func TestTracedOperatorCallsAllocateNothing(t *testing.T) {
	p, h := profiled(t, t.TempDir())
	defer p.Close()
	job, err := dataflow.New(dataflow.Config{Clock: newClock(t)})
	if err != nil {
		t.Fatal(err)
	}
	op, err := job.Operator("filter", nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := job.Trace(p, h)
	if err != nil {
		t.Fatal(err)
	}
	id := uint64(0)
	if a := testing.AllocsPerRun(10_000, func() {
		op.Busy()
		op.Log(id)
		op.LogRange(id, 10)
		op.Processed(1, 10)
		op.Blocked()
		op.Waiting()
		id += 10
	}); a != 0 {
		t.Errorf("%v allocations per round of traced calls", a)
	}
	tr.Stop()
}
