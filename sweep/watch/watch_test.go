package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/stage/stagemetrics"
)

// agent is a fake agent whose metrics and activity reply the test sets
// between scrapes; it records the cursors it was asked from.
type agent struct {
	mu       sync.Mutex
	text     string
	activity protocol.ActivityReply
	since    []string
	token    string
}

func (a *agent) set(text string) { a.mu.Lock(); a.text = text; a.mu.Unlock() }

func (a *agent) setActivity(r protocol.ActivityReply) { a.mu.Lock(); a.activity = r; a.mu.Unlock() }

func (a *agent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch r.URL.Path {
	case "/metrics":
		_, _ = io.WriteString(w, a.text)
	case protocol.PathActivity:
		if a.token != "" && r.Header.Get("Authorization") != "Bearer "+a.token {
			http.Error(w, `{"error":"no token"}`, http.StatusUnauthorized)
			return
		}
		a.since = append(a.since, r.URL.Query().Get("since"))
		if a.activity.Stages == nil {
			a.activity.Stages = []protocol.StageActivity{}
		}
		_ = json.NewEncoder(w).Encode(a.activity)
	default:
		http.NotFound(w, r)
	}
}

func receiverMetrics(items, working, idle float64, label string) string {
	return fmt.Sprintf(`# TYPE cp_stage_items_total counter
cp_stage_items_total{stage="consumer"} %g
# TYPE cp_stage_seconds_total counter
cp_stage_seconds_total{stage="consumer",state="working"} %g
cp_stage_seconds_total{stage="consumer",state="idle"} %g
# TYPE cp_stage_label gauge
cp_stage_label{label="HEALTHY",stage="consumer"} %d
cp_stage_label{label="STALLED",stage="consumer"} %d
# TYPE cp_stage_service_rate gauge
cp_stage_service_rate{method="busy_time",stage="consumer"} 95000
cp_stage_service_rate{method="raftlib",stage="consumer"} NaN
`, items, working, idle, b2i(label == "HEALTHY"), b2i(label == "STALLED"))
}

func senderMetrics(items float64) string {
	return fmt.Sprintf("# TYPE cp_stage_items_total counter\ncp_stage_items_total{stage=\"thread0\"} %g\n", items)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Rates come from successive scrapes; a consumer that stops while the
// sender goes on raises progress-max (and the Prometheus series), which
// clears when it consumes again; an agent that does not answer is named.
func TestWatcherRatesAndAlerts(t *testing.T) {
	recv, send := &agent{}, &agent{}
	rs, ss := httptest.NewServer(recv), httptest.NewServer(send)
	defer rs.Close()
	defer ss.Close()
	addr := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	w := New([]Agent{{Node: "receiver0", Addr: addr(rs)}, {Node: "sender0", Addr: addr(ss)}, {Node: "sender1", Addr: "127.0.0.1:1"}},
		Options{ProgressMax: 150 * time.Millisecond})
	ctx := context.Background()

	recv.set(receiverMetrics(1000, 1, 1, "HEALTHY"))
	send.set(senderMetrics(1000))
	v := w.Step(ctx)
	if len(v.Stages) != 2 || len(v.Errors) != 1 || !strings.Contains(v.Errors[0], "sender1") {
		t.Fatalf("first view: %+v", v)
	}
	time.Sleep(100 * time.Millisecond)
	recv.set(receiverMetrics(2000, 1.06, 1.04, "HEALTHY")) // 1000 buckets and 60 ms of work in ~100 ms
	send.set(senderMetrics(2000))
	v = w.Step(ctx)
	c := v.Stages[0]
	if c.Stage != "consumer" || c.Kind != "consumer" || c.ItemsPerS < 5000 || c.ItemsPerS > 11000 || c.Busy < 0.3 || c.Busy > 0.7 ||
		c.Label != "HEALTHY" || c.BusyTime == nil || *c.BusyTime != 95000 || c.RaftLib != nil {
		t.Fatalf("consumer %+v (busy_time %v)", c, c.BusyTime)
	}
	if len(v.Alerts) != 0 {
		t.Fatalf("alerts while consuming: %+v", v.Alerts)
	}
	// The consumer stops; the sender goes on.
	for i := 0; i < 3; i++ {
		time.Sleep(80 * time.Millisecond)
		recv.set(receiverMetrics(2000, 1.14, 1.04, "STALLED"))
		send.set(senderMetrics(float64(3000 + i*1000)))
		v = w.Step(ctx)
	}
	if len(v.Alerts) != 1 || v.Alerts[0].Invariant != "progress-max" || v.Alerts[0].Stage != "receiver0/consumer" || v.Stages[0].Label != "STALLED" {
		t.Fatalf("after 240 ms without progress: alerts %+v, stages %+v", v.Alerts, v.Stages)
	}
	srv, err := httpapi.Serve(httpapi.ServerConfig{Addr: "127.0.0.1:0", Routes: w.Routes(), Metrics: stagemetrics.Alerts{Of: w}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	metrics := get(t, srv.URL()+"/metrics")
	if !strings.Contains(metrics, `cp_watch_alert_firing{invariant="progress-max",stage="receiver0/consumer"} 1`) ||
		!strings.Contains(metrics, `cp_watch_alerts_total{invariant="progress-max",stage="receiver0/consumer"} 1`) {
		t.Fatalf("/metrics:\n%s", metrics)
	}
	if state := get(t, srv.URL()+"/state.json"); !strings.Contains(state, `"invariant":"progress-max"`) {
		t.Fatalf("/state.json: %s", state)
	}
	if page := get(t, srv.URL()+"/"); !strings.Contains(page, "<title>cpsweep watch</title>") {
		t.Fatal("no page at /")
	}
	// It consumes again: the alert clears, the counter stays.
	recv.set(receiverMetrics(2500, 1.2, 1.04, "HEALTHY"))
	v = w.Step(ctx)
	if len(v.Alerts) != 0 {
		t.Fatalf("alerts after progress: %+v", v.Alerts)
	}
	if m := get(t, srv.URL()+"/metrics"); !strings.Contains(m, `cp_watch_alert_firing{invariant="progress-max",stage="receiver0/consumer"} 0`) {
		t.Fatalf("/metrics after progress:\n%s", m)
	}
	var b strings.Builder
	WriteText(&b, v)
	for _, want := range []string{"consumer", "HEALTHY", "95.00 k/s", "not_converged", "agent error: sender1", "invariants: no alert", "no trial running"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text view lacks %q:\n%s", want, b.String())
		}
	}
}

// Bad bytes from an agent are an error for that agent, not a crash.
func TestParseRefusesGarbage(t *testing.T) {
	for _, text := range []string{"cp_stage_items_total{stage=\"x\" 1\n", "\x00\x01\x02", strings.Repeat("a", 100) + "{"} {
		if _, err := parse(strings.NewReader(text)); err == nil {
			t.Errorf("%q parsed", text)
		}
	}
	s, err := parse(strings.NewReader("# unrelated\nother_metric 1\n"))
	if err != nil || len(s.stages) != 0 {
		t.Fatalf("unrelated metrics: %+v %v", s, err)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// FuzzParse: whatever an agent answers, parse returns an error or stage
// metrics, never a panic.
func FuzzParse(f *testing.F) {
	f.Add(receiverMetrics(10, 1, 2, "HEALTHY"))
	f.Add(senderMetrics(5))
	f.Add("cp_stage_label{label=\"\",stage=\"\"} 1\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := parse(strings.NewReader(text))
		if err == nil {
			for name := range s.stages {
				if name == "" {
					t.Fatal("a stage without a name")
				}
			}
		}
	})
}

// changes builds a stage's activity reply: states entered at the given
// instants (ns after base), one item per change.
func changes(name, kind string, next uint64, base int64, at []int64, states []int) protocol.StageActivity {
	sa := protocol.StageActivity{Stage: name, Kind: kind, Next: next}
	for i := range at {
		sa.Changes = append(sa.Changes, [3]int64{base + at[i], int64(states[i]), int64(i)})
	}
	return sa
}

// The live critical participation is built from the agents' state
// changes over whole, fixed windows: a consumer working throughout
// carries every path while its lane and the sender keep waiting; the
// watch asks each agent from its cursors (with the token), marks a window
// whose changes were lost, and starts afresh on a new trial.
func TestWatcherLiveCriticalParticipation(t *testing.T) {
	const ms = int64(time.Millisecond)
	recv, send := &agent{token: "0123456789abcdef0123"}, &agent{token: "0123456789abcdef0123"}
	rs, ss := httptest.NewServer(recv), httptest.NewServer(send)
	defer rs.Close()
	defer ss.Close()
	addr := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	w := New([]Agent{{Node: "receiver0", Addr: addr(rs)}, {Node: "sender0", Addr: addr(ss)}},
		Options{Token: recv.token, CPWindow: 100 * time.Millisecond, CPWindows: 3})
	ctx := context.Background()
	recv.set(receiverMetrics(1, 1, 1, "HEALTHY"))
	send.set(senderMetrics(1))
	base := int64(1_700_000_000) * int64(time.Second) // window-aligned
	// 0-450 ms: the consumer works throughout (one change); its lane
	// decodes for 1 ms in every 10, waiting for a free bucket otherwise;
	// the sender sends for 1 ms and is blocked for 9.
	var laneAt, sendAt []int64
	var laneSt, sendSt []int
	for t := int64(0); t < 450*ms; t += 10 * ms {
		laneAt, laneSt = append(laneAt, t, t+ms), append(laneSt, stage.Decoding, stage.Starved)
		sendAt, sendSt = append(sendAt, t, t+ms), append(sendSt, stage.Sending, stage.Pushing)
	}
	recv.setActivity(protocol.ActivityReply{Trial: 4, Running: true, NowNs: base + 450*ms, Stages: []protocol.StageActivity{
		changes("consumer", "consumer", 1, base, []int64{0}, []int{stage.Working}),
		changes("lane0", "lane", uint64(len(laneAt)), base, laneAt, laneSt),
		changes("stream0", "network", 0, base, nil, nil), // a black box: no activities
	}})
	send.setActivity(protocol.ActivityReply{Trial: 9, Running: true, NowNs: base + 460*ms, Stages: []protocol.StageActivity{
		changes("thread0", "sender", uint64(len(sendAt)), base, sendAt, sendSt),
	}})
	v := w.Step(ctx)
	if len(v.Errors) != 0 || len(v.CPWindows) != 3 {
		t.Fatalf("first view: errors %v, %d windows (%s), want 3", v.Errors, len(v.CPWindows), v.CriticalParticipation)
	}
	for i, cw := range v.CPWindows {
		wantStart := time.Unix(0, base+int64(i+1)*100*ms).UTC().Format(time.RFC3339Nano)
		if cw.Start != wantStart || !cw.HasPath || cw.Incomplete || len(cw.Top) == 0 {
			t.Fatalf("window %d: %+v, want one from %s with a path", i, cw, wantStart)
		}
		if top := cw.Top[0]; top.Worker != "receiver0/consumer" || top.Kind != "consume" || top.Value < 0.999 {
			t.Fatalf("window %d: top %+v, want the consumer's consume at 1", i, top)
		}
	}
	if !strings.Contains(v.CriticalParticipation, "local edges only") {
		t.Fatalf("note %q", v.CriticalParticipation)
	}
	// The next step asks from the cursors; 30 of the lane's changes were
	// lost (the watch asked too rarely): the windows they fall in are
	// marked.
	recv.setActivity(protocol.ActivityReply{Trial: 4, Running: true, NowNs: base + 800*ms, Stages: []protocol.StageActivity{
		changes("consumer", "consumer", 1, base, nil, nil),
		{Stage: "lane0", Kind: "lane", Next: uint64(len(laneAt)) + 40, Lost: 30, Changes: changes("lane0", "lane", 0, base, []int64{750 * ms, 751 * ms}, []int{stage.Decoding, stage.Starved}).Changes},
	}})
	send.setActivity(protocol.ActivityReply{Trial: 9, Running: true, NowNs: base + 800*ms, Stages: []protocol.StageActivity{
		changes("thread0", "sender", uint64(len(sendAt)), base, nil, nil),
	}})
	v = w.Step(ctx)
	if got := recv.since[len(recv.since)-1]; got != fmt.Sprintf("consumer:1,lane0:%d", len(laneAt)) {
		t.Fatalf("asked from %q", got)
	}
	incomplete := 0
	for _, cw := range v.CPWindows {
		if cw.Incomplete {
			incomplete++
		}
	}
	if len(v.CPWindows) != 3 || incomplete != 3 { // the hole spans 450-750 ms
		t.Fatalf("after a loss: %+v", v.CPWindows)
	}
	// A new trial: cursors start afresh (nothing asked from the old ones).
	recv.setActivity(protocol.ActivityReply{Trial: 5, Running: true, NowNs: base + 900*ms, Stages: []protocol.StageActivity{}})
	w.Step(ctx)
	w.Step(ctx)
	if got := recv.since[len(recv.since)-1]; got != "" {
		t.Fatalf("after a new trial, asked from %q", got)
	}
	// A trial that began 70 ms ago has no whole window yet: none is shown
	// (not an empty one).
	recv.setActivity(protocol.ActivityReply{Trial: 6, Running: true, NowNs: base + 1020*ms, Stages: []protocol.StageActivity{
		changes("consumer", "consumer", 3, base, []int64{950 * ms, 960 * ms, 970 * ms}, []int{stage.Working, stage.Idling, stage.Working})}})
	send.setActivity(protocol.ActivityReply{Trial: 10, Running: true, NowNs: base + 1020*ms, Stages: []protocol.StageActivity{
		changes("thread0", "sender", 1, base, []int64{955 * ms}, []int{stage.Pacing})}})
	if v := w.Step(ctx); len(v.CPWindows) != 0 || !strings.HasPrefix(v.CriticalParticipation, "no whole window") {
		t.Fatalf("70 ms into a trial: %+v, %q", v.CPWindows, v.CriticalParticipation)
	}
	var b strings.Builder
	WriteText(&b, v)
	for _, want := range []string{"critical participation", "receiver0/consumer consume"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text view lacks %q:\n%s", want, b.String())
		}
	}
	// Without the token the agents refuse: said, not a crash.
	w2 := New([]Agent{{Node: "receiver0", Addr: addr(rs)}}, Options{})
	if v := w2.Step(ctx); len(v.Errors) != 1 || !strings.Contains(v.Errors[0], "401") || !strings.Contains(v.Errors[0], "--token-file") ||
		!strings.HasPrefix(v.CriticalParticipation, "not available") {
		t.Fatalf("without the token: %v, %q", v.Errors, v.CriticalParticipation)
	}
}

// FuzzActivityReply: whatever an agent answers for its state changes, the
// watch builds its windows or says why not, never a panic.
func FuzzActivityReply(f *testing.F) {
	f.Add(`{"trial":1,"running":true,"now_ns":2500000000,"stages":[{"stage":"consumer","kind":"consumer","next":2,"changes":[[1000000000,1,0],[1500000000,0,5]]},{"stage":"lane0","kind":"lane","next":1,"lost":3,"changes":[[900000000,2,1]]}]}`)
	f.Add(`{"trial":1,"running":true,"now_ns":-5,"stages":[{"stage":"thread0","changes":[[9,7,1],[3,1,-1]]}]}`)
	f.Add(`{"trial":2,"running":true,"now_ns":9223372036854775807,"stages":[{"stage":"thread0","changes":[[-9223372036854775808,0,0]]}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		var r protocol.ActivityReply
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			return
		}
		w := New([]Agent{{Node: "n", Addr: "a"}}, Options{CPWindow: time.Second})
		if la := absorb(absorb(nil, r, r.NowNs-int64(4*time.Second)), r, r.NowNs-int64(4*time.Second)); la != nil {
			w.live["a"] = la
		}
		windows, note := w.criticalParticipation()
		if note == "" || len(windows) > DefaultCPWindows+1 {
			t.Fatalf("%d windows, note %q", len(windows), note)
		}
	})
}

// The live view books a thread's time runnable but not running as the
// host's (cpu-wait), as analyze --pag does: a consumer that worked
// throughout while waiting for a CPU half the time carries the paths half
// as consume and half as cpu-wait. Its counters are read from the
// agent's metrics at the agent's time of each activity reply.
func TestWatcherLiveCPUWait(t *testing.T) {
	const ms = int64(time.Millisecond)
	recv := &agent{}
	rs := httptest.NewServer(recv)
	defer rs.Close()
	w := New([]Agent{{Node: "receiver0", Addr: strings.TrimPrefix(rs.URL, "http://")}}, Options{CPWindow: 100 * time.Millisecond, CPWindows: 3})
	base := int64(1_700_000_000) * int64(time.Second)
	metrics := func(consumerWait, zmqWait float64) string {
		return receiverMetrics(1, 1, 1, "HEALTHY") + fmt.Sprintf("# TYPE cp_thread_runqueue_seconds_total counter\n"+
			"cp_thread_runqueue_seconds_total{thread=\"consumer\"} %g\ncp_thread_runqueue_seconds_total{thread=\"zmq-io\"} %g\n", consumerWait, zmqWait)
	}
	recv.set(metrics(2, 7))
	recv.setActivity(protocol.ActivityReply{Trial: 1, Running: true, NowNs: base + 450*ms, Stages: []protocol.StageActivity{
		changes("consumer", "consumer", 1, base, []int64{0}, []int{stage.Working})}})
	v := w.Step(context.Background())
	for _, cw := range v.CPWindows { // one sample: nothing to measure between
		if cw.Top[0].Kind != "consume" || cw.Top[0].Value < 0.999 {
			t.Fatalf("before a second scrape: %+v", cw.Top)
		}
	}
	// 350 ms later the consumer had waited 175 ms more: half of each
	// window since.
	recv.set(metrics(2.175, 8))
	recv.setActivity(protocol.ActivityReply{Trial: 1, Running: true, NowNs: base + 800*ms, Stages: []protocol.StageActivity{
		changes("consumer", "consumer", 1, base, nil, nil)}})
	v = w.Step(context.Background())
	if len(v.CPWindows) != 3 || !strings.Contains(v.CriticalParticipation, "cpu-wait") {
		t.Fatalf("%d windows, note %q", len(v.CPWindows), v.CriticalParticipation)
	}
	for _, cw := range v.CPWindows {
		got := map[string]float64{}
		for _, s := range cw.Top {
			got[s.Worker+" "+s.Kind] = s.Value
		}
		if len(got) != 2 || got["receiver0/consumer cpu-wait"] < 0.4999 || got["receiver0/consumer cpu-wait"] > 0.5001 || got["receiver0/consumer consume"] < 0.4999 {
			t.Fatalf("window %s: %v, want consume and cpu-wait at half each", cw.Start, got)
		}
	}
}

func jobMetrics(items, busy, blocked, waiting float64) string {
	return fmt.Sprintf(`# TYPE cp_stage_items_total counter
cp_stage_items_total{stage="join"} %g
# TYPE cp_stage_seconds_total counter
cp_stage_seconds_total{stage="join",state="busy"} %g
cp_stage_seconds_total{stage="join",state="blocked"} %g
cp_stage_seconds_total{stage="join",state="waiting"} %g
`, items, busy, blocked, waiting)
}

// TestWatcherNamesAJobsOperators: a job agent's stages (cpjob
// --agent-addr) are its operators, of kind operator, named by the node
// and the operator, with their busy and blocked shares; a stage of no
// agent's naming and without an operator's states stays a black box.
func TestWatcherNamesAJobsOperators(t *testing.T) {
	job := &agent{}
	js := httptest.NewServer(job)
	defer js.Close()
	w := New([]Agent{{Node: "job0", Addr: strings.TrimPrefix(js.URL, "http://")}}, Options{})
	ctx := context.Background()
	job.set(jobMetrics(100, 1, 1, 1) + "cp_stage_items_total{stage=\"box\"} 5\n")
	w.Step(ctx)
	time.Sleep(100 * time.Millisecond)
	job.set(jobMetrics(200, 1.07, 1.02, 1.01) + "cp_stage_items_total{stage=\"box\"} 6\n")
	v := w.Step(ctx)
	if len(v.Stages) != 2 {
		t.Fatalf("stages %+v", v.Stages)
	}
	box, join := v.Stages[0], v.Stages[1]
	if join.Node != "job0" || join.Stage != "join" || join.Kind != string(stage.Operator) || join.Busy < 0.4 || join.Busy > 0.9 || join.Blocked < 0.1 || join.Blocked > 0.3 || join.ItemsPerS < 500 {
		t.Errorf("the join %+v; want an operator busy ~70%% and blocked ~20%% of the interval", join)
	}
	if box.Kind != string(stage.SUT) {
		t.Errorf("a stage without an operator's states is %s, want a black box", box.Kind)
	}
	var b strings.Builder
	WriteText(&b, v)
	if !strings.Contains(b.String(), "job0") || !strings.Contains(b.String(), "join") {
		t.Errorf("text view:\n%s", b.String())
	}
}

// TestWatcherLiveCPThroughAJobsOperators: a job agent's operators (kind
// operator, any name) are workers of the live graph with the operators'
// kinds: the join, busy throughout, carries every path while the filter
// before it waits on its output (blocked) and for its input in turns.
func TestWatcherLiveCPThroughAJobsOperators(t *testing.T) {
	const ms = int64(time.Millisecond)
	job := &agent{}
	js := httptest.NewServer(job)
	defer js.Close()
	w := New([]Agent{{Node: "job0", Addr: strings.TrimPrefix(js.URL, "http://")}}, Options{CPWindow: 100 * time.Millisecond, CPWindows: 2})
	job.set(jobMetrics(100, 1, 1, 1))
	base := int64(1_700_000_000) * int64(time.Second)
	var at []int64
	var st []int
	for t := int64(0); t < 350*ms; t += 10 * ms {
		at, st = append(at, t, t+2*ms, t+9*ms), append(st, stage.OpBusy, stage.OpBlocked, stage.OpWaiting)
	}
	job.setActivity(protocol.ActivityReply{Trial: 1, Running: true, NowNs: base + 350*ms, Stages: []protocol.StageActivity{
		changes("filter", string(stage.Operator), uint64(len(at)), base, at, st),
		changes("join", string(stage.Operator), 1, base, []int64{0}, []int{stage.OpBusy}),
	}})
	v := w.Step(context.Background())
	if len(v.CPWindows) != 2 {
		t.Fatalf("%d windows (%s), want 2", len(v.CPWindows), v.CriticalParticipation)
	}
	for i, cw := range v.CPWindows {
		if !cw.HasPath || len(cw.Top) == 0 || cw.Top[0].Worker != "job0/join" || cw.Top[0].Kind != "busy" || cw.Top[0].Value < 0.999 {
			t.Errorf("window %d: %+v; want the join's busy on every path", i, cw)
		}
	}
}
