package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/rundir"
	sendtally "github.com/cloudprofiler-go/cp/sender/tally"
	"github.com/cloudprofiler-go/cp/sweep/rundiag"
)

// TestDiagnosisFindsInjectedStalls injects one stall in each of the three
// kinds of stage, apart in time, at a light load: each must be confirmed
// on its own stage, with a length close to the injected one, logged live,
// and no other stage may be confirmed stalled.
func TestDiagnosisFindsInjectedStalls(t *testing.T) {
	pr := &Pair{Bin: binDir,
		// Receiver times count from dgrecv's start, the thread's from the
		// sender's first slot, d later (0.1-1.1 s seen, more on a loaded
		// host): the thread's stall [d+2, d+2.8] must end before the lane's
		// [4.3, 5.1] begins (it starved the lane, hiding its stall, when it
		// was at d+2.5 and d was 1.1 s), and the sender, at it until d+5.5,
		// must outlast the lane's.
		RecvArgs: []string{"--stall", "consumer@1s+800ms", "--stall", "lane0@4300ms+800ms", "--expect-streams", "1"},
		SendArgs: []string{"--rate", "300k", "--bucket", "100", "--duration", "5500ms", "--idle", "sleep", "--stall", "thread0@2000ms+800ms"}}
	pr.Run(t)
	if pr.SendExit != 0 || pr.RecvExit != 0 {
		t.Fatalf("exit codes send=%d recv=%d\n%s\n%s", pr.SendExit, pr.RecvExit, pr.SendProc.Stderr.String(), pr.RecvProc.Stderr.String())
	}
	d, err := rundiag.Outcome(&rundir.Outcome{Senders: []*sendtally.Result{&pr.Send}, Receivers: []*tally.Result{&pr.Recv}}, false, nil, diagnose.Options{})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]float64{}
	for _, s := range d.Stalls {
		if _, dup := found[s.Stage]; dup {
			t.Errorf("%s confirmed stalled twice: %+v", s.Stage, d.Stalls)
		}
		found[s.Stage] = s.Seconds
	}
	for _, stage := range []string{"consumer", "lane0", "thread0"} {
		// 800 ms: at least 4 whole 100 ms snapshots without progress, at
		// most the stall and a snapshot either side.
		if secs, ok := found[stage]; !ok || secs < 0.4 || secs > 1.0 {
			t.Errorf("%s: confirmed stall of %vs, want 0.4..1.0 (stalls %+v)", stage, secs, d.Stalls)
		}
	}
	if len(found) != 3 {
		t.Errorf("stalls confirmed on %v, want consumer, lane0 and thread0 only", found)
	}
	if !strings.Contains(pr.RecvProc.Stderr.String(), "consumer STALLED") || !strings.Contains(pr.RecvProc.Stderr.String(), "lane0 stall ended") ||
		!strings.Contains(pr.SendProc.Stderr.String(), "thread0 STALLED") {
		t.Errorf("live logs:\n%s\n%s", pr.RecvProc.Stderr.String(), pr.SendProc.Stderr.String())
	}
	// The same from the command line, on the results written as files.
	dir := t.TempDir()
	for name, v := range map[string]any{"s.json": pr.Send, "r.json": pr.Recv} {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(filepath.Join(binDir, "cpsweep"), "diagnose", "-o", filepath.Join(dir, "d.json"),
		filepath.Join(dir, "s.json"), filepath.Join(dir, "r.json")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "confirmed stalls: consumer") || !strings.Contains(string(out), "thread0") {
		t.Fatalf("cpsweep diagnose: %v\n%s", err, out)
	}
	var written diagnose.Diagnosis
	b, _ := os.ReadFile(filepath.Join(dir, "d.json"))
	if err := json.Unmarshal(b, &written); err != nil || len(written.Stalls) != len(d.Stalls) || len(written.Snapshots) == 0 {
		t.Fatalf("diagnosis file: %v, %d stalls", err, len(written.Stalls))
	}
	if out, err := exec.Command(filepath.Join(binDir, "cpsweep"), "diagnose", filepath.Join(dir, "d.json")).CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "neither a dgsend nor a dgrecv result") {
		t.Fatalf("a diagnosis file as input: %v\n%s", err, out)
	}
}

// TestStageMetricsDuringARun scrapes the stage accounting while data
// flows: time in every state, items, queues, and one label per stage.
func TestStageMetricsDuringARun(t *testing.T) {
	base, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	ep := fmt.Sprintf("tcp://127.0.0.1:%d", base)
	rp, err := Start(filepath.Join(binDir, "dgrecv"), "--bind", ep, "--json", "--metrics-addr", "127.0.0.1:0", "--stage-period", "50ms")
	if err != nil {
		t.Fatal(err)
	}
	rm, err := rp.MetricsAddr(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := Start(filepath.Join(binDir, "dgsend"), "--connect", ep, "--json", "--metrics-addr", "", "--rate", "200k", "--duration", "2s", "--bucket", "20", "--idle", "sleep")
	if err != nil {
		t.Fatal(err)
	}
	waitMetric(t, rm, "cp_stage_items_total", 10*time.Second, func(v float64) bool { return v > 1000 })
	time.Sleep(200 * time.Millisecond)
	resp, err := http.Get("http://" + rm + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{`cp_stage_seconds_total{stage="consumer",state="working"}`, `cp_stage_seconds_total{stage="lane0",state="decoding"}`,
		`cp_stage_seconds_total{stage="lane0",state="waiting"}`, `cp_stage_items_total{stage="stream0"}`, `cp_stage_queue{stage="consumer"}`,
		`cp_stage_label{label="HEALTHY",stage="consumer"}`, `cp_stage_label{label="STALLED",stage="lane0"}`} {
		if !strings.Contains(text, want) {
			t.Errorf("no %s in the metrics", want)
		}
	}
	m := scrape(t, rm)
	if m["cp_stage_label"] != 2 { // lane0 and consumer: one label each is 1
		t.Errorf("cp_stage_label sums to %v over lane0 and consumer, want 2", m["cp_stage_label"])
	}
	if err := sp.Wait(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := rp.Wait(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	var r tally.Result
	mustJSON(t, rp.Stdout.Bytes(), &r)
	if r.StageSeries == nil || r.StageSeries.PeriodNs != 50e6 || len(r.Stages) != 3 {
		t.Fatalf("result: series %v, %d stage totals", r.StageSeries != nil, len(r.Stages))
	}
	for _, st := range r.Stages {
		if st.Name == "consumer" && st.Items != r.Lanes[0].Messages {
			t.Errorf("consumer items %d, lane messages %d", st.Items, r.Lanes[0].Messages)
		}
	}
}
