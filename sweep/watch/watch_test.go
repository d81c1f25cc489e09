package watch

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// agent is a fake agent whose metrics the test sets between scrapes.
type agent struct {
	mu   sync.Mutex
	text string
}

func (a *agent) set(text string) { a.mu.Lock(); a.text = text; a.mu.Unlock() }

func (a *agent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/metrics" {
		http.NotFound(w, r)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = io.WriteString(w, a.text)
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
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	metrics := get(t, srv.URL+"/metrics")
	if !strings.Contains(metrics, `cp_watch_alert_firing{invariant="progress-max",stage="receiver0/consumer"} 1`) ||
		!strings.Contains(metrics, `cp_watch_alerts_total{invariant="progress-max",stage="receiver0/consumer"} 1`) {
		t.Fatalf("/metrics:\n%s", metrics)
	}
	if state := get(t, srv.URL+"/state.json"); !strings.Contains(state, `"invariant":"progress-max"`) {
		t.Fatalf("/state.json: %s", state)
	}
	if page := get(t, srv.URL+"/"); !strings.Contains(page, "<title>cpsweep watch</title>") {
		t.Fatal("no page at /")
	}
	// It consumes again: the alert clears, the counter stays.
	recv.set(receiverMetrics(2500, 1.2, 1.04, "HEALTHY"))
	v = w.Step(ctx)
	if len(v.Alerts) != 0 {
		t.Fatalf("alerts after progress: %+v", v.Alerts)
	}
	if m := get(t, srv.URL+"/metrics"); !strings.Contains(m, `cp_watch_alert_firing{invariant="progress-max",stage="receiver0/consumer"} 0`) {
		t.Fatalf("/metrics after progress:\n%s", m)
	}
	var b strings.Builder
	WriteText(&b, v)
	for _, want := range []string{"consumer", "HEALTHY", "95.00 k/s", "not_converged", "agent not answering: sender1", "invariants: no alert"} {
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
