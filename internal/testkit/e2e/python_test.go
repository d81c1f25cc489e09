package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/internal/testkit/wirecorpus"
	"github.com/cloudprofiler-go/cp/receiver/tally"
)

// python returns an interpreter that has pyzmq and msgpack (Debian's
// python3-zmq and python3-msgpack, which .ci/run installs), or skips.
func python(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import zmq, msgpack").Run() == nil {
			return py
		}
	}
	skipOrFail(t, "no python3 with zmq and msgpack (apt-get install python3-zmq python3-msgpack): cross-language check skipped")
	return ""
}

// TestPythonProducerFromTheDocs runs the producer example of docs/wire.md
// as written, against dgrecv: the specification is what is tested.
func TestPythonProducerFromTheDocs(t *testing.T) {
	py := python(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "wire.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```python\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/wire.md has no python example")
	}
	base, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	ep := fmt.Sprintf("tcp://127.0.0.1:%d", base)
	script := strings.ReplaceAll(string(m[1]), "tcp://127.0.0.1:5555", ep)
	rp, err := Start(filepath.Join(binDir, "dgrecv"), "--bind", ep, "--schema", "synthetic", "--json", "--metrics-addr", "", "--expect-streams", "1")
	if err != nil {
		t.Fatal(err)
	}
	if !rp.WaitForLine("listening on", 10*time.Second) {
		t.Fatalf("dgrecv did not start:\n%s", rp.Stderr.String())
	}
	if !strings.Contains(script, "ctx.term()") {
		t.Fatal("the example in docs/wire.md must close its socket with a linger and terminate its context, or its last messages can be lost at exit")
	}
	if out, err := exec.Command(py, "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("python producer: %v\n%s", err, out)
	}
	if err := rp.Wait(20 * time.Second); err != nil {
		t.Fatalf("dgrecv: %v\n%s", err, rp.Stderr.String())
	}
	var r struct {
		Complete  bool   `json:"complete"`
		Consumed  uint64 `json:"consumed_tuples"`
		Malformed uint64 `json:"malformed_messages"`
		Streams   []struct {
			Stream uint32 `json:"stream"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(rp.Stdout.Bytes(), &r); err != nil {
		t.Fatal(err, rp.Stdout.String())
	}
	if !r.Complete || r.Consumed != 1000 || r.Malformed != 0 || len(r.Streams) != 1 || r.Streams[0].Stream != 7<<8 {
		t.Fatalf("dgrecv accounted the Python stream as %+v", r)
	}
}

// pyConsumer decodes dgsend's messages with the stock msgpack library and
// checks ids, times and the end marker.
const pyConsumer = `
import json, struct, sys, zmq, msgpack
ctx = zmq.Context(); pull = ctx.socket(zmq.PULL); pull.bind(sys.argv[1]); pull.RCVTIMEO = 20000
print("bound", file=sys.stderr, flush=True)
tuples, buckets, next_id, ok = 0, 0, None, True
while True:
    m = pull.recv()
    magic, ver, kind, stream, seq, count, blen = struct.unpack_from("<2sBBIQII", m)
    assert magic == b"CP" and ver == 1 and blen == len(m) - 24
    if kind == 2:
        end = msgpack.unpackb(m[24:])
        break
    ok &= seq == buckets
    up = msgpack.Unpacker(raw=True); up.feed(m[24:]); n = 0
    for t in up:
        tid, intended = t[0], t[1]
        ok &= (tid >> 48) == stream and (next_id is None or tid == next_id) and intended > 1.6e18
        ok &= len(t) == 9 and len(t[2]) == 16 and t[7] == intended // 1000000
        next_id = tid + 1; n += 1
    ok &= n == count
    tuples += n; buckets += 1
print(json.dumps({"tuples": tuples, "buckets": buckets, "end": {k.decode() if isinstance(k, bytes) else k: v for k, v in end.items()}, "ok": bool(ok)}))
`

// TestPythonConsumerReadsDgsend checks the other direction: a program in
// another language decodes dgsend's buckets and end marker.
func TestPythonConsumerReadsDgsend(t *testing.T) {
	py := python(t)
	base, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	ep := fmt.Sprintf("tcp://127.0.0.1:%d", base)
	cons, err := Start(py, "-c", pyConsumer, ep)
	if err != nil {
		t.Fatal(err)
	}
	if !cons.WaitForLine("bound", 10*time.Second) {
		t.Fatalf("the Python consumer did not bind:\n%s", cons.Stderr.String())
	}
	sp, err := Start(filepath.Join(binDir, "dgsend"), "--connect", ep, "--json", "--metrics-addr", "", "--rate", "100k",
		"--count", "5000", "--duration", "0", "--bucket", "7", "--scenario", "ad-event")
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.Wait(20 * time.Second); err != nil {
		t.Fatal(err, sp.Stderr.String())
	}
	if err := cons.Wait(20 * time.Second); err != nil {
		t.Fatalf("python consumer: %v\n%s", err, cons.Stderr.String())
	}
	var got struct {
		Tuples, Buckets uint64
		End             map[string]any
		OK              bool
	}
	if err := json.Unmarshal(cons.Stdout.Bytes(), &got); err != nil {
		t.Fatal(err, cons.Stdout.String())
	}
	// 5000 tuples in buckets of 7 round up to 715 buckets = 5005 tuples.
	if !got.OK || got.Tuples != 5005 || got.Buckets != 715 || got.End["tuples"] != float64(5005) || got.End["reason"] != "completed" {
		t.Fatalf("python consumer saw %+v", got)
	}
}

// pyCorpusSender sends every case of the conformance corpus, each to its
// own endpoint (argv[2:]), with nothing but the JSON file and pyzmq.
const pyCorpusSender = `
import json, sys, zmq
cases = json.load(open(sys.argv[1]))["cases"]
ctx = zmq.Context()
for case, ep in zip(cases, sys.argv[2:]):
    push = ctx.socket(zmq.PUSH); push.SNDTIMEO = 10000; push.connect(ep)
    for parts in case["messages"]:
        push.send_multipart([bytes.fromhex(p) for p in parts])
    push.close(linger=5000)
ctx.term()
`

// TestPythonSendsTheConformanceCorpus: a Python producer reads
// testdata/wire/cases.json and sends every case to its own dgrecv; each
// dgrecv's JSON must show exactly the outcome the case requires.
func TestPythonSendsTheConformanceCorpus(t *testing.T) {
	py := python(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	corpusPath := filepath.Join(root, wirecorpus.File)
	c, err := wirecorpus.Load(corpusPath)
	if err != nil {
		t.Fatal(err)
	}
	var procs []*Proc
	eps := []string{}
	defer func() {
		for _, p := range procs {
			_ = p.Signal(syscall.SIGKILL)
			_ = p.Wait(5 * time.Second)
		}
	}()
	// --end-timeout is a fallback only (a case whose streams never end is
	// stopped below once its counters show every message): at 500 ms a
	// Python sender starved by the suite beside it ended a receiver early.
	for _, tc := range c.Cases {
		p, err := Start(filepath.Join(binDir, "dgrecv"), "--bind", "tcp://127.0.0.1:*", "--schema", tc.Schema, "--json", "--metrics-addr", "127.0.0.1:0",
			"--settle", "100ms", "--end-timeout", "10s", "--duration", "60s", "--calibrate", "20ms", "--progress", "never")
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	listening := regexp.MustCompile(`listening on (\S+)`)
	for _, p := range procs {
		if !p.WaitForLine("listening on", 10*time.Second) {
			t.Fatalf("dgrecv did not start:\n%s", p.Stderr.String())
		}
		eps = append(eps, listening.FindStringSubmatch(p.Stderr.String())[1])
	}
	if out, err := exec.Command(py, append([]string{"-c", pyCorpusSender, corpusPath}, eps...)...).CombinedOutput(); err != nil {
		t.Fatalf("python sender: %v\n%s", err, out)
	}
	// A receiver whose streams did not end (the malformed cases) reports
	// what it has when told to stop: each is stopped once its counters
	// show every message of its case (or after 20 s; the JSON below then
	// says what is missing).
	for i, tc := range c.Cases {
		addr, err := procs[i].MetricsAddr(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		awaitCase(t, addr, tc, 20*time.Second)
	}
	for _, p := range procs {
		_ = p.Signal(syscall.SIGTERM)
	}
	for i, tc := range c.Cases {
		_ = procs[i].Wait(20 * time.Second)
		var res tally.Result
		if err := json.Unmarshal(procs[i].Stdout.Bytes(), &res); err != nil {
			t.Fatalf("%s: %v\n%s", tc.Name, err, procs[i].Stderr.String())
		}
		got := wirecorpus.GotFrom(&res)
		for _, d := range tc.Check(got) {
			t.Errorf("%s (rule: %s): %s", tc.Name, tc.Rule, d)
		}
	}
}

// awaitCase waits until a receiver's metrics account for every message
// of the case: buckets, duplicates, stale buckets, malformed messages and
// end markers.
func awaitCase(t *testing.T, addr string, tc wirecorpus.Case, within time.Duration) {
	t.Helper()
	want := map[string]float64{}
	for _, n := range tc.Expect.Malformed {
		want["cp_receiver_malformed_messages_total"] += float64(n)
	}
	for _, st := range tc.Expect.Streams {
		want["cp_receiver_buckets_received_total"] += float64(st.Buckets)
		want["cp_receiver_buckets_duplicate_total"] += float64(st.Duplicates)
		want["cp_receiver_buckets_stale_total"] += float64(st.Stale)
		if st.Ended {
			want["cp_receiver_stream_ended"]++
		}
	}
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got, err := tryScrape(addr)
		if err != nil {
			return // the receiver has finished (its streams ended)
		}
		done := true
		for name, v := range want {
			done = done && got[name] == v
		}
		if done {
			return
		}
	}
	t.Logf("%s: the counters did not reach %v within %v", tc.Name, want, within)
}
