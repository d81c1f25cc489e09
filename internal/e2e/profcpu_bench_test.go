package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestBenchProfilerCPU: the profiler's cost as CPU time per tuple, which a
// busy shared host disturbs far less than a throughput (issue 16; the
// sweeps of TestBenchProfilerOverhead move by ±15% between runs, more than
// the 5% to be shown). Per repeat and per handler configuration,
// interleaved: dgsend sends 20 M synthetic-100 tuples unpaced in buckets
// of 100 into a decoding dgrecv, both profiled alike (every standard
// channel), and the CPU time of both processes (user + system, every
// thread: the compression workers and libzmq's I/O threads too) is read
// when they exit. The same pair with one bucket measures the fixed cost of
// starting and stopping (TSC calibration, writing the logs' headers),
// which is subtracted. The figure per configuration is the median CPU per
// tuple over the repeats, and its ratio to the unprofiled one: at the
// maximum sustainable rate both cores are busy, so that ratio is what the
// profiler takes from the throughput (the paper's Table 4: 2.2%).
func TestBenchProfilerCPU(t *testing.T) {
	benchOnly(t)
	dir := t.TempDir()
	configs := []struct{ name, yaml string }{
		{"off", ""},
		{"null", "default: {handler: null}\n"},
		{"counters", "default: {handler: spc}\n"},
		{"xoy-1of100", "default: {handler: xoy, x: 1, y: 100, path: '{name}.xoy'}\n"},
		{"buffered-uncompressed", "default: {handler: buffered, codec: none, path: '{name}.raw'}\n"},
		{"buffered-zstd", "default: {handler: buffered, path: '{name}.log'}\n"},
	}
	const tuples = 20_000_000
	perTuple := map[string][]float64{}
	rates := map[string][]float64{}
	n := max(repeats(), 5)
	for rep := 0; rep < n; rep++ {
		for _, c := range configs {
			var prof []string
			if c.yaml != "" {
				file := filepath.Join(dir, c.name+".yaml")
				if err := os.WriteFile(file, []byte(c.yaml), 0o644); err != nil {
					t.Fatal(err)
				}
				logs := filepath.Join(dir, "logs")
				os.RemoveAll(logs)
				prof = []string{"--profile", file, "--profile-dir", logs}
			}
			fixed, _ := profiledPair(t, 100, prof)
			cpu, rate := profiledPair(t, tuples, prof)
			ns := (cpu - fixed).Seconds() * 1e9 / tuples
			perTuple[c.name] = append(perTuple[c.name], ns)
			rates[c.name] = append(rates[c.name], rate)
			t.Logf("profiler %s rep %d: %.1f ns CPU per tuple (both processes, fixed %.0f ms subtracted), consumed at %.3fM tuples/s",
				c.name, rep, ns, fixed.Seconds()*1e3, rate/1e6)
		}
	}
	base := median(perTuple["off"])
	out := map[string]any{"off_ns_per_tuple": base, "tuples": tuples, "repeats": n}
	for _, c := range configs {
		m := median(perTuple[c.name])
		cost := m/base - 1
		line := fmt.Sprintf("OVERHEAD CPU profiler=%s: %.1f ns per tuple [%s], %+.1f%% against unprofiled %.1f ns (paper: 2.2%%); unpaced consume rate median %.3fM [%s]",
			c.name, m, fmtNs(perTuple[c.name]), 100*cost, base, median(rates[c.name])/1e6, fmtRates(rates[c.name]))
		if c.name == "buffered-zstd" {
			line += fmt.Sprintf(" (target <= 5%%: %s)", verdict(cost <= 0.05))
		}
		t.Log(line)
		out[c.name+"_ns_per_tuple"], out[c.name+"_rates"] = perTuple[c.name], rates[c.name]
	}
	record(t, "profiler_cpu_per_tuple", out)
}

func fmtNs(v []float64) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.1f", x)
	}
	return s
}

var listeningRe = regexp.MustCompile(`listening on (\S+)`)

// profiledPair runs dgsend (count tuples unpaced in buckets of 100) into a
// decoding dgrecv, both with the extra flags, and returns the CPU time
// both processes used and dgrecv's consume rate.
func profiledPair(t *testing.T, count int, extra []string) (time.Duration, float64) {
	t.Helper()
	recv, err := Start(filepath.Join(binDir, "dgrecv"), append([]string{"--bind", "tcp://127.0.0.1:*", "--schema", "synthetic",
		"--expect-streams", "1", "--json", "--metrics-addr", "", "--progress", "never"}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !recv.WaitForLine("listening on", 10*time.Second) {
		recv.Wait(time.Second)
		t.Fatalf("dgrecv did not listen:\n%s", recv.Stderr.String())
	}
	ep := listeningRe.FindStringSubmatch(recv.Stderr.String())[1]
	send, err := Start(filepath.Join(binDir, "dgsend"), append([]string{"--connect", ep, "--scenario", "synthetic-100", "--bucket", "100",
		"--rate", "0", "--count", fmt.Sprint(count), "--duration", "0", "--metrics-addr", "", "--progress", "never"}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := send.Wait(2 * time.Minute); err != nil {
		t.Fatalf("dgsend: %v\n%s", err, send.Stderr.String())
	}
	if err := recv.Wait(2 * time.Minute); err != nil {
		t.Fatalf("dgrecv: %v\n%s", err, recv.Stderr.String())
	}
	var res struct {
		Rate    float64 `json:"consume_rate_tuples_per_s"`
		Missing uint64  `json:"missing_tuples"`
	}
	if err := json.Unmarshal(recv.Stdout.Bytes(), &res); err != nil {
		t.Fatalf("dgrecv output: %v", err)
	}
	if res.Missing != 0 {
		t.Fatalf("%d tuples missing", res.Missing)
	}
	cpu := func(p *Proc) time.Duration { return p.Cmd.ProcessState.UserTime() + p.Cmd.ProcessState.SystemTime() }
	return cpu(send) + cpu(recv), res.Rate
}
