package e2e

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/receiver/tally"
	sendtally "github.com/cloudprofiler-go/cp/sender/tally"
)

// procSample is one look at a running binary.
type procSample struct {
	rssMB      float64
	threads    int
	goroutines int
}

func sampleProc(pid int, metrics string) (procSample, error) {
	var s procSample
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			kb, _ := strconv.ParseFloat(f[1], 64)
			s.rssMB = kb / 1024
		case "Threads:":
			s.threads, _ = strconv.Atoi(f[1])
		}
	}
	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
			s.goroutines, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return s, nil
}

// drift compares the median of the last third of v with the median of the
// first third: a leak grows it, scrape-to-scrape noise (a goroutine
// serving the scrape, a GC cycle) does not.
func drift(v []float64) float64 {
	n := len(v) / 3
	if n == 0 {
		return 0
	}
	first, last := median(v[:n]), median(v[len(v)-n:])
	if first <= 0 {
		return math.Inf(1)
	}
	return (last - first) / first
}

// spread is (max - min) / min of v.
func spread(v []float64) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range v {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	if lo <= 0 {
		return math.Inf(1)
	}
	return (hi - lo) / lo
}

// TestBenchSoak: dgsend -> dgrecv at a moderate rate for CP_SOAK (default
// 30m), sampling both processes' RSS, OS threads and goroutines every 10 s.
// After the first minute every series must stay flat within 5% (the median
// of its last third within 5% of the median of its first third; the
// min..max range is printed too), and no tuple may be lost.
func TestBenchSoak(t *testing.T) {
	benchOnly(t)
	length := 30 * time.Minute
	if v := os.Getenv("CP_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("CP_SOAK=%q: %v", v, err)
		}
		length = d
	}
	port := mustPort(t)
	recv, err := Start(filepath.Join(binDir, "dgrecv"), "--bind", fmt.Sprintf("tcp://127.0.0.1:%d", port), "--metrics-addr", "127.0.0.1:0",
		"--schema", "synthetic", "--expect-streams", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = recv.Signal(syscall.SIGKILL); _ = recv.Wait(5 * time.Second) }()
	rm, err := recv.MetricsAddr(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	snd, err := Start(filepath.Join(binDir, "dgsend"), "--connect", fmt.Sprintf("tcp://127.0.0.1:%d", port), "--metrics-addr", "127.0.0.1:0",
		"--rate", "200k", "--bucket", "10", "--scenario", "synthetic-100", "--duration", length.String(), "--json")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = snd.Signal(syscall.SIGKILL); _ = snd.Wait(5 * time.Second) }()
	sm, err := snd.MetricsAddr(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	series := map[string][]float64{}
	started := time.Now()
	for {
		time.Sleep(10 * time.Second)
		if time.Since(started) > length-3*time.Second {
			break // the sender is finishing
		}
		if time.Since(started) < time.Minute {
			continue // start-up: pools and buffers fill
		}
		for name, p := range map[string]struct {
			pid     int
			metrics string
		}{"dgsend": {snd.Cmd.Process.Pid, sm}, "dgrecv": {recv.Cmd.Process.Pid, rm}} {
			s, err := sampleProc(p.pid, p.metrics)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			series[name+" rss_mb"] = append(series[name+" rss_mb"], s.rssMB)
			series[name+" threads"] = append(series[name+" threads"], float64(s.threads))
			series[name+" goroutines"] = append(series[name+" goroutines"], float64(s.goroutines))
		}
	}
	serr, rerr := snd.Wait(time.Minute), recv.Wait(time.Minute)
	var sr sendtally.Result
	var rr tally.Result
	mustJSON(t, snd.Stdout.Bytes(), &sr)
	mustJSON(t, recv.Stdout.Bytes(), &rr)
	lost := int64(sr.Emitted) - int64(rr.Consumed)
	flat := true
	fig := map[string]any{"length": length.String(), "rate": 200000, "emitted": sr.Emitted, "consumed": rr.Consumed, "lost": lost,
		"send_exit": ExitCode(serr), "recv_exit": ExitCode(rerr)}
	for name, v := range series {
		sp, dr := spread(v), drift(v)
		flat = flat && math.Abs(dr) <= 0.05
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, x := range v {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
		fig[name] = fmt.Sprintf("%.1f..%.1f, drift %+.1f%% (%d samples)", lo, hi, 100*dr, len(v))
		t.Logf("SOAK %-20s %.1f .. %.1f  (spread %.1f%%)  drift first->last third %+.2f%%", name, lo, hi, 100*sp, 100*dr)
	}
	ok := flat && lost == 0 && rr.Complete && ExitCode(serr) == 0 && ExitCode(rerr) == 0
	t.Logf("SOAK %v at 200k tuples/s: emitted %d, consumed %d, lost %d; every series' drift within 5%%: %v -> %s", length, sr.Emitted, rr.Consumed, lost, flat, verdict(ok))
	record(t, "soak", fig)
	if !ok {
		t.Errorf("soak failed: lost %d, flat %v, complete %v, exits %d/%d", lost, flat, rr.Complete, ExitCode(serr), ExitCode(rerr))
	}
}
