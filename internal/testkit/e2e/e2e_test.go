package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/sweep"
	zmq "github.com/pebbe/zmq4"
)

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cp-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if binDir, err = Binaries(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// Every process the tests start (and every t.TempDir) makes its
	// temporary files in here, removed at the end: an agent a fault test
	// kills with SIGKILL cannot remove its own directory.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil || os.Setenv("TMPDIR", tmp) != nil {
		fmt.Fprintln(os.Stderr, "temporary directory:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestCountsEqualEndToEnd runs the real binaries at several rates, bucket
// sizes and thread counts: every tuple the sender emitted must be consumed.
func TestCountsEqualEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		rate, scenario  string
		bucket, threads int
		lanes           int
		count           int
	}{
		{"50k", "ad-event", 1, 1, 1, 20000},
		{"1M", "synthetic-100", 100, 1, 1, 500000},
		{"400k", "ad-event", 10, 2, 2, 200000},
		{"300k", "synthetic:300", 25, 3, 1, 150000},
		{"0", "ad-event", 50, 2, 2, 300000},
		{"0", "drain", 100, 1, 1, 500000},
	} {
		name := fmt.Sprintf("rate=%s/%s/bucket=%d/threads=%d/lanes=%d", tc.rate, tc.scenario, tc.bucket, tc.threads, tc.lanes)
		t.Run(name, func(t *testing.T) {
			recv, scenario := []string{"--scenario", tc.scenario}, tc.scenario
			if tc.scenario == "drain" {
				recv, scenario = []string{"--drain"}, "synthetic-100"
			}
			pr := &Pair{Bin: binDir, Lanes: tc.lanes,
				RecvArgs: append(recv, "--expect-streams", fmt.Sprint(tc.threads)),
				SendArgs: []string{"--scenario", scenario, "--rate", tc.rate, "--bucket", fmt.Sprint(tc.bucket),
					"--threads", fmt.Sprint(tc.threads), "--count", fmt.Sprint(tc.count), "--duration", "0", "--idle", "sleep"}}
			pr.Run(t)
			if pr.SendExit != 0 || pr.RecvExit != 0 {
				t.Fatalf("exit codes send=%d recv=%d\n%s\n%s", pr.SendExit, pr.RecvExit, pr.SendProc.Stderr.String(), pr.RecvProc.Stderr.String())
			}
			s, r := pr.Send, pr.Recv
			if s.Emitted != uint64(tc.count) || s.Shortfall != 0 || s.DroppedBkts != 0 {
				t.Fatalf("sender emitted %d of %d, shortfall %d, dropped %d", s.Emitted, tc.count, s.Shortfall, s.DroppedBkts)
			}
			if !r.Complete || r.Consumed != s.Emitted || r.Sent != s.Emitted || r.Missing != 0 || len(r.Streams) != tc.threads {
				t.Fatalf("receiver complete=%v consumed=%d sent=%d missing=%d streams=%d reason=%q",
					r.Complete, r.Consumed, r.Sent, r.Missing, len(r.Streams), r.Reason)
			}
			if r.Drain != (tc.scenario == "drain") || (!r.Drain && r.Latency.Count != s.Emitted) {
				t.Fatalf("drain=%v, latency recorded for %d tuples", r.Drain, r.Latency.Count)
			}
			if r.Duplicates+r.OutOfSeq+r.Malformed != 0 {
				t.Fatalf("dups %d out-of-seq %d malformed %d", r.Duplicates, r.OutOfSeq, r.Malformed)
			}
		})
	}
}

// TestSlowReceiverShowsLatenessOrDrops makes the consumer slower than the
// sender: block mode must show the sender falling behind (shortfall and
// lateness), drop mode must count dropped buckets; neither may report a
// silent equality at the target rate.
func TestSlowReceiverShowsLatenessOrDrops(t *testing.T) {
	// Consumer capacity ~ 1 tuple / 20 us = 50 k/s, offered 200 k/s for 2 s.
	common := []string{"--rate", "200k", "--bucket", "10", "--duration", "2s", "--hwm", "10", "--idle", "sleep"}
	recv := []string{"--work", "20us", "--ring", "4", "--hwm", "10", "--expect-streams", "1"}
	t.Run("block", func(t *testing.T) {
		pr := &Pair{Bin: binDir, RecvArgs: recv, SendArgs: append([]string{"--overflow", "block"}, common...)}
		pr.Run(t)
		s, r := pr.Send, pr.Recv
		if s.Shortfall < s.ScheduledTups/2 || s.Lateness.P99 < int64(100*time.Millisecond) {
			t.Fatalf("block mode: shortfall %d of %d scheduled, p99 lateness %v: the sender did not fall behind",
				s.Shortfall, s.ScheduledTups, time.Duration(s.Lateness.P99))
		}
		if !r.Complete || r.Consumed != s.Emitted {
			t.Fatalf("block mode loses nothing: consumed %d of %d emitted (%s)", r.Consumed, s.Emitted, r.Reason)
		}
	})
	t.Run("drop", func(t *testing.T) {
		pr := &Pair{Bin: binDir, RecvArgs: recv, SendArgs: append([]string{"--overflow", "drop"}, common...)}
		pr.Run(t)
		s, r := pr.Send, pr.Recv
		if s.DroppedBkts == 0 || s.DroppedTups != s.DroppedBkts*10 {
			t.Fatalf("drop mode: %d buckets (%d tuples) dropped; expected drops", s.DroppedBkts, s.DroppedTups)
		}
		if !r.Complete || r.Consumed != s.Emitted || r.Streams[0].SenderDropped != s.DroppedBkts {
			t.Fatalf("drop mode: consumed %d of %d emitted; marker says %d dropped, sender %d (%s)",
				r.Consumed, s.Emitted, r.Streams[0].SenderDropped, s.DroppedBkts, r.Reason)
		}
		if s.Emitted+s.DroppedTups != s.ScheduledTups-s.Shortfall {
			t.Fatalf("emitted %d + dropped %d != scheduled %d - shortfall %d", s.Emitted, s.DroppedTups, s.ScheduledTups, s.Shortfall)
		}
	})
}

// TestSIGTERMStillSendsEndMarkers interrupts a long run: the sender must
// stop, send its end markers, and the receiver must account everything.
func TestSIGTERMStillSendsEndMarkers(t *testing.T) {
	base, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	ep := fmt.Sprintf("tcp://127.0.0.1:%d", base)
	rp, err := Start(filepath.Join(binDir, "dgrecv"), "--bind", ep, "--json", "--metrics-addr", "", "--expect-streams", "2")
	if err != nil {
		t.Fatal(err)
	}
	rp.WaitForLine("listening on", 5*time.Second)
	sp, err := Start(filepath.Join(binDir, "dgsend"), "--connect", ep, "--json", "--metrics-addr", "", "--threads", "2",
		"--rate", "200k", "--bucket", "10", "--duration", "1h", "--idle", "sleep", "--progress", "always")
	if err != nil {
		t.Fatal(err)
	}
	if !sp.WaitForLine("emitted", 10*time.Second) { // first progress line: it is sending
		t.Fatalf("no progress from dgsend: %s", sp.Stderr.String())
	}
	if err := sp.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := sp.Wait(15 * time.Second); err != nil {
		t.Fatalf("dgsend after SIGTERM: %v\n%s", err, sp.Stderr.String())
	}
	if err := rp.Wait(15 * time.Second); err != nil {
		t.Fatalf("dgrecv: %v\n%s", err, rp.Stderr.String())
	}
	var s struct {
		Emitted     uint64 `json:"emitted_tuples"`
		Interrupted bool   `json:"interrupted"`
	}
	var r struct {
		Complete bool   `json:"complete"`
		Consumed uint64 `json:"consumed_tuples"`
		Streams  []struct {
			EndReason string `json:"end_reason"`
		} `json:"streams"`
	}
	mustJSON(t, sp.Stdout.Bytes(), &s)
	mustJSON(t, rp.Stdout.Bytes(), &r)
	if !s.Interrupted || s.Emitted == 0 || !r.Complete || r.Consumed != s.Emitted || len(r.Streams) != 2 || r.Streams[0].EndReason != "interrupted" {
		t.Fatalf("sender %+v, receiver %+v", s, r)
	}
}

// TestMalformedInputIsCountedAndSkipped pushes garbage, a wrong-version and
// a truncated bucket into dgrecv in the middle of a real stream.
func TestMalformedInputIsCountedAndSkipped(t *testing.T) {
	base, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	ep := fmt.Sprintf("tcp://127.0.0.1:%d", base)
	rp, err := Start(filepath.Join(binDir, "dgrecv"), "--bind", ep, "--json", "--metrics-addr", "", "--expect-streams", "1")
	if err != nil {
		t.Fatal(err)
	}
	rp.WaitForLine("listening on", 5*time.Second)
	ctx, _ := zmq.NewContext()
	defer ctx.Term()
	push, _ := ctx.NewSocket(zmq.PUSH)
	defer push.Close()
	_ = push.SetLinger(time.Second)
	if err := push.Connect(ep); err != nil {
		t.Fatal(err)
	}
	valid := []byte("CP\x01\x01\x00\x09\x00\x00" + strings.Repeat("\x00", 16)) // stream 0x0900, seq 0, 0 tuples, 0 bytes
	for _, m := range [][]byte{[]byte("hello"), []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), append([]byte("CP\x07"), valid[3:]...), valid[:20], append(append([]byte{}, valid...), 1, 2)} {
		if _, err := push.SendBytes(m, 0); err != nil {
			t.Fatal(err)
		}
	}
	sp, err := Start(filepath.Join(binDir, "dgsend"), "--connect", ep, "--json", "--metrics-addr", "", "--rate", "100k", "--count", "10000", "--duration", "0", "--bucket", "10", "--idle", "sleep")
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.Wait(20 * time.Second); err != nil {
		t.Fatal(err, sp.Stderr.String())
	}
	if err := rp.Wait(20 * time.Second); err != nil {
		t.Fatal(err, rp.Stderr.String())
	}
	var r struct {
		Complete    bool              `json:"complete"`
		Consumed    uint64            `json:"consumed_tuples"`
		Malformed   uint64            `json:"malformed_messages"`
		MalformedBy map[string]uint64 `json:"malformed_by_reason"`
	}
	mustJSON(t, rp.Stdout.Bytes(), &r)
	if !r.Complete || r.Consumed != 10000 || r.Malformed != 5 || r.MalformedBy["short"] != 2 || r.MalformedBy["magic"] != 1 || r.MalformedBy["version"] != 1 || r.MalformedBy["length"] != 1 {
		t.Fatalf("receiver: %+v", r)
	}
	if !strings.Contains(rp.Stderr.String(), "malformed") {
		t.Fatalf("malformed input was not logged:\n%s", rp.Stderr.String())
	}
}

var metricLine = regexp.MustCompile(`^(cp_[a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$`)

func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	m, err := tryScrape(addr)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// tryScrape reads the metrics at addr, summed over label sets. It sends
// the hostile tests' token, which a server without a token ignores and an
// agent started with it requires (/metrics included).
func tryScrape(addr string) (map[string]float64, error) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+hostileToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: HTTP %d", addr, resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if m := metricLine.FindStringSubmatch(sc.Text()); m != nil {
			v, _ := strconv.ParseFloat(m[3], 64)
			out[m[1]] += v // sum over label sets
		}
	}
	return out, sc.Err()
}

// waitMetric scrapes addr until the metric (summed over its label sets)
// satisfies ok, and returns it; after within, the test fails. Tests wait
// on this event instead of sleeping for a time that a busy machine may
// not honour.
func waitMetric(t *testing.T, addr, name string, within time.Duration, ok func(float64) bool) float64 {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		v, found := scrape(t, addr)[name]
		if found && ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s on %s is %v after %v (present: %v)", name, addr, v, within, found)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func positive(v float64) bool { return v > 0 }

// TestMetricsMoveWithTheRun scrapes both binaries during a run: counters
// must grow, never exceed what the final result says, and the final scrape
// of the receiver must equal its result.
func TestMetricsMoveWithTheRun(t *testing.T) {
	base, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	ep := fmt.Sprintf("tcp://127.0.0.1:%d", base)
	rp, err := Start(filepath.Join(binDir, "dgrecv"), "--bind", ep, "--json", "--metrics-addr", "127.0.0.1:0", "--settle", "1s")
	if err != nil {
		t.Fatal(err)
	}
	rm, err := rp.MetricsAddr(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := Start(filepath.Join(binDir, "dgsend"), "--connect", ep, "--json", "--metrics-addr", "127.0.0.1:0", "--rate", "200k", "--duration", "3s", "--bucket", "20", "--idle", "sleep")
	if err != nil {
		t.Fatal(err)
	}
	sm, err := sp.MetricsAddr(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Two scrapes about a second apart while data flows; the rate between
	// them is judged against the time that really passed between them.
	waitMetric(t, rm, "cp_receiver_consumed_tuples_total", 10*time.Second, positive)
	t0 := time.Now()
	a := scrape(t, sm)
	ra := scrape(t, rm)
	time.Sleep(time.Second)
	t1 := time.Now()
	b := scrape(t, sm)
	rb := scrape(t, rm)
	t2 := time.Now()
	if !(b["cp_sender_tuples_emitted_total"] > a["cp_sender_tuples_emitted_total"] && a["cp_sender_tuples_emitted_total"] > 0) {
		t.Fatalf("sender counter did not move: %v -> %v", a["cp_sender_tuples_emitted_total"], b["cp_sender_tuples_emitted_total"])
	}
	if !(rb["cp_receiver_consumed_tuples_total"] > ra["cp_receiver_consumed_tuples_total"]) || rb["cp_receiver_tuples_received_total"] < rb["cp_receiver_consumed_tuples_total"] {
		t.Fatalf("receiver counters: %v -> %v consumed, %v received", ra["cp_receiver_consumed_tuples_total"], rb["cp_receiver_consumed_tuples_total"], rb["cp_receiver_tuples_received_total"])
	}
	// The tuples emitted between the scrapes match 200 k/s over the time
	// between them: the first scrape ended in [t0, t1), the second in
	// [t1, t2), and a bucket (20 tuples) may straddle either end.
	d := b["cp_sender_tuples_emitted_total"] - a["cp_sender_tuples_emitted_total"]
	lo, hi := 200e3*t1.Sub(t0).Seconds()*0.9-40, 200e3*t2.Sub(t0).Seconds()*1.1+40
	if late, all := b["cp_sender_late_slots_total"], b["cp_sender_buckets_emitted_total"]; late > 0.01*all {
		t.Logf("%v of %v slots were late: the machine is busy, so the sender may trail its schedule", late, all)
		lo *= 0.5
	}
	if d < lo || d > hi {
		t.Fatalf("emitted %v tuples between scrapes %v apart at 200k/s, want %.0f..%.0f", d, t2.Sub(t0), lo, hi)
	}
	if b["cp_sender_lateness_seconds_count"] == 0 || b["cp_sender_target_rate_tuples_per_second"] != 200e3 {
		t.Fatalf("lateness histogram count %v, target gauge %v", b["cp_sender_lateness_seconds_count"], b["cp_sender_target_rate_tuples_per_second"])
	}
	// While the receiver settles after the end marker (--settle), its final
	// counters are scrapable.
	if err := sp.Wait(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	final := scrape(t, rm)
	if err := rp.Wait(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	var r struct {
		Consumed uint64 `json:"consumed_tuples"`
	}
	mustJSON(t, rp.Stdout.Bytes(), &r)
	if final["cp_receiver_consumed_tuples_total"] != float64(r.Consumed) || final["cp_receiver_latency_seconds_count"] != float64(r.Consumed) {
		t.Fatalf("final scrape consumed=%v latency count=%v, result consumed=%d", final["cp_receiver_consumed_tuples_total"], final["cp_receiver_latency_seconds_count"], r.Consumed)
	}
}

// TestCLIErrors checks that bad input gets a clear message and a non-zero
// exit (cli.ExitUsage for every usage error, in all three binaries, with
// one line pointing to --help and no usage dump), and that --help shows
// examples.
func TestCLIErrors(t *testing.T) {
	const usage = sweep.ExitInvalidPlan // cli.ExitUsage: one status for usage errors in all three binaries
	for _, tc := range []struct {
		bin  string
		args []string
		want string
		code int
	}{
		{"dgsend", []string{"--rate", "fast"}, "not a number of tuples per second", usage},
		{"dgsend", []string{"--rate", "2m"}, `write 2M for millions per second`, usage},
		{"dgsend", []string{"--connect", "tcp://127.0.0.1:1", "--scenario", "nope"}, "not a built-in", usage},
		{"dgsend", []string{"--connect", "tcp://127.0.0.1:1", "--bucket", "0"}, "bucket size must be", usage},
		{"dgsend", []string{"--connect", "tcp://127.0.0.1:1", "--overflow", "maybe"}, "overflow policy must be", usage},
		{"dgsend", []string{"--connect", "nonsense"}, "not a ZeroMQ endpoint", usage},
		{"dgsend", []string{"--connect", "tcp://127.0.0.1:1", "--threads", "-1"}, "threads must be 1..256, got -1", usage},
		{"dgsend", []string{"--connect", "tcp://127.0.0.1:1", "--scenario", "/dev/zero"}, "not a regular file", usage},
		{"dgsend", []string{"--connect", "tcp://127.0.0.1:1", "--shape", "replay:/dev/zero"}, "not a regular file", usage},
		{"dgsend", []string{"--bogus"}, "Run 'dgsend --help' for usage.", usage},
		{"dgrecv", []string{"--ring", "4611686018427387904"}, "ring capacity must be a power of two from 2 to 16384", usage},
		{"dgrecv", []string{"--work", "1h"}, "work per tuple must be 0 to 100ms", usage},
		{"dgsend", []string{"--agent", "--token", "short"}, "at least 16", 1},
		// A rate the threads cannot send is found by running: not a usage error.
		{"dgsend", []string{"--connect", "tcp://127.0.0.1:1", "--rate", "1G", "--metrics-addr", ""}, "the most 1 thread(s) can do", 1},
		{"dgrecv", []string{"--schema", "xml"}, "unknown schema", usage},
		{"dgrecv", []string{"--ring", "3"}, "power of two", usage},
		{"dgrecv", []string{"--lanes", "2", "--bind", "tcp://*:x"}, "numeric port", usage},
		{"dgrecv", []string{"extra"}, "Run 'dgrecv --help' for usage.", usage},
		{"dgrecv", []string{"--hgrm", "/nonexistent/lat.hgrm"}, "--hgrm: its directory: stat /nonexistent", usage},
		{"dgrecv", []string{"--hgrm", "lat.hlog"}, "would be both the .hgrm and the histogram log", usage},
		{"dgrecv", []string{"--agent", "--hgrm", "lat.hgrm"}, "--hgrm is for a run of its own", usage},
		{"cpsweep", []string{"analyse", "runs/x"}, `did you mean analyze?`, usage},
		{"cpsweep", []string{"deploy", "kubernets"}, `did you mean kubernetes?`, usage},
		{"cpsweep", []string{"demo", "nats", "--duration", "2s"}, "--duration is a sweep flag: put it after --", usage},
		{"cpsweep", []string{"--start", "2m"}, "ambiguous", usage},
		{"dgsend", []string{"--help"}, "Examples:", 0},
		{"dgrecv", []string{"--help"}, "Examples:", 0},
	} {
		p, err := Start(filepath.Join(binDir, tc.bin), tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Wait(20 * time.Second)
		out := p.Stdout.String() + p.Stderr.String()
		if !strings.Contains(out, tc.want) {
			t.Errorf("%s %v: output lacks %q:\n%s", tc.bin, tc.args, tc.want, out)
		}
		if code := ExitCode(err); code != tc.code {
			t.Errorf("%s %v: exit %d, want %d (%v)", tc.bin, tc.args, code, tc.code, err)
		}
		if tc.code == usage && (strings.Contains(out, "Flags:") || !strings.Contains(out, "--help' for usage.")) {
			t.Errorf("%s %v: a usage error prints the error and a pointer to --help, not the usage:\n%s", tc.bin, tc.args, out)
		}
		if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
			t.Errorf("%s %v crashed:\n%s", tc.bin, tc.args, out)
		}
	}
}

// TestVersionNamesTheCommit: --version of every binary names the commit
// of the checkout it was built from.
func TestVersionNamesTheCommit(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout git can read (%v): the binaries carry no commit", err)
	}
	for _, bin := range []string{"dgsend", "dgrecv", "cpsweep"} {
		out, err := exec.Command(filepath.Join(binDir, bin), "--version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), bin+" ") || !strings.Contains(string(out), "commit "+string(head[:12])) {
			t.Errorf("%s --version: %v\n%s, want commit %s", bin, err, out, head[:12])
		}
	}
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("bad JSON (%v):\n%s", err, b)
	}
}

// TestReversedDirections binds the sender and connects the receiver, as
// when a system under test sits in between (dgsend -> system -> dgrecv):
// here nothing is in between, which checks both ends of that wiring.
func TestReversedDirections(t *testing.T) {
	base, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	ep := fmt.Sprintf("tcp://127.0.0.1:%d", base)
	sp, err := Start(filepath.Join(binDir, "dgsend"), "--bind", ep, "--json", "--metrics-addr", "", "--rate", "100k",
		"--count", "20000", "--duration", "0", "--bucket", "10")
	if err != nil {
		t.Fatal(err)
	}
	rp, err := Start(filepath.Join(binDir, "dgrecv"), "--connect", ep, "--schema", "raw", "--json", "--metrics-addr", "", "--expect-streams", "1")
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.Wait(30 * time.Second); err != nil {
		t.Fatal(err, sp.Stderr.String())
	}
	if err := rp.Wait(30 * time.Second); err != nil {
		t.Fatal(err, rp.Stderr.String())
	}
	var r struct {
		Complete bool   `json:"complete"`
		Consumed uint64 `json:"consumed_tuples"`
		Latency  struct {
			Count uint64 `json:"count"`
		} `json:"latency"`
	}
	mustJSON(t, rp.Stdout.Bytes(), &r)
	if !r.Complete || r.Consumed != 20000 || r.Latency.Count != 20000 {
		t.Fatalf("receiver behind --connect: %+v", r)
	}
}

// TestMetricsExactAtLowRate: at 10 tuples/s the sender's counters are
// current at every scrape (published on a time bound, not every 64
// slots), and its lateness buckets are in seconds, the same on every host.
func TestMetricsExactAtLowRate(t *testing.T) {
	port := mustPort(t)
	rp, err := Start(filepath.Join(binDir, "dgrecv"), "--bind", fmt.Sprintf("tcp://127.0.0.1:%d", port), "--metrics-addr", "", "--schema", "synthetic")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rp.Signal(syscall.SIGKILL); _ = rp.Wait(5 * time.Second) }()
	sp, err := Start(filepath.Join(binDir, "dgsend"), "--connect", fmt.Sprintf("tcp://127.0.0.1:%d", port), "--metrics-addr", "127.0.0.1:0",
		"--rate", "10", "--duration", "4s", "--scenario", "synthetic:100", "--json")
	if err != nil {
		t.Fatal(err)
	}
	sm, err := sp.MetricsAddr(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Between two scrapes a second apart, the counter moves by what 10
	// tuples/s sends in the time that really passed (±1 tuple at each
	// end): with publication every 64 slots it would not move at all.
	waitMetric(t, sm, "cp_sender_tuples_emitted_total", 10*time.Second, positive)
	t0 := time.Now()
	c0 := scrape(t, sm)["cp_sender_tuples_emitted_total"]
	t1 := time.Now()
	time.Sleep(time.Second)
	t2 := time.Now()
	c1 := scrape(t, sm)["cp_sender_tuples_emitted_total"]
	t3 := time.Now()
	if lo, hi := 10*t2.Sub(t1).Seconds()-2, 10*t3.Sub(t0).Seconds()+2; c1-c0 < lo || c1-c0 > hi {
		t.Fatalf("the counter moved %v in %v at 10 tuples/s, want %.1f..%.1f", c1-c0, t3.Sub(t0), lo, hi)
	}
	resp, err := http.Get("http://" + sm + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// 2^10-1 ns: a bucket bound in seconds, whatever the host's TSC rate.
	if !strings.Contains(string(body), `cp_sender_lateness_seconds_bucket{stream="0",thread="0",le="1.023e-06"}`) {
		t.Fatalf("lateness buckets are not in seconds:\n%s", grepLines(string(body), "lateness_seconds_bucket"))
	}
	_ = sp.Wait(20 * time.Second)
}
