package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/sweep"
	"github.com/cloudprofiler-go/cp/tsc"
)

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func receiverAgent(t *testing.T, token string) (*Agent, *httptest.Server) {
	t.Helper()
	a, err := New(Options{Role: sweep.RoleReceiver, Token: token, Clock: tsc.NewClockHz(2e9),
		Endpoints: []string{fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t))}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() { a.Stop(); srv.Close() })
	return a, srv
}

func call(t *testing.T, srv *httptest.Server, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, bytes.NewBufferString(body))
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
		for _, path := range []string{sweep.PathInfo, sweep.PathTrial} {
			code, body := call(t, srv, http.MethodGet, path, tc.token, "")
			if code != tc.want {
				t.Errorf("GET %s with token %q: %d %v, want %d", path, tc.token, code, body, tc.want)
			}
		}
		if code, _ := call(t, srv, http.MethodPost, sweep.PathStop, tc.token, ""); code != tc.want {
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
		{http.MethodPost, sweep.PathTrial, "{not json", http.StatusBadRequest, "bad trial configuration"},
		{http.MethodPost, sweep.PathTrial, `{"schema":"synthetic","expect_streams":1,"surprise":1}`, http.StatusBadRequest, "unknown field"},
		{http.MethodPost, sweep.PathTrial, `{"schema":"xml","expect_streams":1}`, http.StatusBadRequest, "unknown schema"},
		{http.MethodGet, "/v1/nothing", "", http.StatusNotFound, "the API is"},
		{http.MethodDelete, sweep.PathTrial, "", http.StatusNotFound, ""},
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
	if code, body := call(t, srv, http.MethodPost, sweep.PathTrial, "", cfg); code != http.StatusAccepted || body["state"] != sweep.StateRunning {
		t.Fatalf("start: %d %v", code, body)
	}
	if code, body := call(t, srv, http.MethodPost, sweep.PathTrial, "", cfg); code != http.StatusConflict || !strings.Contains(fmt.Sprint(body["error"]), "stop it first") {
		t.Fatalf("second start while running: %d %v", code, body)
	}
	call(t, srv, http.MethodPost, sweep.PathStop, "", "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := call(t, srv, http.MethodGet, sweep.PathTrial, "", "")
		if body["state"] == sweep.StateDone {
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
	if code, body := call(t, srv, http.MethodPost, sweep.PathTrial, "", cfg); code != http.StatusAccepted {
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
		body := fmt.Sprintf(`{"schema":"synthetic","expect_streams":1,"profile":"default: {handler: buffered, path: '%s'}"}`, path)
		code, reply := call(t, srv, http.MethodPost, sweep.PathTrial, "", body)
		if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(reply["error"]), "relative") {
			t.Errorf("path %q: %d %v", path, code, reply)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("files written outside: %v", entries)
	}
}
