package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/protocol"
)

// The attacks of a hostile local user on the agents' control API: every
// one must be refused with the documented status, no reply may quote a
// file's contents, and the agent must stay alive, small and usable.

const hostileToken = "hostile-test-token-0123456789"

// secretMarker is the content of a file the attacks name: no reply may
// ever contain it.
const secretMarker = "TOP-SECRET-MARKER-7f3a9c"

type hostileAgent struct {
	proc *Proc
	addr string
}

func startHostileAgent(t *testing.T, bin string, extra ...string) *hostileAgent {
	t.Helper()
	args := append([]string{"--agent", "--metrics-addr", "127.0.0.1:0", "--token", hostileToken, "--calibrate", "30ms"}, extra...)
	p, err := Start(filepath.Join(binDir, bin), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Signal(syscall.SIGKILL); _ = p.Wait(5 * time.Second) })
	return &hostileAgent{proc: p, addr: agentAddr(t, p)}
}

func (a *hostileAgent) call(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+a.addr+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+hostileToken)
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v (agent dead?)\n%s", method, path, err, a.proc.Stderr.String())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// rssMB is the agent's resident memory.
func (a *hostileAgent) rssMB(t *testing.T) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", a.proc.Cmd.Process.Pid))
	if err != nil {
		t.Fatalf("agent gone: %v\n%s", err, a.proc.Stderr.String())
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// waitState polls the trial until it reaches a final state.
func (a *hostileAgent) waitFinished(t *testing.T, within time.Duration) protocol.TrialStatus {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		_, body := a.call(t, http.MethodGet, protocol.PathTrial, "")
		var st protocol.TrialStatus
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatalf("status: %v: %s", err, body)
		}
		if st.Finished() || st.State == protocol.StateIdle {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("trial still %s after %v", st.State, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func validSenderTrial(endpoint string) map[string]any {
	return map[string]any{"endpoints": []string{endpoint}, "threads": 1, "rate": 1000, "duration_ns": int64(2 * time.Second),
		"bucket_size": 1, "scenario": map[string]any{"name": "s", "schema": "synthetic", "seed": 1, "size": 100},
		"shape": map[string]any{"kind": "constant"}, "overflow": "block", "idle": "sleep"}
}

// handlersAt is a trial's typed handler configuration: every channel to
// handler, logging at path.
func handlersAt(handler, path string) map[string]any {
	return map[string]any{"default": map[string]any{"handler": handler, "path": path}}
}

func withField(m map[string]any, key string, v any) string {
	c := map[string]any{}
	for k, x := range m {
		c[k] = x
	}
	c[key] = v
	b, _ := json.Marshal(c)
	return string(b)
}

func TestHostileSenderAgent(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(secretMarker+"\nroot:x:0:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startHostileAgent(t, "dgsend")
	base := validSenderTrial(fmt.Sprintf("tcp://127.0.0.1:%d", mustPort(t)))
	big := `{"endpoints":["tcp://127.0.0.1:1"],"profile":"` + strings.Repeat("x", 5<<20) + `"}`
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"scenario as a path", withField(base, "scenario", secret), 400},
		{"scenario as /dev/zero", withField(base, "scenario", "/dev/zero"), 400},
		{"replay shape naming a file", withField(base, "shape", "replay:"+secret), 400},
		{"replay shape struct naming a file", withField(base, "shape", map[string]any{"kind": "replay", "source": secret}), 400},
		{"huge scenario", withField(base, "scenario", map[string]any{"schema": "synthetic", "size": 16 << 20, "distinct": 1 << 20}), 400},
		{"bucket of 16 MiB tuples", withField(withMap(base, "scenario", map[string]any{"schema": "synthetic", "size": 1 << 20, "distinct": 1}), "bucket_size", 1<<20), 400},
		{"start in the year 9999", withField(base, "start_at", "9999-01-01T00:00:00Z"), 400},
		{"threads -1", withField(base, "threads", -1), 400},
		{"threads 100000", withField(base, "threads", 100000), 400},
		{"rate 1e300", withField(base, "rate", 1e300), 400},
		{"duration 10 years", withField(base, "duration_ns", int64(10*365*24*time.Hour)), 400},
		{"hwm 2^40", withField(base, "hwm", int64(1)<<40), 400},
		{"negative late threshold", withField(base, "late_threshold_ns", -5), 400},
		{"overflow nonsense", withField(base, "overflow", "explode"), 400},
		{"100k-piece shape", withField(base, "shape", map[string]any{"kind": "step", "mults": make([]float64, 200000), "spans_s": make([]float64, 200000)}), 400},
		{"NaN-free but zero spans", withField(base, "shape", map[string]any{"kind": "step", "mults": []float64{1}, "spans_s": []float64{0}}), 400},
		{"profile with an absolute path", withField(base, "profile", handlersAt("buffered", filepath.Join(dir, "out.log"))), 400},
		{"profile climbing out", withField(base, "profile", handlersAt("buffered", "../../../tmp/out.log")), 400},
		{"profile with an unknown handler", withField(base, "profile", handlersAt("nosuch", "")), 400},
		{"profile as text", withField(base, "profile", "default: {handler: buffered, path: x.log}"), 400},
		{"unknown field", withField(base, "surprise", 1), 400},
		{"trailing data", withField(base, "rate", 1000) + `{"x":1}`, 400},
		{"body above the limit", big, 413},
	} {
		code, body := a.call(t, http.MethodPost, protocol.PathTrial, tc.body)
		if code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.want)
		}
		if strings.Contains(body, secretMarker) || strings.Contains(body, "root:x") {
			t.Errorf("%s: the reply quotes the file: %s", tc.name, body)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files appeared next to the secret: %v", entries)
	}
	if rss := a.rssMB(t); rss > 300 {
		t.Errorf("agent RSS %.0f MB after the attacks", rss)
	}
	// Still usable: a valid trial whose common start is 50 s away stops
	// within a second of being told to.
	start := time.Now().Add(50 * time.Second).UTC().Format(time.RFC3339Nano)
	if code, body := a.call(t, http.MethodPost, protocol.PathTrial, withField(base, "start_at", start)); code != http.StatusAccepted {
		t.Fatalf("valid trial refused after the attacks: %d %s", code, body)
	}
	asked := time.Now()
	a.call(t, http.MethodPost, protocol.PathStop, "")
	st := a.waitFinished(t, 5*time.Second)
	if took := time.Since(asked); took > time.Second+200*time.Millisecond {
		t.Errorf("a trial waiting for its start took %v to stop", took)
	}
	if st.State != protocol.StateDone || st.Sender == nil || !st.Sender.Interrupted {
		t.Errorf("stopped trial: %+v", st)
	}
}

func withMap(m map[string]any, key string, v any) map[string]any {
	c := map[string]any{}
	for k, x := range m {
		c[k] = x
	}
	c[key] = v
	return c
}

func TestHostileReceiverAgent(t *testing.T) {
	port := mustPort(t)
	a := startHostileAgent(t, "dgrecv", "--bind", fmt.Sprintf("tcp://127.0.0.1:%d", port))
	base := map[string]any{"schema": "synthetic", "expect_streams": 1, "end_timeout_ns": int64(time.Minute)}
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"ring 2^40", withField(base, "ring", int64(1)<<40), 400},
		{"ring not a power of two", withField(base, "ring", 1000), 400},
		{"ring and hwm whose messages the memory budget cannot hold", withField(withMap(base, "ring", 16384), "hwm", 1_000_000), 400},
		{"work 1 hour per tuple", withField(base, "work_per_tuple_ns", int64(time.Hour)), 400},
		{"expect 2^31 streams", withField(base, "expect_streams", 1<<31), 400},
		{"duration -1", withField(base, "duration_ns", -1), 400},
		{"end timeout 1 year", withField(base, "end_timeout_ns", int64(365*24*time.Hour)), 400},
		{"schema nonsense", withField(base, "schema", "xml"), 400},
		{"unknown field", withField(base, "path", "/etc/shadow"), 400},
		{"not JSON", "{schema:", 400},
	} {
		if code, body := a.call(t, http.MethodPost, protocol.PathTrial, tc.body); code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.want)
		}
	}
	if rss := a.rssMB(t); rss > 300 {
		t.Errorf("agent RSS %.0f MB after the attacks", rss)
	}
	// Busy work: a consumer spending 100 ms per tuple with a full ring
	// still stops within a second.
	trial := withField(withMap(base, "work_per_tuple_ns", int64(100*time.Millisecond)), "ring", 64)
	if code, body := a.call(t, http.MethodPost, protocol.PathTrial, trial); code != http.StatusAccepted {
		t.Fatalf("valid trial refused: %d %s", code, body)
	}
	snd, err := Start(filepath.Join(binDir, "dgsend"), "--connect", fmt.Sprintf("tcp://127.0.0.1:%d", port), "--rate", "20k", "--bucket", "10",
		"--duration", "2s", "--scenario", "synthetic:100", "--metrics-addr", "", "--calibrate", "30ms")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = snd.Signal(syscall.SIGKILL); _ = snd.Wait(5 * time.Second) }()
	// The consumer is in its busy work (each tuple takes 100 ms) once
	// decoded buckets wait in the ring behind it; its total is current
	// even so (published on a time bound, not only every 64 buckets).
	waitMetric(t, a.addr, "cp_receiver_ring_occupancy_buckets", 10*time.Second, func(v float64) bool { return v >= 2 })
	waitMetric(t, a.addr, "cp_receiver_consumed_tuples_total", 5*time.Second, positive)
	asked := time.Now()
	a.call(t, http.MethodPost, protocol.PathStop, "")
	st := a.waitFinished(t, 10*time.Second)
	if took := time.Since(asked); took > time.Second+200*time.Millisecond {
		t.Errorf("a consumer in busy work took %v to stop", took)
	}
	if st.State != protocol.StateDone || st.Receiver == nil || st.Receiver.Reason != "stopped" || st.Receiver.Complete {
		t.Errorf("stopped trial: %+v", st)
	}
}

// TestAgentTokenPolicy: agents refuse tokens shorter than 16 bytes, and
// refuse requests without the token (saying how to pass it).
func TestAgentTokenPolicy(t *testing.T) {
	p, err := Start(filepath.Join(binDir, "dgsend"), "--agent", "--metrics-addr", "127.0.0.1:0", "--token", "short")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(10 * time.Second); ExitCode(err) == 0 || !strings.Contains(p.Stderr.String(), "at least 16") {
		t.Fatalf("a 5-byte token was accepted: %v\n%s", err, p.Stderr.String())
	}
	a := startHostileAgent(t, "dgsend")
	resp, err := http.Post("http://"+a.addr+protocol.PathTrial, "application/json", bytes.NewBufferString("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
}

// TestAgentRemovesItsDirectory: a profiled trial's files are removed once
// fetched, and the agent's directory when it exits.
func TestAgentRemovesItsDirectory(t *testing.T) {
	port := mustPort(t)
	a := startHostileAgent(t, "dgrecv", "--bind", fmt.Sprintf("tcp://127.0.0.1:%d", port))
	trial := `{"schema":"synthetic","expect_streams":1,"end_timeout_ns":60000000000,"profile":{"default":{"handler":"buffered","path":"{name}.log"}}}`
	if code, body := a.call(t, http.MethodPost, protocol.PathTrial, trial); code != http.StatusAccepted {
		t.Fatalf("profiled trial refused: %d %s", code, body)
	}
	a.call(t, http.MethodPost, protocol.PathStop, "")
	a.waitFinished(t, 5*time.Second)
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("cp-agent-%d-*", a.proc.Cmd.Process.Pid)))
	if len(dirs) != 1 {
		t.Fatalf("agent directories: %v", dirs)
	}
	if code, _ := a.call(t, http.MethodGet, protocol.PathProfile, ""); code != http.StatusOK {
		t.Fatalf("fetch: %d", code)
	}
	if entries, _ := os.ReadDir(dirs[0]); len(entries) != 0 {
		t.Errorf("fetched files are still there: %v", entries)
	}
	if code, _ := a.call(t, http.MethodGet, protocol.PathProfile, ""); code != http.StatusNotFound {
		t.Errorf("a second fetch answered %d, want 404", code)
	}
	_ = a.proc.Signal(syscall.SIGTERM)
	if err := a.proc.Wait(10 * time.Second); err != nil {
		t.Fatalf("agent exit: %v\n%s", err, a.proc.Stderr.String())
	}
	if _, err := os.Stat(dirs[0]); !os.IsNotExist(err) {
		t.Errorf("the agent's directory outlived it: %v", err)
	}
}
