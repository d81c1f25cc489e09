package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// The end-to-end figures of BENCHMARKS.md. They run only with CP_BENCH=1
// (make bench): minutes of full-machine load, not a CI test. Each figure is
// printed next to the reference it is judged against, measured in the same
// run where the reference is a measurement.

func benchOnly(t *testing.T) {
	if os.Getenv("CP_BENCH") == "" {
		t.Skip("set CP_BENCH=1 (make bench) to run the end-to-end benchmarks")
	}
}

func repeats() int {
	var n int
	if _, err := fmt.Sscan(os.Getenv("CP_BENCH_REPEATS"), &n); err != nil || n < 1 {
		return 3
	}
	return n
}

// verdict says whether a figure meets its target. Benchmarks report; they
// do not fail the build over a noisy machine.
func verdict(met bool) string {
	if met {
		return "MET"
	}
	return "NOT MET"
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func fmtRates(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.3fM", x/1e6)
	}
	return strings.Join(parts, " ")
}

// record appends a figure to $CP_BENCH_OUT (JSON lines) when set.
func record(t *testing.T, name string, v map[string]any) {
	v["figure"], v["date"] = name, time.Now().UTC().Format(time.RFC3339)
	b, _ := json.Marshal(v)
	t.Logf("RESULT %s", b)
	if path := os.Getenv("CP_BENCH_OUT"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%s\n", b)
			f.Close()
		}
	}
}

func sendArgs(extra ...string) []string {
	return append([]string{"--scenario", "synthetic-100", "--threads", "1"}, extra...)
}

// TestBenchEmission: one sender thread, 100-byte tuples, to a draining
// dgrecv (--drain) on loopback. Both loops send the same count on the same socket
// and message size: the unpaced loop gives the ceiling, the paced loop is
// run at 90%, 95% and 100% of it, and its rate is count / elapsed (a
// stall is caught up, not cut off). The highest paced rate that reaches
// 99% of its target is reported next to the ceiling, as a ratio. Issue
// targets: >= 2 M tuples/s unbatched, >= 10 M with buckets of 100, paced
// >= 90% of the ceiling.
func TestBenchEmission(t *testing.T) {
	benchOnly(t)
	idle := os.Getenv("CP_BENCH_IDLE")
	if idle == "" {
		idle = "auto"
	}
	for _, bucket := range []int{1, 100} {
		count := 6_000_000
		if bucket == 1 {
			count = 3_000_000
		}
		var ceilings, pacedBest []float64
		for rep := 0; rep < repeats(); rep++ {
			pr := &Pair{Bin: binDir, RecvArgs: []string{"--drain", "--expect-streams", "1"},
				SendArgs: sendArgs("--rate", "0", "--bucket", fmt.Sprint(bucket), "--count", fmt.Sprint(count), "--duration", "0")}
			pr.Run(t)
			if !pr.Recv.Complete {
				t.Fatalf("unpaced run lost data: %+v", pr.Recv)
			}
			ceiling := pr.Send.AchievedRate
			ceilings = append(ceilings, ceiling)
			best := 0.0
			for _, frac := range []float64{0.90, 0.95, 1.0} {
				rate := frac * ceiling
				pp := &Pair{Bin: binDir, RecvArgs: []string{"--drain", "--expect-streams", "1"},
					SendArgs: sendArgs("--rate", fmt.Sprintf("%.0f", rate), "--bucket", fmt.Sprint(bucket), "--count", fmt.Sprint(count),
						"--duration", "0", "--idle", idle)}
				pp.Run(t)
				s := pp.Send
				ok := pp.Recv.Complete && s.AchievedRate >= 0.99*rate
				t.Logf("bucket %d rep %d: paced at %.0f%% of ceiling %.3fM: achieved %.3fM, p99 lateness %v, late slots %.2f%% -> %v",
					bucket, rep, frac*100, ceiling/1e6, s.AchievedRate/1e6, time.Duration(s.Lateness.P99), 100*s.LateFraction, ok)
				if !ok {
					break
				}
				best = s.AchievedRate
			}
			pacedBest = append(pacedBest, best)
		}
		c, p := median(ceilings), median(pacedBest)
		target := 2e6
		if bucket == 100 {
			target = 10e6
		}
		t.Logf("EMISSION bucket=%d idle=%s: unpaced ceiling median %.3fM tuples/s [%s] (target %.0fM: %s); best sustained paced median %.3fM [%s] = %.1f%% of ceiling (target 90%%: %s)",
			bucket, idle, c/1e6, fmtRates(ceilings), target/1e6, verdict(c >= target), p/1e6, fmtRates(pacedBest), 100*p/c, verdict(p >= 0.9*c))
		record(t, "emission", map[string]any{"bucket": bucket, "idle": idle, "ceiling_median": c, "ceilings": ceilings, "paced_median": p, "paced": pacedBest, "paced_over_ceiling": p / c})
	}
}

// TestBenchEndToEnd: one sender thread, one receive lane, 100-byte tuples
// in buckets, 5 M tuples/s for 10 s (issue target: sustained with zero
// loss; the paper's headline is 4.68 M on two large VMs).
func TestBenchEndToEnd(t *testing.T) {
	benchOnly(t)
	rate := os.Getenv("CP_BENCH_E2E_RATE")
	if rate == "" {
		rate = "5M"
	}
	for _, tc := range []struct {
		bucket int
		idle   string
	}{{100, "sleep"}, {500, "sleep"}, {1000, "sleep"}} {
		var achieved []float64
		sustained := 0
		for rep := 0; rep < repeats(); rep++ {
			pr := &Pair{Bin: binDir, RecvArgs: []string{"--schema", "synthetic", "--expect-streams", "1"},
				SendArgs: sendArgs("--rate", rate, "--bucket", fmt.Sprint(tc.bucket), "--duration", "10s", "--idle", tc.idle)}
			pr.Run(t)
			s, r := pr.Send, pr.Recv
			zeroLoss := r.Complete && r.Consumed == s.Emitted && s.DroppedBkts == 0
			ok := zeroLoss && s.Shortfall == 0
			if ok {
				sustained++
			}
			achieved = append(achieved, r.Rate)
			t.Logf("E2E bucket=%d idle=%s rep %d: emitted %d consumed %d shortfall %d zero-loss=%v; consume rate %.3fM; windows max dev %.4f%%; late slots %.2f%%; lateness p99 %v; e2e latency p50 %v p99 %v",
				tc.bucket, tc.idle, rep, s.Emitted, r.Consumed, s.Shortfall, zeroLoss, r.Rate/1e6, 100*s.WindowMaxDev, 100*s.LateFraction,
				time.Duration(s.Lateness.P99), time.Duration(r.Latency.P50), time.Duration(r.Latency.P99))
			record(t, "end_to_end", map[string]any{"bucket": tc.bucket, "idle": tc.idle, "rate": rate, "emitted": s.Emitted, "consumed": r.Consumed,
				"shortfall": s.Shortfall, "zero_loss": zeroLoss, "window_max_dev": s.WindowMaxDev, "late_fraction": s.LateFraction,
				"lateness_p99_ns": s.Lateness.P99, "latency_p50_ns": r.Latency.P50, "latency_p99_ns": r.Latency.P99, "consume_rate": r.Rate})
		}
		t.Logf("E2E bucket=%d: %d of %d runs sustained %s with zero loss and no shortfall; consume rates [%s]: %s",
			tc.bucket, sustained, repeats(), rate, fmtRates(achieved), verdict(sustained == repeats()))
	}
}

// TestBenchRateAccuracy: at 50% of the measured unpaced maximum, every full
// 1-second window must be within 0.1% of the target; the late-slot
// fraction is reported.
func TestBenchRateAccuracy(t *testing.T) {
	benchOnly(t)
	for _, bucket := range []int{1, 100} {
		count := 4_000_000
		if bucket == 1 {
			count = 2_000_000
		}
		pr := &Pair{Bin: binDir, RecvArgs: []string{"--schema", "synthetic", "--expect-streams", "1"},
			SendArgs: sendArgs("--rate", "0", "--bucket", fmt.Sprint(bucket), "--count", fmt.Sprint(count), "--duration", "0")}
		pr.Run(t)
		max := pr.Send.AchievedRate
		for _, idle := range []string{"spin", "sleep"} {
			pp := &Pair{Bin: binDir, RecvArgs: []string{"--schema", "synthetic", "--expect-streams", "1"},
				SendArgs: sendArgs("--rate", fmt.Sprintf("%.0f", max/2), "--bucket", fmt.Sprint(bucket), "--duration", "10s", "--idle", idle)}
			pp.Run(t)
			s := pp.Send
			t.Logf("ACCURACY bucket=%d idle=%s: max %.3fM, target %.3fM; %d windows %v; worst deviation %.4f%% (limit 0.1%%); late slots %.3f%% (>%v); lateness p50 %v p99 %v; complete=%v",
				bucket, idle, max/1e6, max/2e6, len(s.Windows), s.Windows, 100*s.WindowMaxDev, 100*s.LateFraction, time.Duration(s.LateThreshNs),
				time.Duration(s.Lateness.P50), time.Duration(s.Lateness.P99), pp.Recv.Complete)
			record(t, "rate_accuracy", map[string]any{"bucket": bucket, "idle": idle, "max": max, "target": max / 2, "windows": s.Windows,
				"window_max_dev": s.WindowMaxDev, "late_fraction": s.LateFraction, "lateness_p99_ns": s.Lateness.P99})
			t.Logf("ACCURACY bucket=%d idle=%s: every 1 s window within 0.1%% of target: %s", bucket, idle, verdict(s.WindowMaxDev <= 0.001))
		}
	}
}

// sweepArgs are the trial settings of the sweep benchmarks.
var sweepArgs = []string{"--duration", "2s", "--warmup", "500ms", "--bucket", "100", "--precision", "0.01", "--max-trials", "20"}

// TestBenchSweep: the fast search on a local dgsend -> dgrecv pair, five
// times. Reports trials to 1% precision (target: at most 12) next to what
// the paper's linear search with 1 k steps would need over the same range,
// and the spread of the five answers (aim: within 5%).
func TestBenchSweep(t *testing.T) {
	benchOnly(t)
	var lows, ratios []float64
	within12 := 0
	for rep := 0; rep < 5; rep++ {
		// The host's own speed drifts (BENCHMARKS.md): an unpaced run of the
		// same pair just before each sweep is the reference its answer is
		// compared to.
		ref := &Pair{Bin: binDir, RecvArgs: []string{"--schema", "synthetic", "--expect-streams", "1"},
			SendArgs: sendArgs("--rate", "0", "--bucket", "100", "--count", "3000000", "--duration", "0")}
		ref.Run(t)
		r, _ := runSweep(t, 10*time.Minute, append([]string{"--start", "500k", "--name", fmt.Sprintf("bench-%d", rep)}, sweepArgs...)...)
		res := r.Result
		n := len(res.Trials)
		linear := (res.FirstFail - 500e3) / 1e3
		if n <= 12 && res.Stopped == "" {
			within12++
		}
		lows = append(lows, res.LastPass)
		ratios = append(ratios, res.LastPass/ref.Send.AchievedRate)
		t.Logf("SWEEP rep %d: [%.3fM, %.3fM) (%.2f%% wide) in %d trials (target <= 12: %s); linear search from 500k in 1k steps: ~%.0f trials; unpaced reference %.3fM (answer = %.1f%% of it)%s",
			rep, res.LastPass/1e6, res.FirstFail/1e6, 100*(res.FirstFail-res.LastPass)/res.LastPass, n, verdict(n <= 12 && res.Stopped == ""), linear,
			ref.Send.AchievedRate/1e6, 100*ratios[rep], map[bool]string{true: "; stopped: " + res.Stopped, false: ""}[res.Stopped != ""])
		record(t, "sweep", map[string]any{"rep": rep, "last_pass": res.LastPass, "first_fail": res.FirstFail, "trials": n, "linear_trials": linear, "reference": ref.Send.AchievedRate})
	}
	spread := func(v []float64) float64 {
		s := append([]float64(nil), v...)
		sort.Float64s(s)
		return (s[len(s)-1] - s[0]) / median(s)
	}
	t.Logf("SWEEP repeatability: last passes [%s], spread %.1f%% of the median (aim 5%%: %s); answer/reference spread %.1f%%; %d of 5 sweeps within 12 trials",
		fmtRates(lows), 100*spread(lows), verdict(spread(lows) <= 0.05), 100*spread(ratios), within12)
}

// TestBenchSweepCapacity: a consumer that spends 10 us per tuple. Its
// capacity C is measured on its own first (unpaced dgsend into it); the
// sweep's answer must bracket C within a few percent.
func TestBenchSweepCapacity(t *testing.T) {
	benchOnly(t)
	pr := &Pair{Bin: binDir, RecvArgs: []string{"--schema", "synthetic", "--expect-streams", "1", "--work", "10us"},
		SendArgs: sendArgs("--rate", "0", "--bucket", "100", "--count", "1000000", "--duration", "0")}
	pr.Run(t)
	c := pr.Recv.Rate
	r, _ := runSweep(t, 10*time.Minute, append([]string{"--start", "20k", "--work", "10us", "--name", "bench-capacity"}, sweepArgs...)...)
	res := r.Result
	ok := res.LastPass <= c*1.03 && res.FirstFail >= c*0.97
	t.Logf("CAPACITY consumer at 10 us/tuple: measured C = %.1fk tuples/s (unpaced); sweep answer [%.1fk, %.1fk) in %d trials: brackets C within 3%%: %s",
		c/1e3, res.LastPass/1e3, res.FirstFail/1e3, len(res.Trials), verdict(ok))
	record(t, "sweep_capacity", map[string]any{"capacity": c, "last_pass": res.LastPass, "first_fail": res.FirstFail, "trials": len(res.Trials)})
}

// profilerConfig is a handler configuration on every channel (yaml "":
// not profiled).
type profilerConfig struct{ name, yaml string }

// profilerConfigs are the handler configurations the overhead benchmarks
// compare (issue 16), unprofiled first.
var profilerConfigs = []profilerConfig{
	{"off", ""},
	{"null", "default: {handler: null}\n"},
	{"counters", "default: {handler: spc}\n"},
	{"xoy-1of100", "default: {handler: xoy, x: 1, y: 100, path: '{name}.xoy'}\n"},
	{"buffered-uncompressed", "default: {handler: buffered, codec: none, path: '{name}.raw'}\n"},
	{"buffered-zstd", "default: {handler: buffered, path: '{name}.log'}\n"},
}

// TestBenchProfilerOverhead: the profiler's cost where it matters, at the
// maximum sustainable rate (issue 16): fast sweeps of local agents (one
// sender thread, one lane, buckets of 100) without a profile, and with
// every trial profiled (--profile-search) under each handler on every
// standard channel (emit.<thread>, receive.<lane>, deserialized.<lane>,
// consumed): Null, periodic counters (SPC), XoY 1 in 100, buffered
// without compression and buffered zstd. The configurations are
// interleaved per repeat; the figure is each median answer below the
// unprofiled median (the paper's Table 4: 2.2% on average). Target: <= 5%
// for buffered zstd.
func TestBenchProfilerOverhead(t *testing.T) {
	benchOnly(t)
	dir := t.TempDir()
	configs := append(slices.Clone(profilerConfigs),
		// Issue #15: the stages' activity channels alone, buffered zstd
		// (every other channel Null). Target: <= 5%.
		profilerConfig{"activity-only", "channels:\n  activity.thread0: {handler: buffered, path: '{name}.log'}\n" +
			"  activity.lane0: {handler: buffered, path: '{name}.log'}\n  activity.consumer: {handler: buffered, path: '{name}.log'}\n"})
	if only := os.Getenv("CP_BENCH_PROFILES"); only != "" { // e.g. off,buffered-zstd
		keep := configs[:0]
		for _, c := range configs {
			if strings.Contains(","+only+",", ","+c.name+",") {
				keep = append(keep, c)
			}
		}
		configs = keep
	}
	answers := map[string][]float64{}
	for rep := 0; rep < repeats(); rep++ {
		for _, c := range configs {
			args := append([]string{"--start", "500k", "--name", "overhead-" + c.name}, sweepArgs...)
			if c.yaml != "" {
				file := filepath.Join(dir, c.name+".yaml")
				if err := os.WriteFile(file, []byte(c.yaml), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--profile", file, "--profile-search")
			}
			// A sweep whose trials contradict its answer (the host moved
			// during it, exit 6) is no answer: run it again, up to twice.
			r, p := runSweepAllowing(t, 10*time.Minute, []int{6}, args...)
			for retry := 0; r.Contradicted != "" && retry < 2; retry++ {
				t.Logf("profiler %s rep %d: contradicted (%s), run again", c.name, rep, r.Contradicted)
				r, p = runSweepAllowing(t, 10*time.Minute, []int{6}, args...)
			}
			if r.Contradicted != "" {
				t.Logf("profiler %s rep %d: contradicted three times, left out", c.name, rep)
				continue
			}
			if r.Result.LastPass <= 0 {
				t.Fatalf("%s: no answer\n%s", c.name, p.Stderr.String())
			}
			answers[c.name] = append(answers[c.name], r.Result.LastPass)
			for _, tr := range r.Result.Trials { // what stopped the search, to tell the host's noise from a real cost
				if !tr.Verdict.Pass {
					t.Logf("profiler %s rep %d: trial at %.3fM (%s) failed: %s", c.name, rep, tr.Rate/1e6, tr.Purpose, failedRules(tr.Verdict.Checks))
				}
			}
			t.Logf("profiler %s rep %d: max sustainable %.3fM tuples/s in %d trials", c.name, rep, r.Result.LastPass/1e6, len(r.Result.Trials))
		}
	}
	if len(answers["off"]) == 0 {
		t.Fatal("no unprofiled sweep gave an answer that its trials did not contradict")
	}
	base := median(answers["off"])
	out := map[string]any{"off_median": base}
	for _, c := range configs {
		if len(answers[c.name]) == 0 {
			t.Logf("OVERHEAD profiler=%s: every sweep was contradicted (the host moved): no figure", c.name)
			continue
		}
		m := median(answers[c.name])
		cost := 1 - m/base
		line := fmt.Sprintf("OVERHEAD profiler=%s: max sustainable rate median %.3fM tuples/s [%s], %.1f%% below unprofiled (paper: 2.2%%)",
			c.name, m/1e6, fmtRates(answers[c.name]), 100*cost)
		if c.name == "buffered-zstd" || c.name == "activity-only" {
			line += fmt.Sprintf(" (target <= 5%%: %s)", verdict(cost <= 0.05))
		}
		t.Log(line)
		out[c.name+"_median"], out[c.name] = m, answers[c.name]
	}
	record(t, "profiler_overhead", out)
}
