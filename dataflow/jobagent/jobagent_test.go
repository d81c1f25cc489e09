package jobagent_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/dataflow"
	"github.com/cloudprofiler-go/cp/dataflow/jobagent"
	"github.com/cloudprofiler-go/cp/servicerate"
	"github.com/cloudprofiler-go/cp/sweep/agent"
	"github.com/cloudprofiler-go/cp/sweep/protocol"
	"github.com/cloudprofiler-go/cp/tsc"
)

const token = "job-token-job-token"

// serve runs a job of two operators, join -> window, served as an agent.
func serve(t *testing.T, stalls ...dataflow.Stall) (*protocol.Client, *dataflow.Operator, *dataflow.Operator) {
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
	return protocol.NewClient(ln.Addr().String(), token), join, window
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
	} {
		_, err := c.Start(context.Background(), body)
		if err == nil || !strings.Contains(err.Error(), "bad trial configuration") {
			t.Errorf("%v: %v; want refused", body, err)
		}
	}
}
