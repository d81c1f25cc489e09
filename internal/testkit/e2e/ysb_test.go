package e2e

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/driver/kafka"
	"github.com/cloudprofiler-go/cp/driver/nats"
	"github.com/cloudprofiler-go/cp/driver/redis"
	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sut/ysb"
)

// ysbWindow is one campaign's window: its end (Unix ms) and campaign.
type ysbWindow struct {
	campaign string
	endMs    int64
}

// TestYSBBetweenRealBinaries: dgsend publishes ad events into a broker
// topic, cpjob runs YSB on the Benthos engine (its campaigns in a real
// Redis) from that topic into another, and dgrecv reads the windows'
// counts; through JetStream, Redis Streams and Kafka (kfake: a
// conformance check, never a figure). The counts per campaign and window
// are exactly the views in the input topic, read back by the test; every
// window is written once; dgrecv accounts for the job's output stream
// completely (its end marker comes when cpjob stops) and measures YSB's
// latency: from a window's latest event to the window's arrival.
func TestYSBBetweenRealBinaries(t *testing.T) {
	natsAddr, _ := realserver.NATS(t)
	redisAddr, _ := realserver.Redis(t)
	kafkaAddr := realserver.FakeKafka(t)
	for _, tc := range []struct{ in, out string }{
		{"jetstream://" + natsAddr + "/ysb.in", "jetstream://" + natsAddr + "/ysb.out"},
		{"redis://" + redisAddr + "/ysb.in", "redis://" + redisAddr + "/ysb.out"},
		{"kafka://" + kafkaAddr + "/ysb.in", "kafka://" + kafkaAddr + "/ysb.out"},
	} {
		t.Run(tc.in[:5], func(t *testing.T) { ysbPipeline(t, tc.in, tc.out, redisAddr, false) })
	}
}

// TestYSBAsTwoProcesses: the same job as two processes with a topic
// between them (cpjob ysb --part filter, then --part count), as it runs
// on two hosts: the windows are exactly the input's views, as one
// process counts them.
func TestYSBAsTwoProcesses(t *testing.T) {
	natsAddr, _ := realserver.NATS(t)
	redisAddr, _ := realserver.Redis(t)
	ysbPipeline(t, "jetstream://"+natsAddr+"/split.in", "jetstream://"+natsAddr+"/split.out", redisAddr, true)
}

func ysbPipeline(t *testing.T, in, out, redisAddr string, split bool) {
	r := runYSB(t, in, out, redisAddr, "20k", "2s", split)
	if !maps.Equal(r.got, r.want) || len(r.want) == 0 {
		t.Errorf("the job counted %d windows, the input holds views of %d; first difference: %s", len(r.got), len(r.want), firstWindowDifference(r.want, r.got))
	}
	// the harness's own windows: what dgsend says each window owes is the
	// input's count, and dgrecv's tally is the output's
	if !maps.Equal(r.owed, r.want) {
		t.Errorf("dgsend owes %d windows, the input holds views of %d; first difference: %s", len(r.owed), len(r.want), firstWindowDifference(r.want, r.owed))
	}
	if !maps.Equal(r.consumed, r.got) {
		t.Errorf("dgrecv tallied %d windows, the output holds %d; first difference: %s", len(r.consumed), len(r.got), firstWindowDifference(r.got, r.consumed))
	}
	if !r.complete || r.received != uint64(len(r.got)) || r.latencies != r.received {
		t.Errorf("dgrecv: complete %v, %d windows received (%d in the topic), %d latencies", r.complete, r.received, len(r.got), r.latencies)
	}
	// a window is written once it closes: at least the lateness after its latest event
	if r.p50 < 400*time.Millisecond || r.p99 > 10*time.Second {
		t.Errorf("window latency p50 %v p99 %v: want at least the lateness (500ms) and under 10 s", r.p50, r.p99)
	}
	// the harness's own count of views sent, from its templates, is the
	// input's and the job's
	if uint64(sumCounts(r.want)) != r.expectedViews || uint64(sumCounts(r.got)) != r.expectedViews {
		t.Errorf("dgsend counted %d views sent; the input holds %d, the job counted %d", r.expectedViews, sumCounts(r.want), sumCounts(r.got))
	}
	// dgrecv read the job's lag on its input (--job-input), and the job
	// had caught up by the end
	if n := len(r.jobLags); n < 5 || r.jobLags[n-1] != 0 || slices.Contains(r.jobLags, -1) {
		t.Errorf("the job's lag as dgrecv sampled it: %v; want 5 samples or more, none unreadable, the last 0", r.jobLags)
	}
	t.Logf("YSB %s: %d windows, %d views; window latency p50 %v p99 %v", in, len(r.got), sumCounts(r.got), r.p50, r.p99)
}

// ysbRun is one fixed-rate run of YSB between the real binaries.
type ysbRun struct {
	want, got           map[ysbWindow]int64
	owed, consumed      map[ysbWindow]int64 // the windows as dgsend owes them (--expect-window) and dgrecv tallied them
	complete            bool
	received, latencies uint64
	p50, p99            time.Duration
	sent                uint64  // tuples dgsend sent
	scheduleKept        bool    // dgsend kept its schedule
	lateFraction        float64 // of dgsend's slots, later than 1 ms
	expectedViews       uint64  // the views dgsend counted among what it sent (--expect-filter)
	jobCPU              float64 // cpjob's user+system seconds
	jobLags             []int64 // the job's lag on its input, as dgrecv sampled it
}

// runYSB runs dgsend at rate for duration into in, cpjob ysb from in to
// out (windows of 1 s, lateness 500 ms; split: as two processes, the views
// in the topic in.views between them) and dgrecv on out, then reads both
// topics back. jobArgs go to every cpjob.
func runYSB(t *testing.T, in, out, redisAddr, rate, duration string, split bool, jobArgs ...string) ysbRun {
	t.Helper()
	parts := [][]string{{"--input", in + "?group=ysb", "--output", out, "--redis", redisAddr}}
	if split {
		parts = [][]string{{"--part", "filter", "--input", in + "?group=ysb", "--output", in + ".views"},
			{"--part", "count", "--input", in + ".views?group=ysb-count", "--output", out, "--redis", redisAddr}}
	}
	var jobs []*Proc
	for _, part := range parts {
		job, err := Start(filepath.Join(binDir, "cpjob"), append(append(append([]string{"ysb"}, part...), "--window", "1s", "--lateness", "500ms"), jobArgs...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = job.Signal(syscall.SIGKILL) }()
		if !job.WaitForLine("cpjob ysb: reading", 30*time.Second) {
			t.Fatalf("cpjob did not start:\n%s", job.Stderr.String())
		}
		jobs = append(jobs, job)
	}
	recv, err := Start(filepath.Join(binDir, "dgrecv"), "--connect", out+"?group=cp", "--job-input", in+"?group=ysb", "--schema", "window", "--json", "--end-timeout", "60s")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = recv.Signal(syscall.SIGKILL) }()
	send, err := Start(filepath.Join(binDir, "dgsend"), "--connect", in, "--scenario", "ad-event", "--rate", rate, "--duration", duration, "--bucket", "100", "--late-threshold", "1ms", "--expect-filter", "event_type == view", "--expect-window", "1s", "--json")
	if err != nil {
		t.Fatal(err)
	}
	// a schedule not kept is dgsend's failure, and the run's figure; any
	// other failure ends the test
	if err := send.Wait(120 * time.Second); err != nil && !strings.Contains(send.Stdout.String(), `"schedule_kept": false`) {
		t.Fatalf("dgsend: %v\n%s\n%s", err, send.Stdout.String(), send.Stderr.String())
	}
	// the last window closes a window and a lateness after the last event
	time.Sleep(3 * time.Second)
	for _, job := range jobs {
		if err := job.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := job.Wait(30 * time.Second); err != nil {
			t.Fatalf("cpjob did not stop cleanly: %v\n%s", err, job.Stderr.String())
		}
	}
	if err := recv.Wait(90 * time.Second); err != nil {
		t.Fatalf("dgrecv: %v\n%s\n%s", err, recv.Stdout.String(), recv.Stderr.String())
	}
	var res struct {
		Complete bool   `json:"complete"`
		Received uint64 `json:"received_tuples"`
		Latency  struct {
			Count uint64 `json:"count"`
			P50   int64  `json:"p50_ns"`
			P99   int64  `json:"p99_ns"`
		} `json:"latency"`
		Backlog []struct {
			JobLag *int64 `json:"job_lag"`
		} `json:"backlog"`
		Windows []scenarios.WindowCount `json:"windows"`
	}
	if err := json.Unmarshal(recv.Stdout.Bytes(), &res); err != nil {
		t.Fatalf("dgrecv's JSON: %v\n%s", err, recv.Stdout.String())
	}
	var sent struct {
		Sent    uint64                  `json:"emitted_tuples"`
		Kept    bool                    `json:"schedule_kept"`
		Late    float64                 `json:"late_slot_fraction"`
		Views   uint64                  `json:"expected_filter_tuples"`
		Windows []scenarios.WindowCount `json:"expected_windows"`
	}
	if err := json.Unmarshal(send.Stdout.Bytes(), &sent); err != nil {
		t.Fatalf("dgsend's JSON: %v\n%s", err, send.Stdout.String())
	}
	var jobLags []int64
	for _, b := range res.Backlog {
		if b.JobLag != nil {
			jobLags = append(jobLags, *b.JobLag)
		}
	}
	return ysbRun{owed: windowMap(sent.Windows), consumed: windowMap(res.Windows), jobLags: jobLags, want: viewsIn(t, in), got: windowsIn(t, out), complete: res.Complete, received: res.Received, latencies: res.Latency.Count,
		p50: time.Duration(res.Latency.P50), p99: time.Duration(res.Latency.P99), sent: sent.Sent, scheduleKept: sent.Kept, lateFraction: sent.Late, expectedViews: sent.Views, jobCPU: procCPU(jobs[len(jobs)-1])}
}

var ysbBrokers = driver.NewRegistry(nats.Driver{}, redis.Driver{}, kafka.Driver{})

// drainTopic reads ep from its start in a group of the test's own until
// 2 s bring nothing, handing each message to f.
func drainTopic(t *testing.T, ep string, f func(msg []byte)) {
	t.Helper()
	e, err := driver.Parse(ep + "?group=verify")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ysbBrokers.NewConsumer(e)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for {
		msg, err := c.Next(2 * time.Second)
		if errors.Is(err, driver.ErrTimeout) {
			return
		}
		if err != nil {
			t.Fatalf("read %s: %v", ep, err)
		}
		f(msg)
	}
}

// viewsIn counts the views in the input topic by campaign and window of 1 s.
func viewsIn(t *testing.T, in string) map[ysbWindow]int64 {
	s, err := scenarios.Load("ad-event")
	if err != nil {
		t.Fatal(err)
	}
	table, err := ysb.Campaigns(s)
	if err != nil {
		t.Fatal(err)
	}
	want := map[ysbWindow]int64{}
	drainTopic(t, in, func(msg []byte) {
		err := scenarios.EachTuple(msg, scenarios.DecodeAdEvent, func(tp *scenarios.Tuple) {
			if string(tp.Ad.EventType) == "view" {
				want[ysbWindow{table[hex.EncodeToString(tp.Ad.AdID)], (tp.Ad.EventTimeMs/1000 + 1) * 1000}]++
			}
		})
		if err != nil {
			t.Fatalf("the input: %v", err)
		}
	})
	return want
}

// windowsIn reads the job's windows; a window written twice is an error.
func windowsIn(t *testing.T, out string) map[ysbWindow]int64 {
	got := map[ysbWindow]int64{}
	drainTopic(t, out, func(msg []byte) {
		err := scenarios.EachTuple(msg, scenarios.DecodeWindow, func(tp *scenarios.Tuple) {
			k := ysbWindow{string(tp.Window.Key), tp.Window.EndMs}
			if _, dup := got[k]; dup {
				t.Errorf("window %v written twice", k)
			}
			got[k] = tp.Window.Count
		})
		if err != nil {
			t.Fatalf("the output: %v", err)
		}
	})
	return got
}

func windowMap(ws []scenarios.WindowCount) map[ysbWindow]int64 {
	m := map[ysbWindow]int64{}
	for _, w := range ws {
		m[ysbWindow{w.Key, w.EndMs}] = int64(w.Count)
	}
	return m
}

func sumCounts(m map[ysbWindow]int64) (n int64) {
	for _, c := range m {
		n += c
	}
	return n
}

func firstWindowDifference(want, got map[ysbWindow]int64) string {
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			return fmt.Sprintf("%v: counted %d, want %d", k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			return fmt.Sprintf("%v: counted %d, not in the input", k, g)
		}
	}
	return "none"
}

// TestYSBServesItsOperatorsAccounting: cpjob ysb --metrics-addr serves its
// own operators' accounting (the join and the window, each busy for part
// of the run, each having processed batches), and --profile logs every
// view's id at each operator's point: exactly the views dgsend counted.
func TestYSBServesItsOperatorsAccounting(t *testing.T) {
	natsAddr, _ := realserver.NATS(t)
	redisAddr, _ := realserver.Redis(t)
	in, out := "jetstream://"+natsAddr+"/acct.in", "jetstream://"+natsAddr+"/acct.out"
	dir := t.TempDir()
	handlers := filepath.Join(dir, "handlers.yaml")
	if err := os.WriteFile(handlers, []byte(`default: {handler: buffered, path: "{name}.log"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	job, err := Start(filepath.Join(binDir, "cpjob"), "ysb", "--input", in+"?group=ysb", "--output", out, "--redis", redisAddr, "--window", "1s", "--lateness", "500ms",
		"--metrics-addr", "127.0.0.1:0", "--profile", handlers, "--profile-dir", filepath.Join(dir, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = job.Signal(syscall.SIGKILL) }()
	if !job.WaitForLine("cpjob ysb: reading", 30*time.Second) {
		t.Fatalf("cpjob did not start:\n%s", job.Stderr.String())
	}
	addr := regexp.MustCompile(`accounting on http://([^/]+)/metrics`).FindStringSubmatch(job.Stderr.String())
	if addr == nil {
		t.Fatalf("cpjob did not say where its accounting is:\n%s", job.Stderr.String())
	}
	send, err := Start(filepath.Join(binDir, "dgsend"), "--connect", in, "--scenario", "ad-event", "--rate", "20k", "--duration", "1s", "--bucket", "100", "--expect-filter", "event_type == view", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if err := send.Wait(60 * time.Second); err != nil {
		t.Fatalf("dgsend: %v\n%s", err, send.Stderr.String())
	}
	var sent struct {
		Views uint64 `json:"expected_filter_tuples"`
	}
	if err := json.Unmarshal(send.Stdout.Bytes(), &sent); err != nil || sent.Views == 0 {
		t.Fatalf("dgsend's JSON: %v\n%s", err, send.Stdout.String())
	}
	time.Sleep(3 * time.Second) // the last window closes a window and a lateness after its last event
	resp, err := http.Get("http://" + addr[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, op := range []string{ysb.OpFilter, ysb.OpJoin, ysb.OpWindow} {
		busy := regexp.MustCompile(`cp_stage_seconds_total\{stage="` + op + `",state="busy"\} ([0-9.e+-]+)`).FindSubmatch(body)
		items := regexp.MustCompile(`cp_stage_items_total\{stage="` + op + `"\} ([0-9.e+-]+)`).FindSubmatch(body)
		if busy == nil || items == nil || string(busy[1]) == "0" || string(items[1]) == "0" {
			t.Errorf("operator %s: busy %q, items %q in:\n%s", op, busy, items, body)
		}
	}
	if err := job.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(30 * time.Second); err != nil {
		t.Fatalf("cpjob did not stop cleanly: %v\n%s", err, job.Stderr.String())
	}
	for _, op := range []string{ysb.OpJoin, ysb.OpWindow} {
		if n := logRecords(t, filepath.Join(dir, "logs", "op."+op+".log")); n != sent.Views {
			t.Errorf("operator %s logged %d tuple ids, dgsend sent %d views", op, n, sent.Views)
		}
	}
}

// logRecords counts a profiler log's records.
func logRecords(t *testing.T, path string) uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n uint64
	if _, err := profiler.ReadBlocks(f, func(recs []profiler.Record) error { n += uint64(len(recs)); return nil }); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n
}
