package jobagent_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/dataflow"
	"github.com/cloudprofiler-go/cp/dataflow/jobagent"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/servicerate"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/sweep/agent"
	"github.com/cloudprofiler-go/cp/sweep/remote"
	"github.com/cloudprofiler-go/cp/tsc"
)

const token = "job-token-job-token"

// serve runs a job of two operators, join -> window, served as an agent.
func serve(t *testing.T, stalls ...dataflow.Stall) (*remote.Agent, *dataflow.Operator, *dataflow.Operator) {
	t.Helper()
	clock, err := tsc.NewClock(20 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	job, err := dataflow.New(dataflow.Config{Clock: clock, Period: 20 * time.Millisecond, Stalls: stalls})
	if err != nil {
		t.Fatal(err)
	}
	rates := servicerate.Track(job.Stages(), clock)
	join, _ := job.Operator("join", nil)
	window, _ := job.Operator("window", nil)
	if err := job.Connect(join, window); err != nil {
		t.Fatal(err)
	}
	job.Start()
	t.Cleanup(job.Stop)
	a, err := agent.New(agent.Options{Role: jobagent.Role{JobName: "ysb", Job: job, Rates: rates}, Token: token, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := agent.Serve(ln, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); srv.Close() })
	return remote.New(ln.Addr().String(), token), join, window
}

// TestAJobServesItsOperatorsPerTrial: the job answers as a job, and a
// trial is a window of its running accounting: the operators' series
// from the trial's start to its stop (not what came before), with the
// dataflow's edges, and the stalls injected in the trial (not those
// before or after it).
func TestAJobServesItsOperatorsPerTrial(t *testing.T) {
	c, join, window := serve(t, dataflow.Stall{Operator: "join", For: 50 * time.Millisecond},
		dataflow.Stall{Operator: "window", At: 250 * time.Millisecond, For: 10 * time.Millisecond},
		dataflow.Stall{Operator: "window", At: time.Hour, For: time.Second})
	ctx := context.Background()
	info, err := c.Info(ctx)
	if err != nil || info.Role != protocol.RoleJob {
		t.Fatalf("info %+v, %v; want the role job", info, err)
	}
	work := func(op *dataflow.Operator, d time.Duration, n uint64) {
		op.Busy()
		time.Sleep(d)
		op.Processed(n, n)
		op.Waiting()
	}
	work(join, 100*time.Millisecond, 1000) // before the trial: not in it
	if _, err := c.Start(ctx, protocol.JobTrial{Duration: time.Minute}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	work(join, 300*time.Millisecond, 30)
	work(window, 100*time.Millisecond, 10)
	if _, err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var st protocol.TrialStatus
	for deadline := time.Now().Add(5 * time.Second); !st.Finished() && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st, err = c.Status(ctx); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	if st.State != protocol.StateDone || st.Job == nil {
		t.Fatalf("status %+v", st)
	}
	res := st.Job
	if err := res.Validate(); err != nil || res.Name != "ysb" || len(res.Edges) != 1 || res.Edges[0] != [2]string{"join", "window"} {
		t.Fatalf("result %s %v, %v", res.Name, res.Edges, err)
	}
	if len(res.Injected) != 1 || res.Injected[0].Operator != "window" || res.Injected[0].ToUnixNs-res.Injected[0].FromUnixNs != 10e6 {
		t.Errorf("injected %+v; want the window's 10 ms in the trial only", res.Injected)
	}
	s := res.StageSeries
	span := time.Duration(s.UnixNs[len(s.UnixNs)-1] - s.UnixNs[0])
	if span < 400*time.Millisecond || span > elapsed+100*time.Millisecond {
		t.Errorf("the series spans %v; want the trial's %v (and the period before it)", span, elapsed)
	}
	tuples := map[string]uint64{}
	for _, r := range res.ServiceRates {
		tuples[r.Stage+" "+string(r.Method)] = r.Tuples
	}
	if len(res.ServiceRates) != 4 || tuples["join raftlib"] != 30 || tuples["window busy_time"] != 10 {
		t.Errorf("service rates' tuples %v; want both methods for both operators, over the trial only", tuples)
	}
	// sample 0 is the last before the trial, 1 the trial's start
	for _, tot := range s.Totals(s.UnixNs[1], s.UnixNs[len(s.UnixNs)-1]) {
		want := map[string]uint64{"join": 30, "window": 10}[tot.Name]
		busy := tot.Seconds["busy"]
		if tot.Items != want || busy < 0.08 || busy > 0.35 {
			t.Errorf("%s over the trial: %d items, busy %.3fs; want %d items and its own busy time", tot.Name, tot.Items, busy, want)
		}
	}
}

// TestAJobRefusesBadTrials: a job trial's request is decoded strictly and
// bounded.
func TestAJobRefusesBadTrials(t *testing.T) {
	c, _, _ := serve(t)
	for _, body := range []any{
		map[string]any{"duration_ns": 0},
		map[string]any{"duration_ns": int64(48 * time.Hour)},
		map[string]any{"duration_ns": int64(time.Second), "rate": 5},
		map[string]any{"duration_ns": int64(time.Second), "profile": map[string]any{"default": map[string]any{"handler": "buffered", "path": "../{name}.log"}}},
	} {
		_, err := c.Start(context.Background(), body)
		if err == nil || !strings.Contains(err.Error(), "bad trial configuration") {
			t.Errorf("%v: %v; want refused", body, err)
		}
	}
}

// TestAProfiledJobTrialTracesItsOperators: a trial with handlers traces
// the operators in it (their points and state changes, one log each),
// served once as the agents' profile archive, as a sender's would be.
func TestAProfiledJobTrialTracesItsOperators(t *testing.T) {
	c, join, window := serve(t)
	ctx := context.Background()
	h, err := profiler.ParseHandlers([]byte(`default: {handler: buffered, path: "{name}.log"}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	join.Busy()
	join.LogRange(1, 5) // before the trial: not in its logs
	join.Waiting()
	if _, err := c.Start(ctx, protocol.JobTrial{Duration: time.Minute, Profile: h}); err != nil {
		t.Fatal(err)
	}
	for id := uint64(100); id < 110; id++ {
		join.Busy()
		join.Log(id)
		join.Processed(1, 1)
		join.Waiting()
		window.Busy()
		window.Log(id)
		window.Processed(1, 1)
		window.Blocked()
	}
	if _, err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, err := c.Status(ctx)
		if err != nil || st.Finished() || time.Now().After(deadline) {
			if err != nil || st.State != protocol.StateDone {
				t.Fatalf("status %+v, %v", st, err)
			}
			break
		}
	}
	dir := t.TempDir()
	files, err := c.FetchProfile(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"activity.op.join.log", "activity.op.window.log", "op.join.log", "op.window.log"}
	for _, name := range want {
		if !slices.Contains(files, filepath.Join(dir, name)) {
			t.Fatalf("profile files %v; want %v", files, want)
		}
	}
	ids := func(name string) (out []uint64) {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := profiler.ReadBlocks(f, func(recs []profiler.Record) error {
			for _, r := range recs {
				out = append(out, r.ID)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := ids("op.join.log"); len(got) != 10 || got[0] != 100 || got[9] != 109 {
		t.Errorf("the join's points %v; want the trial's 100..109 only", got)
	}
	// the window: never in a state before (no opening record), then ten
	// busy-blocked pairs and the closing record (blocked, 10 items)
	acts := ids("activity.op.window.log")
	if len(acts) != 21 {
		t.Fatalf("%d window state changes; want 21", len(acts))
	}
	if st, items := stage.ActivityOf(acts[20]); st != stage.OpBlocked || items != 10 {
		t.Errorf("the window's last record is state %d with %d items; want blocked with 10", st, items)
	}
	if st, _ := stage.ActivityOf(ids("activity.op.join.log")[0]); st != stage.OpWaiting {
		t.Errorf("the join's log opens in state %d; want the waiting it was in", st)
	}
}

// TestAnOperatorWorkingWithoutWaitingHasARaftLibRate: an operator that
// goes from item to item without waiting (busy throughout, each item
// counted as it finishes) closes RaftLib's periods, so both methods give
// its rate; one that waits between its items has only the busy-time
// method's (RaftLib's periods need no waiting in them).
//
// On a host that other tests load, the join's spinning is preempted and
// its periods' rates scatter until they do not converge; such a run is
// tried again, up to three times (the rate is judged on the one that
// converged).
func TestAnOperatorWorkingWithoutWaitingHasARaftLibRate(t *testing.T) {
	var join, window servicerate.Rate
	for try := 1; try <= 3; try++ {
		if join, window = raftLibRates(t); join.Converged {
			break
		}
		t.Logf("try %d: the join's RaftLib rate did not converge (a loaded host?): %+v", try, join)
	}
	if join.TuplesPerS == nil || *join.TuplesPerS < 25_000 || *join.TuplesPerS > 60_000 {
		t.Errorf("the join's RaftLib rate %+v; want about 50 k tuples/s (10 every 200 µs)", join)
	}
	if window.Status != servicerate.NotConverged {
		t.Errorf("the window's RaftLib rate %+v; want not converged (it waits between items)", window)
	}
}

// raftLibRates runs a join busy throughout (10 tuples every 200 µs) and a
// window that waits between its items for 400 ms on an agent, and returns
// their RaftLib rates.
func raftLibRates(t *testing.T) (join, window servicerate.Rate) {
	c, jop, wop := serve(t)
	ctx := context.Background()
	if _, err := c.Start(ctx, protocol.JobTrial{Duration: time.Minute}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // the window: waits between its items
		defer close(done)
		for end := time.Now().Add(400 * time.Millisecond); time.Now().Before(end); {
			wop.Busy()
			spinFor(200 * time.Microsecond)
			wop.Processed(1, 10)
			wop.Waiting()
			time.Sleep(200 * time.Microsecond)
		}
	}()
	jop.Busy() // the join: busy throughout, 10 tuples every 200 µs
	for end := time.Now().Add(400 * time.Millisecond); time.Now().Before(end); {
		spinFor(200 * time.Microsecond)
		jop.Processed(1, 10)
	}
	jop.Waiting()
	<-done
	if _, err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var st protocol.TrialStatus
	for deadline := time.Now().Add(5 * time.Second); !st.Finished() && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var err error
		if st, err = c.Status(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if st.Job == nil {
		t.Fatalf("status %+v", st)
	}
	for _, r := range st.Job.ServiceRates {
		switch {
		case r.Stage == "join" && r.Method == servicerate.MethodRaftLib:
			join = r
		case r.Stage == "window" && r.Method == servicerate.MethodRaftLib:
			window = r
		}
	}
	return join, window
}

// spinFor keeps the CPU busy for d.
func spinFor(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}
