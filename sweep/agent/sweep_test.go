package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/analysis/report"
	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/sweep"
	"github.com/cloudprofiler-go/cp/sweep/agent"
	"github.com/cloudprofiler-go/cp/sweep/agent/recvagent"
	"github.com/cloudprofiler-go/cp/sweep/agent/sendagent"
	"github.com/cloudprofiler-go/cp/sweep/remote"
	"github.com/cloudprofiler-go/cp/sweep/search"
	"github.com/cloudprofiler-go/cp/sweep/verdict"
	"github.com/cloudprofiler-go/cp/trialcfg"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/tsc/probing"
	"github.com/cloudprofiler-go/cp/tsc/probing/probeapi"
)

const sessionToken = "in-process-agents-token"

// inProcessAgent serves a real agent (real sender or receiver on
// loopback) and its TSC probe API from this test process, as
// `dgsend --agent` / `dgrecv --agent` would.
func inProcessAgent(t *testing.T, role agent.Role, clock *tsc.Clock) (*agent.Agent, *remote.Agent) {
	t.Helper()
	opts := agent.Options{Role: role, Token: sessionToken, Clock: clock, Logf: t.Logf}
	if role.Name() == protocol.RoleReceiver {
		opts.Endpoints = []string{fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t))}
	}
	a, err := agent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tsc.NewResponder("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	probe := &probeapi.Client{Responder: resp, Hz: clock.Hz}
	srv := serveAgent(t, a, probe)
	t.Cleanup(func() {
		srv.Close()
		resp.Close()
		if err := a.Close(); err != nil {
			t.Errorf("agent close: %v", err)
		}
	})
	return a, remote.New(srv.Addr(), sessionToken)
}

// TestSweepWithInProcessAgents runs a whole sweep (clock probes before
// and after, a linear search, the profiled trial and its collection)
// against real agents in this process, and checks what the run directory
// and the report say.
func TestSweepWithInProcessAgents(t *testing.T) {
	clock, err := tsc.NewClock(50 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	_, rc := inProcessAgent(t, recvagent.Role{}, clock)
	_, sc := inProcessAgent(t, sendagent.Role{}, clock)
	plan := sweep.TrialPlan{
		Receiver: trialcfg.Receiver{Schema: "synthetic", EndTimeout: 3 * time.Second},
		Sender:   trialcfg.Sender{Threads: 1, BucketSize: 10, Overflow: "block", Idle: "auto"},
		Duration: 400 * time.Millisecond,
		Warmup:   100 * time.Millisecond,
		Scenario: "synthetic-100",
		Rules:    verdict.DefaultRules,
	}
	// This test is of the session's mechanics, not of this machine's
	// timing: a busy host must not fail these low rates on lateness or
	// queueing delay (both bounded by the floor).
	plan.Rules.LatenessFloor = time.Second
	if err := plan.Resolve(); err != nil {
		t.Fatal(err)
	}
	search := sweep.Search{Method: "linear", Linear: search.LinearPlan{From: 2000, To: 4000, Step: 2000}}
	profileYAML := `default: {handler: buffered, path: "{name}.log"}`
	profile, err := profiler.ParseHandlers([]byte(profileYAML), "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := sweep.CheckPlan(plan, search, 1, "", profile, 0.5); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	s := &sweep.Sweep{Plot: report.WriteSweepPlot, Ctrl: &sweep.Controller{Plan: plan, Senders: []*remote.Agent{sc}, Receivers: []*remote.Agent{rc}},
		Search: search, Name: "inproc", Results: t.TempDir(), Log: &log, Verbose: true, Clock: true, ClockCount: 20,
		Profile: profile, ProfileYAML: profileYAML, ProfileAt: 0.5}
	report, err := s.Execute(context.Background())
	if err != nil {
		t.Fatalf("sweep: %v\n%s", err, log.String())
	}
	res := report.Result
	// Two low rates any machine sustains: both pass, nothing failed, and
	// the profiled trial ran at half of the highest pass.
	if res.LastPass != 4000 || res.FirstFail != 0 || len(res.Trials) != 3 {
		t.Fatalf("result %+v\n%s", res, log.String())
	}
	// Every trial carries each agent's host accounting (on Linux), and the
	// sweep says it under the trial.
	if runtime.GOOS == "linux" {
		for _, tr := range res.Trials {
			nodes := map[string]bool{}
			for _, h := range tr.Hosts {
				nodes[h.Node] = h.Process > 0 && h.Seconds > 0 && len(h.Threads) > 0
			}
			if !nodes["receiver0"] || !nodes["sender0"] {
				t.Errorf("trial %d: host accounting %+v", tr.N, tr.Hosts)
			}
		}
		if !strings.Contains(log.String(), "host: ") || !strings.Contains(log.String(), "; receiver0 ") {
			t.Errorf("no host line in the sweep's output:\n%s", log.String())
		}
	}
	if p := res.Trials[2]; p.Purpose != "profile" || p.Rate != 2000 || !p.Verdict.Pass {
		t.Errorf("profiled trial %+v", p)
	}
	// The profiled trial says what the profiler's own threads used; the
	// unprofiled trials have none.
	if runtime.GOOS == "linux" {
		for _, tr := range res.Trials {
			if _, _, ok := tr.ProfilerCost(); ok != (tr.Purpose == "profile") {
				t.Errorf("trial %d (%s): profiler threads accounted: %v", tr.N, tr.Purpose, ok)
			}
		}
		// Both agents run on this machine: the relation's line says that
		// the analysis reads one clock between them.
		if !strings.Contains(log.String(), "(one machine with receiver0: one clock") {
			t.Errorf("the TSC line does not say the agents share a clock:\n%s", log.String())
		}
		if !strings.Contains(log.String(), "| the profiler's threads ") {
			t.Errorf("the profiled trial's line does not say what the profiler cost:\n%s", log.String())
		}
	}
	for _, tr := range res.Trials {
		if tr.Achieved < 0.9*tr.Rate || tr.Achieved > 1.1*tr.Rate {
			t.Errorf("trial %d at %.0f achieved %.0f", tr.N, tr.Rate, tr.Achieved)
		}
	}
	if report.ProfileSkipped != "" || report.Invalid != nil || report.Interrupted {
		t.Errorf("report %+v", report)
	}
	dir := report.Dir
	for _, f := range []string{"config.json", "summary.json", "trials.json", "trials.csv", "sweep.svg", "relation.json",
		"trials/001.json", "trials/002.json", "trials/003.json"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("run directory: %s: %v", f, err)
		}
	}
	// Every agent's logs were collected (one log per standard point of
	// its role, plus the counters), and the agents removed their copy.
	for node, want := range map[string][]string{"sender0": {"emit.0.log", "counters.json"}, "receiver0": {"receive.0.log", "deserialized.0.log", "consumed.log", "counters.json"}} {
		for _, f := range want {
			if st, err := os.Stat(filepath.Join(dir, "profiles", node, f)); err != nil || st.Size() == 0 {
				t.Errorf("profile of %s: %s: %v", node, f, err)
			}
		}
	}
	for _, c := range []*remote.Agent{rc, sc} { // fetched once: removed
		var se *remote.StatusError
		if _, err := c.FetchProfile(context.Background(), t.TempDir()); !errors.As(err, &se) || se.Code != http.StatusNotFound {
			t.Errorf("agent %s still serves its profile after the fetch: %v", c.Addr, err)
		}
	}
	var cfg map[string]any
	if b, err := os.ReadFile(filepath.Join(dir, "config.json")); err != nil || json.Unmarshal(b, &cfg) != nil {
		t.Fatalf("config.json: %v", err)
	}
	if cfg["profile"] != profileYAML || cfg["profile_at"] != 0.5 || cfg["clock"] != true {
		t.Errorf("config.json records %v %v %v", cfg["profile"], cfg["profile_at"], cfg["clock"])
	}
	var rel probing.RelationFile
	if b, err := os.ReadFile(filepath.Join(dir, "relation.json")); err != nil || json.Unmarshal(b, &rel) != nil {
		t.Fatalf("relation.json: %v", err)
	}
	if len(rel.Relations) != 1 || rel.Relations[0].Node != "sender0" {
		t.Errorf("relation.json: %+v", rel.Relations)
	}
	var text bytes.Buffer
	sweep.WriteText(&text, report)
	for _, want := range []string{"max sustainable throughput: at least 4.000 k/s", "profile", "results: " + dir} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("report text lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{"probing the agents' TSCs", "profiled trial at", "collected", "TSC sender0 -> receiver0"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, log.String())
		}
	}
}

// TestProfileIsServedOnceAsATar: the profile endpoint answers 404 before a
// profiled trial, then the archive once, then 404 again (the files are
// removed after the fetch).
func TestProfileIsServedOnceAsATar(t *testing.T) {
	_, srv := receiverAgent(t, "")
	if code, body := call(t, srv, http.MethodGet, protocol.PathProfile, "", ""); code != http.StatusNotFound || !strings.Contains(fmt.Sprint(body["error"]), "no profiled trial") {
		t.Fatalf("before any trial: %d %v", code, body)
	}
	cfg := `{"schema":"synthetic","expect_streams":1,"end_timeout_ns":60000000000,"profile":{"default":{"handler":"buffered","path":"{name}.log"}}}`
	if code, body := call(t, srv, http.MethodPost, protocol.PathTrial, "", cfg); code != http.StatusAccepted {
		t.Fatalf("start: %d %v", code, body)
	}
	call(t, srv, http.MethodPost, protocol.PathStop, "", "")
	waitState(t, srv, protocol.StateDone)
	c := remote.New(srv.Addr(), "")
	out := t.TempDir()
	files, err := c.FetchProfile(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	if !contains(files, filepath.Join(out, "counters.json")) || !contains(files, filepath.Join(out, "receive.0.log")) {
		t.Errorf("fetched %v", files)
	}
	var se *remote.StatusError
	if _, err := c.FetchProfile(context.Background(), t.TempDir()); !errors.As(err, &se) || se.Code != http.StatusNotFound {
		t.Errorf("second fetch: %v", err)
	}
}

// TestBadProfileAndFailedStart: a handler configuration that does not
// parse, or a trial whose sender cannot start, leaves the agent idle-able
// (failed, not running) with the reason in its status.
func TestBadProfileAndFailedStart(t *testing.T) {
	_, srv := receiverAgent(t, "")
	code, body := call(t, srv, http.MethodPost, protocol.PathTrial, "", `{"schema":"synthetic","expect_streams":1,"profile":{"default":{"handler":"nosuch"}}}`)
	if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(body["error"]), "nosuch") {
		t.Fatalf("unknown handler: %d %v", code, body)
	}
	code, body = call(t, srv, http.MethodPost, protocol.PathTrial, "", `{"schema":"synthetic","expect_streams":1,"profile":"default: {handler: buffered}"}`)
	if code != http.StatusBadRequest {
		t.Fatalf("a profile as text, not a typed configuration: %d %v", code, body)
	}

	a, err := agent.New(agent.Options{Role: sendagent.Role{}, Clock: tsc.NewClockHz(2e9)})
	if err != nil {
		t.Fatal(err)
	}
	ssrv := serveAgent(t, a, nil)
	defer ssrv.Close()
	defer a.Close()
	// A valid trial whose transport ZeroMQ does not know: the start fails,
	// the status says why, and the agent takes the next trial.
	plan := sweep.TrialPlan{Scenario: "synthetic-100"}
	if err := plan.Resolve(); err != nil {
		t.Fatal(err)
	}
	trial := protocol.SenderTrial{
		Sender:    trialcfg.Sender{Threads: 1, BucketSize: 10, Overflow: "block", Idle: "auto"},
		Rate:      1000,
		Duration:  100 * time.Millisecond,
		Scenario:  *plan.ScenarioSpec,
		Endpoints: []string{"nosuch://x"},
	}
	b, _ := json.Marshal(trial)
	code, body = call(t, ssrv, http.MethodPost, protocol.PathTrial, "", string(b))
	if code == http.StatusAccepted {
		waitState(t, ssrv, protocol.StateFailed)
	} else if code != http.StatusBadRequest || a.Status().State != protocol.StateFailed {
		t.Fatalf("unreachable endpoint: %d %v, status %+v", code, body, a.Status())
	}
	if a.Status().Error == "" {
		t.Errorf("failed trial without a reason: %+v", a.Status())
	}
}

func waitState(t *testing.T, srv *httpapi.Server, want string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := call(t, srv, http.MethodGet, protocol.PathTrial, "", "")
		if body["state"] == want {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("state %v, want %s", body, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestServeExposesTheRunningTrialsMetrics: an agent served with its
// metrics shows the running trial's series on /metrics, and refuses to
// serve a non-loopback address without a token.
func TestServeExposesTheRunningTrialsMetrics(t *testing.T) {
	a, err := agent.New(agent.Options{Role: recvagent.Role{}, Clock: tsc.NewClockHz(2e9),
		Endpoints: []string{fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t))}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	pub, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if _, err := agent.Serve(pub, a, nil); err == nil || !strings.Contains(err.Error(), "--token-file") {
		t.Fatalf("non-loopback without a token: %v", err)
	}
	srv := serveAgent(t, a, nil)
	defer srv.Close()
	bound := srv.Addr()
	metrics := func() string {
		resp, err := http.Get("http://" + bound + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return b.String()
	}
	if m := metrics(); strings.Contains(m, "cp_receiver_consumed_tuples_total") {
		t.Fatalf("metrics before any trial:\n%s", m)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+bound+protocol.PathTrial, strings.NewReader(`{"schema":"synthetic","expect_streams":1,"end_timeout_ns":60000000000}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("start: %d", resp.StatusCode)
	}
	if m := metrics(); !strings.Contains(m, "\ncp_receiver_consumed_tuples_total 0\n") {
		t.Errorf("running trial's metrics missing:\n%s", m)
	}
	a.Stop()
}
