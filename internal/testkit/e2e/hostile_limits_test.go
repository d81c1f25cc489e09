package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"

	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/tsc/probing/probeapi"
)

// The second round of hostile tests: what a trial may cost in total, how
// long its preparation may take, and what a stranger's connections and
// probe requests may hold.

// TestHostileTrialMemoryIsBudgeted: a trial whose fields are each in range
// but whose product is not (256 threads × 2^20 distinct 256-byte tuples,
// 128 GiB) is refused before anything is allocated, quickly, and the agent
// stays small and usable; an agent's own --memory-budget is what counts.
func TestHostileTrialMemoryIsBudgeted(t *testing.T) {
	a := startHostileAgent(t, "dgsend")
	huge := validSenderTrial("tcp://127.0.0.1:1")
	huge["threads"] = 256
	huge["scenario"] = map[string]any{"name": "s", "schema": "synthetic", "seed": 1, "size": 256, "distinct": 1 << 20}
	b, _ := json.Marshal(huge)
	start := time.Now()
	code, body := a.call(t, http.MethodPost, protocol.PathTrial, string(b))
	if code != http.StatusBadRequest || !strings.Contains(body, "memory budget") || !strings.Contains(body, "GiB") {
		t.Fatalf("a 128 GiB trial: %d %s", code, body)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("refusing it took %v", took)
	}
	if rss := a.rssMB(t); rss > 300 {
		t.Errorf("agent RSS %.0f MB after a refused 128 GiB trial", rss)
	}
	port := mustPort(t)
	ok := validSenderTrial(fmt.Sprintf("tcp://127.0.0.1:%d", port))
	ok["duration_ns"] = int64(200 * time.Millisecond)
	b, _ = json.Marshal(ok)
	if code, body := a.call(t, http.MethodPost, protocol.PathTrial, string(b)); code != http.StatusAccepted {
		t.Fatalf("a valid trial after the refusal: %d %s", code, body)
	}
	a.call(t, http.MethodPost, protocol.PathStop, "")
	a.waitFinished(t, 5*time.Second)

	// An agent with a small budget refuses what fits the host but not it.
	small := startHostileAgent(t, "dgsend", "--memory-budget", "32MiB")
	mid := validSenderTrial("tcp://127.0.0.1:1")
	mid["scenario"] = map[string]any{"name": "s", "schema": "synthetic", "seed": 1, "size": 256, "distinct": 1 << 18}
	b, _ = json.Marshal(mid)
	if code, body := small.call(t, http.MethodPost, protocol.PathTrial, string(b)); code != http.StatusBadRequest || !strings.Contains(body, "32.00 MiB") {
		t.Fatalf("a 128 MiB trial on an agent with --memory-budget 32MiB: %d %s", code, body)
	}
}

// TestHostilePreparationIsBounded: the largest bucket and the largest step
// shape are prepared within seconds (the send-cost measurement once pushed
// 75 GiB through loopback for a 64 MiB bucket, and a 100,000-piece shape
// was tabulated for 144 s), and a stop then ends the trial within a second.
func TestHostilePreparationIsBounded(t *testing.T) {
	a := startHostileAgent(t, "dgsend")
	port := mustPort(t)
	bigBucket := validSenderTrial(fmt.Sprintf("tcp://127.0.0.1:%d", port))
	bigBucket["bucket_size"] = 4
	bigBucket["hwm"] = 2
	bigBucket["rate"] = 4
	bigBucket["duration_ns"] = int64(time.Minute)
	bigBucket["scenario"] = map[string]any{"name": "s", "schema": "synthetic", "seed": 1, "size": 16 << 20, "distinct": 4}
	pieces := 100000
	mults, spans := make([]float64, pieces), make([]float64, pieces)
	for i := range mults {
		mults[i], spans[i] = float64(1+i%3), 0.5
	}
	bigShape := validSenderTrial(fmt.Sprintf("tcp://127.0.0.1:%d", port))
	bigShape["duration_ns"] = int64(24 * time.Hour)
	bigShape["shape"] = map[string]any{"kind": "step", "mults": mults, "spans_s": spans}
	for name, trial := range map[string]map[string]any{"a 64 MiB bucket": bigBucket, "a 100,000-piece step shape over 24 h": bigShape} {
		b, _ := json.Marshal(trial)
		start := time.Now()
		code, body := a.call(t, http.MethodPost, protocol.PathTrial, string(b))
		if code != http.StatusAccepted {
			t.Fatalf("%s: %d %s", name, code, body)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%s: preparing it took %v", name, took)
		}
		asked := time.Now()
		a.call(t, http.MethodPost, protocol.PathStop, "")
		st := a.waitFinished(t, 10*time.Second)
		if took := time.Since(asked); took > time.Second+300*time.Millisecond {
			t.Errorf("%s: stopping took %v", name, took)
		}
		if st.State != protocol.StateDone {
			t.Errorf("%s: %+v", name, st)
		}
		t.Logf("%s: prepared in %v, stopped in %v, agent RSS %.0f MB", name, asked.Sub(start), time.Since(asked), a.rssMB(t))
	}
}

// fdCount is the number of descriptors process pid holds.
func fdCount(t *testing.T, pid int) int {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("process %d gone: %v", pid, err)
	}
	return len(entries)
}

// startLimitedAgent starts an agent whose descriptor limit is nofile.
func startLimitedAgent(t *testing.T, nofile int, bin string, extra ...string) *hostileAgent {
	t.Helper()
	args := append([]string{"--agent", "--metrics-addr", "127.0.0.1:0", "--token", hostileToken, "--calibrate", "30ms"}, extra...)
	script := fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, nofile)
	p, err := Start("/bin/sh", append([]string{"-c", script, filepath.Join(binDir, bin)}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Signal(syscall.SIGKILL); _ = p.Wait(5 * time.Second) })
	return &hostileAgent{proc: p, addr: agentAddr(t, p)}
}

// idleConns opens n keep-alive connections to addr, each left idle after
// one request, and returns how many got an answer.
func idleConns(t *testing.T, addr string, n int) (answered int, conns []net.Conn) {
	for i := 0; i < n; i++ {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			continue
		}
		conns = append(conns, c)
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.WriteString(c, "GET /v1/trial HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			continue
		}
		if n, err := c.Read(make([]byte, 1024)); err == nil && n > 0 {
			answered++
		}
	}
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	return answered, conns
}

// TestHostileConnectionsCannotExhaustTheAgent: a stranger (no token needed)
// opens many keep-alive connections and leaves them idle. The agent holds
// a bounded number, answers its controller, and starts the next trial;
// with a descriptor limit so low that no trial fits, it refuses the trial
// with a message that says what to do, and stays alive (libzmq used to
// abort the whole agent: "Too many open files").
func TestHostileConnectionsCannotExhaustTheAgent(t *testing.T) {
	port := mustPort(t)
	a := startLimitedAgent(t, 256, "dgrecv", "--bind", fmt.Sprintf("tcp://127.0.0.1:%d", port))
	pid := a.proc.Cmd.Process.Pid
	answered, _ := idleConns(t, a.addr, 400)
	if fds := fdCount(t, pid); fds > 200 {
		t.Fatalf("the agent holds %d descriptors (limit 256) after 400 idle connections", fds)
	}
	start := time.Now()
	if code, _ := a.call(t, http.MethodGet, protocol.PathInfo, ""); code != http.StatusOK || time.Since(start) > 2*time.Second {
		t.Fatalf("the controller's request after 400 idle connections: %d in %v", code, time.Since(start))
	}
	trial := `{"schema":"synthetic","expect_streams":1,"end_timeout_ns":60000000000}`
	if code, body := a.call(t, http.MethodPost, protocol.PathTrial, trial); code != http.StatusAccepted {
		t.Fatalf("a trial after the connections: %d %s", code, body)
	}
	a.call(t, http.MethodPost, protocol.PathStop, "")
	a.waitFinished(t, 5*time.Second)
	t.Logf("400 idle connections: %d answered, agent holds %d descriptors", answered, fdCount(t, pid))

	// So few descriptors that the connections leave no room for a trial.
	low := startLimitedAgent(t, 26, "dgrecv", "--bind", fmt.Sprintf("tcp://127.0.0.1:%d", mustPort(t)))
	idleConns(t, low.addr, 100)
	code, body := low.call(t, http.MethodPost, protocol.PathTrial, trial)
	if code == http.StatusAccepted {
		low.call(t, http.MethodPost, protocol.PathStop, "")
		st := low.waitFinished(t, 5*time.Second)
		if st.State != protocol.StateFailed || !strings.Contains(st.Error, "ulimit -n") {
			t.Fatalf("a trial with no descriptors left: accepted, then %+v", st)
		}
	} else if !strings.Contains(body, "ulimit -n") {
		t.Fatalf("a trial with no descriptors left: %d %s", code, body)
	}
	if code, _ := low.call(t, http.MethodGet, protocol.PathInfo, ""); code != http.StatusOK {
		t.Fatalf("the agent after the refusal: %d\n%s", code, low.proc.Stderr.String())
	}
	if strings.Contains(low.proc.Stderr.String(), "Too many open files") {
		t.Fatalf("libzmq ran out of descriptors:\n%s", low.proc.Stderr.String())
	}
}

// TestHostileProbeRoundsAreBounded: a probe round whose gaps alone outlast
// the bound is refused; at most two rounds run at once (429 for a third);
// a round whose caller went away ends at once and gives back its socket.
func TestHostileProbeRoundsAreBounded(t *testing.T) {
	a := startHostileAgent(t, "dgsend")
	pid := a.proc.Cmd.Process.Pid
	hole, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Close()
	round := func(count int, gap time.Duration) string {
		b, _ := json.Marshal(probeapi.ProbeRequest{Peer: hole.LocalAddr().String(), Count: count, Gap: gap, Timeout: 5 * time.Second})
		return string(b)
	}
	if code, body := a.call(t, http.MethodPost, probeapi.PathProbe, round(100000, 100*time.Millisecond)); code != http.StatusBadRequest || !strings.Contains(body, "more than a round may") {
		t.Fatalf("a round of 100,000 probes 100 ms apart: %d %s", code, body)
	}
	base := fdCount(t, pid)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.addr+probeapi.PathProbe, bytes.NewBufferString(round(1000, 0)))
			req.Header.Set("Authorization", "Bearer "+hostileToken)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Logf("an abandoned round answered: %d %s", resp.StatusCode, b)
			}
		}()
	}
	// Both rounds are running once each holds its UDP socket.
	deadline := time.Now().Add(5 * time.Second)
	for fdCount(t, pid) < base+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var third int
	for time.Now().Before(deadline) {
		if third, _ = a.call(t, http.MethodPost, probeapi.PathProbe, round(1, 0)); third == http.StatusTooManyRequests {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if third != http.StatusTooManyRequests {
		t.Fatalf("a third round beside two running: %d, want 429", third)
	}
	cancel()
	wg.Wait()
	deadline = time.Now().Add(3 * time.Second)
	for fdCount(t, pid) > base+2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := fdCount(t, pid); n > base+2 {
		t.Fatalf("the abandoned rounds still hold descriptors: %d, %d before", n, base)
	}
	// The slots are free again: a short round to a peer that never
	// answers runs (and reports its losses) instead of a 429.
	if code, body := a.call(t, http.MethodPost, probeapi.PathProbe, round(1, 0)); code != http.StatusOK || !strings.Contains(body, `"lost":1`) {
		t.Fatalf("a round after the abandoned ones: %d %s", code, body)
	}
}

// TestHostileMessageAboveMaxMessage: a 512 MiB message to a receiver whose
// --max-message is 64 MiB never grows it to the message's size: the
// socket refuses it before libzmq builds it.
func TestHostileMessageAboveMaxMessage(t *testing.T) {
	port := mustPort(t)
	ep := fmt.Sprintf("tcp://127.0.0.1:%d", port)
	p, err := Start(filepath.Join(binDir, "dgrecv"), "--bind", ep, "--duration", "20s", "--metrics-addr", "", "--calibrate", "30ms", "--json")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Signal(syscall.SIGKILL); _ = p.Wait(5 * time.Second) })
	if !p.WaitForLine("dgrecv", 10*time.Second) {
		t.Logf("no start line: %s", p.Stderr.String())
	}
	ctx, err := zmq.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Term()
	push, err := ctx.NewSocket(zmq.PUSH)
	if err != nil {
		t.Fatal(err)
	}
	defer push.Close()
	_ = push.SetLinger(0)
	if err := push.Connect(ep); err != nil {
		t.Fatal(err)
	}
	if _, err := push.SendBytes(make([]byte, 512<<20), 0); err != nil {
		t.Fatal(err)
	}
	peak := 0.0
	agent := &hostileAgent{proc: p}
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		peak = max(peak, agent.rssMB(t))
	}
	if peak > 200 {
		t.Fatalf("dgrecv grew to %.0f MB on a 512 MiB message (--max-message 64 MiB)", peak)
	}
	t.Logf("dgrecv's peak RSS while a 512 MiB message was offered: %.0f MB", peak)
}
