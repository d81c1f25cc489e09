package agent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/sweep/agent"
	"github.com/cloudprofiler-go/cp/sweep/agent/recvagent"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/tsc/probing/probeapi"
)

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// serveAgent serves a (and clock, if set) on a free loopback port through
// the agents' one server constructor.
func serveAgent(t *testing.T, a *agent.Agent, clock *probeapi.Client) *httpapi.Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := agent.Serve(ln, a, clock)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func receiverAgent(t *testing.T, token string) (*agent.Agent, *httpapi.Server) {
	t.Helper()
	a, err := agent.New(agent.Options{Role: recvagent.Role{}, Token: token, Clock: tsc.NewClockHz(2e9),
		Endpoints: []string{fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t))}})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveAgent(t, a, nil)
	t.Cleanup(func() { a.Stop(); srv.Close() })
	return a, srv
}

func call(t *testing.T, srv *httpapi.Server, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL()+path, bytes.NewBufferString(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestTokenIsRequiredWhenSet(t *testing.T) {
	_, srv := receiverAgent(t, "s3cret-s3cret-s3cret")
	for _, tc := range []struct {
		token string
		want  int
	}{{"", http.StatusUnauthorized}, {"wrong", http.StatusUnauthorized}, {"s3cret-s3cret-s3cret", http.StatusOK}} {
		for _, path := range []string{protocol.PathInfo, protocol.PathTrial, protocol.PathActivity} {
			code, body := call(t, srv, http.MethodGet, path, tc.token, "")
			if code != tc.want {
				t.Errorf("GET %s with token %q: %d %v, want %d", path, tc.token, code, body, tc.want)
			}
		}
		if code, _ := call(t, srv, http.MethodPost, protocol.PathStop, tc.token, ""); code != tc.want {
			t.Errorf("POST stop with token %q: %d, want %d", tc.token, code, tc.want)
		}
	}
}

func TestControlRequestsAreValidated(t *testing.T) {
	_, srv := receiverAgent(t, "")
	for _, tc := range []struct {
		method, path, body string
		want               int
		msg                string
	}{
		{http.MethodPost, protocol.PathTrial, "{not json", http.StatusBadRequest, "bad trial configuration"},
		{http.MethodPost, protocol.PathTrial, `{"schema":"synthetic","expect_streams":1,"surprise":1}`, http.StatusBadRequest, "unknown field"},
		{http.MethodPost, protocol.PathTrial, `{"schema":"xml","expect_streams":1}`, http.StatusBadRequest, "unknown schema"},
		{http.MethodGet, "/v1/nothing", "", http.StatusNotFound, "the API is"},
		{http.MethodDelete, protocol.PathTrial, "", http.StatusNotFound, ""},
	} {
		code, body := call(t, srv, tc.method, tc.path, "", tc.body)
		if code != tc.want || (tc.msg != "" && !strings.Contains(fmt.Sprint(body["error"]), tc.msg)) {
			t.Errorf("%s %s %q: %d %v, want %d %q", tc.method, tc.path, tc.body, code, body, tc.want, tc.msg)
		}
	}
}

func TestOneTrialAtATimeAndStop(t *testing.T) {
	_, srv := receiverAgent(t, "")
	cfg := `{"schema":"synthetic","expect_streams":1,"end_timeout_ns":60000000000}`
	if code, body := call(t, srv, http.MethodPost, protocol.PathTrial, "", cfg); code != http.StatusAccepted || body["state"] != protocol.StateRunning {
		t.Fatalf("start: %d %v", code, body)
	}
	if code, body := call(t, srv, http.MethodPost, protocol.PathTrial, "", cfg); code != http.StatusConflict || !strings.Contains(fmt.Sprint(body["error"]), "stop it first") {
		t.Fatalf("second start while running: %d %v", code, body)
	}
	call(t, srv, http.MethodPost, protocol.PathStop, "", "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := call(t, srv, http.MethodGet, protocol.PathTrial, "", "")
		if body["state"] == protocol.StateDone {
			rec, _ := body["receiver"].(map[string]any)
			if rec == nil || rec["reason"] != "stopped" || rec["complete"] != false {
				t.Fatalf("stopped trial's result: %v", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("trial did not stop: %v", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The endpoint is free again: a new trial can bind it.
	if code, body := call(t, srv, http.MethodPost, protocol.PathTrial, "", cfg); code != http.StatusAccepted {
		t.Fatalf("restart: %d %v", code, body)
	}
}

// TestProfilePathsStayInTheAgentsDirectory: a trial's handler configuration
// may name files only inside the agent's own directory; anything else is
// refused before the trial starts, and nothing is written outside.
func TestProfilePathsStayInTheAgentsDirectory(t *testing.T) {
	outside := t.TempDir()
	_, srv := receiverAgent(t, "")
	for _, path := range []string{outside + "/x.log", "../../x.log", "a/../../x.log"} {
		body := fmt.Sprintf(`{"schema":"synthetic","expect_streams":1,"profile":{"default":{"handler":"buffered","path":%q}}}`, path)
		code, reply := call(t, srv, http.MethodPost, protocol.PathTrial, "", body)
		if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(reply["error"]), "relative") {
			t.Errorf("path %q: %d %v", path, code, reply)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("files written outside: %v", entries)
	}
}

// A running trial's stage state changes are served from cursors: each
// change once, in order, with the trial and the agent's clock; bad
// cursors are a 400.
func TestActivityIsServedFromCursors(t *testing.T) {
	_, srv := receiverAgent(t, "")
	get := func(query string) (int, protocol.ActivityReply) {
		t.Helper()
		resp, err := http.Get(srv.URL() + protocol.PathActivity + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r protocol.ActivityReply
		_ = json.NewDecoder(resp.Body).Decode(&r)
		return resp.StatusCode, r
	}
	if code, r := get(""); code != http.StatusOK || r.Trial != 0 || r.Running || len(r.Stages) != 0 {
		t.Fatalf("before any trial: %d %+v", code, r)
	}
	cfg := `{"schema":"synthetic","expect_streams":1,"end_timeout_ns":60000000000,"stage_period_ns":100000000}`
	if code, body := call(t, srv, http.MethodPost, protocol.PathTrial, "", cfg); code != http.StatusAccepted {
		t.Fatalf("start: %d %v", code, body)
	}
	var r protocol.ActivityReply
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, r = get("")
		// Both the lane and the consumer have started (each thread starts
		// its own accounting: one may be a moment behind the other).
		if len(r.Stages) >= 2 && len(r.Stages[0].Changes) > 0 && len(r.Stages[1].Changes) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	byName := map[string]protocol.StageActivity{}
	for _, st := range r.Stages {
		byName[st.Stage] = st
	}
	lane, consumer := byName["lane0"], byName["consumer"]
	if r.Trial != 1 || !r.Running || r.NowNs <= 0 || lane.Kind != "lane" || consumer.Kind != "consumer" || len(lane.Changes) == 0 || len(consumer.Changes) == 0 {
		t.Fatalf("a running trial's activity: %+v", r)
	}
	if c := lane.Changes[0]; c[0] > r.NowNs || c[0] < r.NowNs-int64(time.Minute) || c[1] != 0 || lane.Next != uint64(len(lane.Changes)) {
		t.Fatalf("lane0's first change %v (now %d, next %d): want waiting, before now", c, r.NowNs, lane.Next)
	}
	q := fmt.Sprintf("?since=lane0:%d,consumer:%d", lane.Next, consumer.Next)
	if _, again := get(q); len(again.Stages) != 2 || len(again.Stages[0].Changes)+len(again.Stages[1].Changes) != 0 {
		t.Fatalf("from the cursors of an idle receiver: %+v, want nothing new", again)
	}
	for _, bad := range []string{"?since=lane0", "?since=lane0:x", "?since=:3", "?since=" + strings.Repeat("a:1,", 65) + "a:1"} {
		if code, _ := get(bad); code != http.StatusBadRequest {
			t.Errorf("GET %s%s: %d, want 400", protocol.PathActivity, bad, code)
		}
	}
	call(t, srv, http.MethodPost, protocol.PathStop, "", "")
	waitState(t, srv, protocol.StateDone)
	if _, r := get(""); r.Running || r.Trial != 1 {
		t.Fatalf("after the trial: %+v, want trial 1 not running", r)
	}
}
