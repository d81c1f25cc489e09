package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/sweep"
	"github.com/cloudprofiler-go/cp/sweep/remote"
	"github.com/cloudprofiler-go/cp/wire"
)

// The fourth round of hostile tests: a publisher that controls dgrecv's
// memory through its headers, a broker's words on the terminal, a
// receiver whose broker dies before any data, compare's inputs, and
// strangers' connections that locked the controller out. Each bounds the
// exit status, the peak memory and the time.

// peakMB follows a process's peak resident memory (the kernel's VmHWM)
// until stop is called, and returns it in MiB.
func peakMB(pid int) (stop func() float64) {
	var peak atomic.Int64 // KiB
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		status := fmt.Sprintf("/proc/%d/status", pid)
		for {
			if b, err := os.ReadFile(status); err == nil {
				for _, line := range strings.Split(string(b), "\n") {
					if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
						kb, _ := strconv.ParseInt(f[1], 10, 64)
						if kb > peak.Load() {
							peak.Store(kb)
						}
					}
				}
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return func() float64 {
		close(done)
		<-finished
		return float64(peak.Load()) / 1024
	}
}

// startWatched starts one of the binaries, killed at the test's end, and
// waits until it says ready on its standard error.
func startWatched(t *testing.T, ready, bin string, args ...string) *Proc {
	t.Helper()
	p, err := Start(filepath.Join(binDir, bin), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Signal(syscall.SIGKILL); _ = p.Wait(5 * time.Second) })
	if !p.WaitForLine(ready, 20*time.Second) {
		t.Fatalf("%s did not start:\n%s", bin, p.Stderr.String())
	}
	return p
}

// oneTupleBucket is a raw bucket of one tuple [id, intended].
func oneTupleBucket(seq uint64) []byte {
	b := make([]byte, wire.HeaderSize)
	b = wire.AppendArrayLen(b, 2)
	b = wire.AppendUint64Fixed(b, wire.TupleID(0, seq))
	b = wire.AppendInt64Fixed(b, time.Now().UnixNano())
	wire.PutHeader(b, wire.Header{Kind: wire.KindData, Stream: 0, Seq: seq, Count: 1, BodyLen: uint32(len(b) - wire.HeaderSize)})
	return b
}

// TestHostileNATSHeadersCannotGrowTheReceiver: a publisher sending 1 MiB
// headers around one-tuple buckets through a real nats-server, with the
// receiver's consumer far behind (a millisecond of work a tuple), once
// grew dgrecv to 1.5 GiB in 7 s (killed). The headers now count toward the
// 64 MiB held for a lane: dgrecv drops what is beyond, counted, and stays
// within its budget.
func TestHostileNATSHeadersCannotGrowTheReceiver(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte("max_payload: 4MB\nmax_pending: 512MB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, _ := realserver.NATS(t, "-c", conf)
	recv := startWatched(t, "listening on", "dgrecv", "--connect", "nats://"+addr+"/hostile.headers", "--schema", "raw",
		"--work", "1ms", "--duration", "20s", "--calibrate", "30ms")
	peak := peakMB(recv.Cmd.Process.Pid)
	nc, err := nats.Connect("nats://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	header := strings.Repeat("h", 1<<20)
	start := time.Now()
	sent := 0
	for ; sent < 3000 && time.Since(start) < 8*time.Second; sent++ {
		msg := &nats.Msg{Subject: "hostile.headers", Header: nats.Header{"X-Flood": []string{header}}, Data: oneTupleBucket(uint64(sent))}
		if err := nc.PublishMsg(msg); err != nil {
			t.Fatalf("publish %d: %v", sent, err)
		}
	}
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	flooded := time.Since(start)
	time.Sleep(time.Second) // what the server holds reaches dgrecv
	_ = recv.Signal(syscall.SIGINT)
	err = recv.Wait(15 * time.Second)
	mb := peak()
	t.Logf("%d messages of 1 MiB headers in %v: dgrecv's peak RSS %.0f MiB (exit %d)", sent, flooded.Round(time.Millisecond), mb, ExitCode(err))
	if ws, ok := recv.Cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("dgrecv killed by %v\n%s", ws.Signal(), recv.Stderr.String())
	}
	if mb > 400 {
		t.Errorf("dgrecv's peak RSS %.0f MiB under 1 MiB headers: the lane's bound is 64 MiB", mb)
	}
}

// TestHostileBrokerWordsCannotDriveTheTerminal: a server that answers
// with an -ERR holding ESC, OSC and BEL sequences and the 8-bit CSI has
// them shown as escapes on dgrecv's output, never raw.
func TestHostileBrokerWordsCannotDriveTheTerminal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				fmt.Fprint(c, "INFO {\"max_payload\":1048576}\r\n")
				time.Sleep(100 * time.Millisecond)
				fmt.Fprint(c, "-ERR 'evil \x1b]0;owned\x07 \x1b[2J \u009b31m'\r\n")
				time.Sleep(time.Second)
			}()
		}
	}()
	start := time.Now()
	recv, err := Start(filepath.Join(binDir, "dgrecv"), "--connect", "nats://"+ln.Addr().String()+"/s", "--schema", "raw", "--end-timeout", "2s", "--calibrate", "30ms")
	if err != nil {
		t.Fatal(err)
	}
	err = recv.Wait(20 * time.Second)
	out := recv.Stdout.String() + recv.Stderr.String()
	t.Logf("dgrecv exited %d after %v", ExitCode(err), time.Since(start).Round(time.Millisecond))
	if strings.ContainsAny(out, "\x1b\x07\u009b") {
		t.Errorf("a raw escape reached dgrecv's output:\n%q", out)
	}
	if ExitCode(err) == 0 || !strings.Contains(out, `evil \x1b]0;owned\x07`) {
		t.Errorf("exit %d; want a failure that quotes the server escaped:\n%s", ExitCode(err), out)
	}
}

// TestHostileReceiverDoesNotWaitForEver: dgrecv without --duration whose
// broker dies before any message ends, with a non-zero exit and the
// reason, instead of waiting for ever.
func TestHostileReceiverDoesNotWaitForEver(t *testing.T) {
	addr, stop := realserver.NATS(t)
	recv, err := Start(filepath.Join(binDir, "dgrecv"), "--connect", "nats://"+addr+"/gone", "--schema", "raw", "--end-timeout", "3s", "--calibrate", "30ms")
	if err != nil {
		t.Fatal(err)
	}
	if !recv.WaitForLine("listening on", 10*time.Second) {
		t.Fatalf("dgrecv did not start:\n%s", recv.Stderr.String())
	}
	stop()
	start := time.Now()
	err = recv.Wait(30 * time.Second)
	took := time.Since(start)
	out := recv.Stdout.String() + recv.Stderr.String()
	t.Logf("dgrecv ended %v after its broker died: exit %d", took.Round(time.Millisecond), ExitCode(err))
	if ExitCode(err) == 0 || took > 15*time.Second || !strings.Contains(out, "every lane stopped receiving") {
		t.Errorf("exit %d after %v; want a failure naming the stopped lane:\n%s", ExitCode(err), took, out)
	}
}

// TestHostileCompareInputs: sixteen copies of a 250 MiB summary are
// refused before they are read (one was killed at 3 GiB), quickly and
// small; a run directory whose name and statements hold newlines and a
// terminal's escapes forge no line of compare's output, in text or JSON.
func TestHostileCompareInputs(t *testing.T) {
	huge := hostileRunDir(t, func(string) {})
	if err := os.Truncate(filepath.Join(huge, "summary.json"), 250<<20); err != nil {
		t.Fatal(err)
	}
	args := []string{"compare"}
	for range 16 {
		args = append(args, huge)
	}
	start := time.Now()
	code, out, rss := boundedRun(t, 30*time.Second, args...)
	t.Logf("16 × 250 MiB: exit %d in %v, peak RSS %.0f MiB", code, time.Since(start).Round(time.Millisecond), rss)
	if code == 0 || !strings.Contains(out, "over compare's 64.00 MiB a run") || rss > 100 {
		t.Errorf("exit %d, peak %.0f MiB:\n%s", code, rss, out)
	}

	a := hostileRunDir(t, func(string) {})
	forged := filepath.Join(filepath.Dir(a), "run\nFORGED: 99 M a second\x1b[2J")
	if err := os.Rename(a, forged); err != nil {
		t.Fatal(err)
	}
	b := hostileRunDir(t, func(string) {})
	for _, extra := range [][]string{nil, {"--json"}} {
		code, out, _ := boundedRun(t, 30*time.Second, append(append([]string{"compare"}, extra...), forged, b)...)
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "FORGED") || strings.ContainsAny(line, "\x1b\u009b") {
				t.Errorf("compare %v (exit %d): a forged line or a raw escape: %q", extra, code, line)
			}
		}
	}
}

// TestHostileStrangersCannotLockOutAnAgent: seventy connections without
// the token to a real dgsend agent, silent or sending their headers
// slowly, reopened as soon as they close, as fast as they can (a
// sweep against such an agent exited 5 at once): the controller's own
// client still has at least 99% of its requests answered, and a trial
// runs.
func TestHostileStrangersCannotLockOutAnAgent(t *testing.T) {
	a := startHostileAgent(t, "dgsend")
	stop := make(chan struct{})
	opened := floodConnections(a.addr, 70, stop)
	defer close(stop)
	time.Sleep(time.Second)
	client := remote.New(a.addr, hostileToken)
	var lat []time.Duration
	ok := 0
	const asks = 200
	began := opened.Load()
	start := time.Now()
	for range asks {
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := client.Status(ctx); err == nil {
			ok++
		}
		cancel()
		lat = append(lat, time.Since(t0))
		time.Sleep(10 * time.Millisecond)
	}
	rate := float64(opened.Load()-began) / time.Since(start).Seconds()
	slices.Sort(lat)
	p99 := lat[len(lat)*99/100]
	t.Logf("dgsend agent under %.0f strangers' connections a second: %d of %d status requests answered, p99 %v, median %v; agent RSS %.0f MiB",
		rate, ok, asks, p99, lat[len(lat)/2], a.rssMB(t))
	if ok < asks*99/100 || p99 > time.Second {
		t.Errorf("%d of %d answered, p99 %v", ok, asks, p99)
	}
	port := mustPort(t)
	trial := validSenderTrial(fmt.Sprintf("tcp://127.0.0.1:%d", port))
	trial["duration_ns"] = int64(300 * time.Millisecond)
	if code, body := a.call(t, "POST", protocol.PathTrial, withField(trial, "rate", 1000)); code != 202 {
		t.Fatalf("a trial under the flood: %d %s", code, body)
	}
	a.call(t, "POST", protocol.PathStop, "")
	if st := a.waitFinished(t, 10*time.Second); st.State != protocol.StateDone {
		t.Errorf("the trial under the flood: %+v", st)
	}
}

// floodConnections opens n connections to addr, silent or sending their
// headers a byte every 100 ms, each reopened as soon as the agent closes
// it (at most every 5 ms: bounded), until stop.
func floodConnections(addr string, n int, stop <-chan struct{}) *atomic.Int64 {
	var opened atomic.Int64
	for i := range n {
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				c, err := net.Dial("tcp", addr)
				if err != nil {
					continue
				}
				opened.Add(1)
				if i%2 == 1 {
				slow:
					for _, b := range []byte("GET /v1/info HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 100)) {
						if _, err := c.Write([]byte{b}); err != nil {
							break
						}
						select {
						case <-stop:
							break slow
						case <-time.After(100 * time.Millisecond):
						}
					}
				}
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				_, _ = c.Read(make([]byte, 1))
				c.Close()
			}
		}()
	}
	return &opened
}

// TestHostileInputBucketsCannotGrowAJob: twenty 1 MiB input buckets of
// 56,000 small tuples each through a real JetStream into cpjob's
// cp_input (one such bucket grew a job by 267 MB, twenty to 810 MB) are
// handed over in pieces with at most 32,768 tuples in the engine: the
// job reads them all and its peak resident memory stays small.
func TestHostileInputBucketsCannotGrowAJob(t *testing.T) {
	conf0 := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf0, []byte("max_payload: 4MB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, _ := realserver.NATS(t, "-c", conf0)
	in, out := "jetstream://"+addr+"/hostile.in?group=map", "jetstream://"+addr+"/hostile.out"
	for _, ep := range []string{in, out + "?group=cp"} {
		e, err := driver.Parse(ep)
		if err != nil {
			t.Fatal(err)
		}
		if err := ysbBrokers.Ensure(e); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(t.TempDir(), "map.yaml")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("input:\n  cp_input: {url: '%s', schema: raw}\noutput:\n  cp_output: {url: '%s', schema: raw}\n", in, out)), 0o644); err != nil {
		t.Fatal(err)
	}
	job := startWatched(t, "connected", "cpjob", "run", conf)
	peak := peakMB(job.Cmd.Process.Pid)
	const tuples = 56_000
	body := make([]byte, wire.HeaderSize)
	for i := range tuples {
		body = wire.AppendArrayLen(body, 2)
		body = wire.AppendUint64Fixed(body, wire.TupleID(0, uint64(i)))
		body = wire.AppendInt64Fixed(body, time.Now().UnixNano())
	}
	ie, _ := driver.Parse(in)
	p, err := ysbBrokers.NewProducer(ie)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for k := range 20 {
		b := append([]byte(nil), body...)
		wire.PutHeader(b, wire.Header{Kind: wire.KindData, Stream: 0, Seq: uint64(k), Count: tuples, BodyLen: uint32(len(b) - wire.HeaderSize)})
		if err := p.Publish(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		lag, err := ysbBrokers.GroupLag(ie)
		if err == nil && lag == 0 {
			break
		}
		if time.Since(start) > 90*time.Second {
			t.Fatalf("cpjob still behind by %d bucket(s) (%v) after 90 s:\n%s", lag, err, job.Stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// every tuple through the engine: one output bucket a batch of 4,096
	// (a bucket's last piece the rest), 14 a bucket
	oe, _ := driver.Parse(out + "?group=cp")
	var written int64
	for want := int64(20 * ((tuples + 4095) / 4096)); written != want; time.Sleep(100 * time.Millisecond) {
		if written, err = ysbBrokers.GroupLag(oe); err != nil || time.Since(start) > 90*time.Second {
			t.Fatalf("cpjob wrote %d of %d output buckets (%v) after %v:\n%s", written, want, err, time.Since(start), job.Stderr.String())
		}
	}
	mb := peak()
	t.Logf("20 buckets of %d tuples (%d bytes each) through the job in %v (%d output buckets): cpjob's peak RSS %.0f MiB", tuples, len(body), time.Since(start).Round(time.Millisecond), written, mb)
	if mb > 300 {
		t.Errorf("cpjob's peak RSS %.0f MiB for twenty 1 MiB buckets", mb)
	}
}

// TestSweepJudgesAFilterPerIdentity: a filter on the engine (cpjob run,
// no plugin of ours but its input and output) swept through JetStream.
// Correct, it passes every trial of a linear sweep (the receivers never
// set a trial's first bucket aside). A test build that drops one view and
// repeats another, or that lets one click through and drops one view,
// has the counts right, and each fails delivery with both faults named.
func TestSweepJudgesAFilterPerIdentity(t *testing.T) {
	addr, _ := realserver.NATS(t)
	filter := "    - mapping: 'root = if this.event_type != \"view\" { deleted() } else { this }'\n"
	for i, tc := range []struct {
		name, before, after string
		pass                bool
		want                []string
	}{
		{"correct", "", "", true, []string{": exact;", "per identity: each owed tuple once, none invented"}},
		{"drops one view and repeats another", "",
			"    - mapping: 'root = if count(\"drop\") == 200 { deleted() } else { this }'\n" +
				"    - mapping: 'root = if count(\"dup\") == 300 { [this, this] } else { [this] }'\n    - unarchive:\n        format: json_array\n",
			false, []string{": 1 missing;", "per identity: 1 duplicated (not consumed)"}},
		{"lets a click through and drops a view",
			"    - mapping: |\n        root = this\n        root.event_type = if this.event_type == \"click\" { if count(\"leak\") == 100 { \"view\" } else { this.event_type } } else { this.event_type }\n",
			"    - mapping: 'root = if count(\"drop\") == 200 { deleted() } else { this }'\n",
			false, []string{": 1 missing;", "1 that the declared filter drops (invented, not consumed)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, out := fmt.Sprintf("jetstream://%s/filter%d.in", addr, i), fmt.Sprintf("jetstream://%s/filter%d.out", addr, i)
			conf := filepath.Join(t.TempDir(), "filter.yaml")
			yaml := fmt.Sprintf("input:\n  cp_input: {url: '%s?group=filter', schema: ad-event}\npipeline:\n  processors:\n%s%s%soutput:\n  cp_output: {url: '%s', schema: ad-event}\n",
				in, tc.before, filter, tc.after, out)
			if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			job, err := Start(filepath.Join(binDir, "cpjob"), "run", conf)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = job.Signal(syscall.SIGKILL); _ = job.Wait(5 * time.Second) })
			search := []string{"--search", "linear", "--from", "2k", "--to", "2k", "--step", "1k"}
			if tc.pass {
				search = []string{"--search", "linear", "--from", "2k", "--to", "4k", "--step", "1k"}
			}
			rep, p := runSweepAllowing(t, 3*time.Minute, []int{sweep.ExitNoRatePassed}, append([]string{"--input", in + "?group=filter", "--output", out,
				"--scenario", "ad-event", "--schema", "ad-event", "--expect-filter", "event_type == view", "--bucket", "10", "--duration", "2s",
				"--warmup", "500ms", "--job-quiet", "1500ms", "--lateness-floor", "100ms", "--stage-period", "0"}, search...)...)
			if len(rep.Result.Trials) == 0 {
				t.Fatalf("no trial\n%s\n%s", p.Stderr.String(), job.Stderr.String())
			}
			checkDelivery(t, rep, tc.pass, tc.want)
		})
	}
}
