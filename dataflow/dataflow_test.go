package dataflow_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/dataflow"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/tsc"
)

func newClock(t testing.TB) *tsc.Clock {
	t.Helper()
	clock, err := tsc.NewClock(20 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return clock
}

// profiled is a profiler writing every operator's points to dir.
func profiled(t testing.TB, dir string) (*profiler.Profiler, *profiler.Handlers) {
	t.Helper()
	h, err := profiler.ParseHandlers([]byte(`default: {handler: buffered, path: "{name}.log"}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	p, err := profiler.NewIn(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return p, h
}

// TestAnOperatorsTimeIsAccountedInItsStates: the time an operator spends
// busy, waiting for input and blocked on its output lands in its stage's
// three states, and its items and tuples in its counts.
func TestAnOperatorsTimeIsAccountedInItsStates(t *testing.T) {
	clock := newClock(t)
	job, err := dataflow.New(dataflow.Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	op, err := job.Operator("join", nil)
	if err != nil {
		t.Fatal(err)
	}
	op.Waiting()
	time.Sleep(20 * time.Millisecond)
	op.Busy()
	time.Sleep(60 * time.Millisecond)
	op.Processed(3, 300)
	op.Blocked()
	time.Sleep(40 * time.Millisecond)
	op.Waiting()
	job.Stages().Sample()
	accounts, readings := job.Stages().Readings()
	if len(accounts) != 1 || accounts[0].Kind() != stage.Operator || accounts[0].Name() != "join" {
		t.Fatalf("stages %v", accounts)
	}
	r := readings[0]
	ms := func(state int) float64 { return clock.TicksToNs(r.Ticks[state]) / 1e6 }
	if w, b, bl := ms(stage.OpWaiting), ms(stage.OpBusy), ms(stage.OpBlocked); w < 18 || w > 40 || b < 58 || b > 90 || bl < 38 || bl > 70 {
		t.Errorf("waiting %.1f ms, busy %.1f ms, blocked %.1f ms; want about 20, 60 and 40", w, b, bl)
	}
	if r.Items != 3 {
		t.Errorf("%d items, want 3", r.Items)
	}
	if names := stage.States(stage.Operator); names[stage.OpBusy].Class != stage.Busy || names[stage.OpBlocked].Class != stage.Blocked || names[stage.OpWaiting].Class != stage.Idle {
		t.Errorf("the operator's states %v are not FlowDiagnoser's busy and waiting-on-dependents bits", names)
	}
}

// TestOperatorCallsAllocateNothing: every call an operator's loop makes,
// the profiler's point included, allocates nothing.
func TestOperatorCallsAllocateNothing(t *testing.T) {
	p, h := profiled(t, t.TempDir())
	defer p.Close()
	job, err := dataflow.New(dataflow.Config{Clock: newClock(t), Profile: p, Handlers: h})
	if err != nil {
		t.Fatal(err)
	}
	op, err := job.Operator("filter", func() int64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	id := uint64(0)
	if a := testing.AllocsPerRun(10_000, func() {
		op.Waiting()
		op.Busy()
		op.Log(id)
		op.LogRange(id, 10)
		op.Processed(1, 10)
		op.Blocked()
		id += 10
	}); a != 0 {
		t.Errorf("%v allocations per round of calls", a)
	}
}

// TestTheProfilersPointsCarryTheTupleIDs: an operator's points are the
// profiler's, in a log of its own (op.NAME) that the analyses read.
func TestTheProfilersPointsCarryTheTupleIDs(t *testing.T) {
	dir := t.TempDir()
	p, h := profiled(t, dir)
	job, err := dataflow.New(dataflow.Config{Clock: newClock(t), Profile: p, Handlers: h})
	if err != nil {
		t.Fatal(err)
	}
	op, err := job.Operator("window", nil)
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(100); id < 110; id++ {
		op.Log(id)
	}
	op.LogRange(200, 5)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for _, r := range readLog(t, filepath.Join(dir, "op.window.log")) {
		ids = append(ids, r.ID)
	}
	if len(ids) != 15 || ids[0] != 100 || ids[9] != 109 || ids[10] != 200 || ids[14] != 204 {
		t.Errorf("logged ids %v", ids)
	}
}

// TestADataflowIsDeclaredOnce: names are unique and bounded, edges join
// this job's operators (each once, never an operator to itself).
func TestADataflowIsDeclaredOnce(t *testing.T) {
	job, err := dataflow.New(dataflow.Config{Clock: newClock(t)})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := dataflow.New(dataflow.Config{Clock: newClock(t)})
	a, _ := job.Operator("filter", nil)
	b, _ := job.Operator("join", nil)
	stranger, _ := other.Operator("join", nil)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"twice", second(job.Operator("filter", nil)), "declared twice"},
		{"no name", second(job.Operator("", nil)), "1 to 64 bytes"},
		{"itself", job.Connect(a, a), "cannot feed itself"},
		{"another job's", job.Connect(a, stranger), "operators of this job"},
		{"a thread of another job's", job.OnThread("t", a, stranger), "not of this job"},
		{"a thread without a name", job.OnThread("", a), "thread name"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, tc.err, tc.want)
		}
	}
	for range 2 {
		if err := job.Connect(a, b); err != nil {
			t.Fatal(err)
		}
	}
	if e := job.Edges(); len(e) != 1 || e[0] != (dataflow.Edge{From: "filter", To: "join"}) {
		t.Errorf("edges %v", e)
	}
	if err := job.OnThread("pipeline thread 0", a, b); err != nil {
		t.Fatal(err)
	}
	for _, st := range job.Stages().Series().Stages {
		if st.Thread != "pipeline thread 0" {
			t.Errorf("%s on thread %q; want pipeline thread 0", st.Name, st.Thread)
		}
	}
	if _, err := dataflow.New(dataflow.Config{}); err == nil {
		t.Error("a job without a clock")
	}
}

func second(_ *dataflow.Operator, err error) error { return err }

// TestLightToLink: what a job links for its accounting stays small, and
// none of it is a Prometheus client, the profiler's configuration server,
// the sweep, a broker client or plotting (BENCHMARKS.md lists it).
func TestLightToLink(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "github.com/cloudprofiler-go/cp/dataflow").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) > 30 {
		t.Errorf("%d packages outside the standard library, want at most 30: %v", len(deps), deps)
	}
	for _, d := range deps {
		for _, banned := range []string{"prometheus", "configsrv", "/sweep", "/driver", "nats", "redis", "franz-go", "plot", "zmq"} {
			if strings.Contains(d, banned) {
				t.Errorf("dataflow links %s", d)
			}
		}
	}
}

// BenchmarkOperator is the cost of an operator's calls: a state change
// (busy, then waiting again: two per batch), and a profiler point (a
// buffered, zstd-compressed log of every tuple).
func BenchmarkOperator(b *testing.B) {
	p, h := profiled(b, b.TempDir())
	defer p.Close()
	job, err := dataflow.New(dataflow.Config{Clock: newClock(b), Profile: p, Handlers: h})
	if err != nil {
		b.Fatal(err)
	}
	op, _ := job.Operator("join", nil)
	benchCalls(b, op, "")
	// a sweep's profiled trial: the point and the state changes logged
	// on the trial's own profiler too (Trace)
	tp, th := profiled(b, b.TempDir())
	defer tp.Close()
	tr, err := job.Trace(tp, th)
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Stop()
	benchCalls(b, op, ", traced")
}

// benchCalls runs the state-change and point benchmarks on op.
func benchCalls(b *testing.B, op *dataflow.Operator, suffix string) {
	b.Run("state"+suffix, func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if i&1 == 0 {
				op.Busy()
			} else {
				op.Waiting()
			}
		}
	})
	b.Run("point"+suffix, func(b *testing.B) {
		b.ReportAllocs()
		for i := uint64(0); b.Loop(); i++ {
			op.Log(i)
		}
	})
}

// TestAnInjectedStallHoldsTheOperatorBusy: a stall (experiments only)
// holds its operator at its first Busy in the stall's span, busy and
// processing nothing, until the span's end; the job says where it put it
// in time; another operator is not held, and a bad stall is refused.
func TestAnInjectedStallHoldsTheOperatorBusy(t *testing.T) {
	clock := newClock(t)
	job, err := dataflow.New(dataflow.Config{Clock: clock, Stalls: []dataflow.Stall{{Operator: "join", At: 100 * time.Millisecond, For: 300 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	join, _ := job.Operator("join", nil)
	filter, _ := job.Operator("filter", nil)
	start := time.Now()
	var longest, filterLongest time.Duration
	for time.Since(start) < 600*time.Millisecond {
		for _, op := range []*dataflow.Operator{join, filter} {
			t0 := time.Now()
			op.Busy()
			d := time.Since(t0)
			op.Processed(1, 1)
			op.Waiting()
			if op == join {
				longest = max(longest, d)
			} else {
				filterLongest = max(filterLongest, d)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if longest < 250*time.Millisecond || longest > 400*time.Millisecond || filterLongest > 100*time.Millisecond {
		t.Errorf("the join held %v at its longest Busy, the filter %v; want about 300 ms and none", longest, filterLongest)
	}
	in := job.Injected(start.UnixNano(), time.Now().UnixNano())
	if len(in) != 1 || in[0].Operator != "join" || in[0].ToUnixNs-in[0].FromUnixNs != 300e6 ||
		in[0].FromUnixNs < start.UnixNano()+50e6 || in[0].FromUnixNs > start.UnixNano()+150e6 {
		t.Errorf("injected %+v; want the join's 300 ms about 100 ms after %d", in, start.UnixNano())
	}
	if got := job.Injected(0, start.UnixNano()); len(got) != 0 {
		t.Errorf("injected before the stall: %+v", got)
	}
	for _, bad := range []dataflow.Stall{{Operator: "", At: 0, For: time.Second}, {Operator: "join", For: 0}, {Operator: "join", For: 2 * time.Hour}} {
		if _, err := dataflow.New(dataflow.Config{Clock: clock, Stalls: []dataflow.Stall{bad}}); err == nil {
			t.Errorf("stall %+v accepted", bad)
		}
	}
}

// TestAJobDeclaresTheTopicsItReadsAndWrites: each topic once, in order,
// at most MaxTopics of each; a nil job (not accounted) takes them and
// keeps nothing.
func TestAJobDeclaresTheTopicsItReadsAndWrites(t *testing.T) {
	var none *dataflow.Job
	none.Reads("jetstream:in")
	none.Writes("jetstream:out")
	job, err := dataflow.New(dataflow.Config{Clock: newClock(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range []string{"jetstream:in", "kafka:in", "jetstream:in"} {
		job.Reads(tp)
	}
	for i := range dataflow.MaxTopics + 3 {
		job.Writes(fmt.Sprintf("redis:out%d", i))
	}
	reads, writes := job.Topics()
	if !slices.Equal(reads, []string{"jetstream:in", "kafka:in"}) || len(writes) != dataflow.MaxTopics || writes[0] != "redis:out0" {
		t.Errorf("reads %v, writes %v: want two reads, the first %d writes", reads, writes, dataflow.MaxTopics)
	}
}

// TestReadRuntime: a collection between two reads shows in their
// difference, within the CPU the runtime says it used.
func TestReadRuntime(t *testing.T) {
	before := dataflow.ReadRuntime()
	var keep [][]byte
	for i := 0; i < 2000; i++ {
		keep = append(keep, make([]byte, 64<<10))
		if len(keep) > 16 {
			keep = keep[1:]
		}
	}
	runtime.GC()
	d := dataflow.ReadRuntime().Sub(before)
	if d.GCCycles < 1 || d.GCCPUSeconds <= 0 || d.CPUSeconds < d.GCCPUSeconds || d.GCPauseSeconds <= 0 || d.GOGC == 0 {
		t.Fatalf("runtime over a forced collection: %+v; want a cycle, its CPU within the job's, its pauses and the setting", d)
	}
}
