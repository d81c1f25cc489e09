package e2e

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/sweep"
)

// TestBenchYSBFixedRates: YSB between the real binaries through JetStream
// and Redis Streams at rising fixed rates, 5 s each. Per rate: whether the
// windows were exact, YSB's window latency, and cpjob's CPU per event.
// CP_BENCH=1.
func TestBenchYSBFixedRates(t *testing.T) {
	benchOnly(t)
	natsAddr, _ := realserver.NATS(t)
	redisAddr, _ := realserver.Redis(t)
	for _, broker := range []string{"jetstream://" + natsAddr, "redis://" + redisAddr} {
		for i, rate := range []string{"25k", "50k", "100k", "200k"} {
			in, out := fmt.Sprintf("%s/ysb%d.in", broker, i), fmt.Sprintf("%s/ysb%d.out", broker, i)
			r := runYSB(t, in, out, redisAddr, rate, "5s", false)
			exact := maps.Equal(r.got, r.want) && len(r.want) > 0
			t.Logf("YSB %s rate %s: sent %d (schedule kept %v, %.1f%% of slots later than 1 ms), windows exact %v (%d windows, %d views counted of %d), window latency p50 %v p99 %v, cpjob %.2f s CPU = %.2f µs per event",
				broker[:strings.Index(broker, ":")], rate, r.sent, r.scheduleKept, 100*r.lateFraction, exact, len(r.got), sumCounts(r.got), sumCounts(r.want), r.p50.Round(time.Millisecond), r.p99.Round(time.Millisecond), r.jobCPU, r.jobCPU/float64(max(r.sent, 1))*1e6)
		}
	}
}

// filterJob is a filter on the engine: the views of ad events, each
// tuple's identity carried from in to out (cpjob run).
func filterJob(t *testing.T, in, out string) *Proc {
	t.Helper()
	return runJobConfig(t, fmt.Sprintf(`input:
  cp_input: {url: '%s?group=filter', schema: ad-event}
pipeline:
  processors:
    - label: filter
      mapping: 'root = if this.event_type != "view" { deleted() }'
output:
  cp_output: {url: '%s', schema: ad-event}
logger: {level: warn}
http: {enabled: false}
`, in, out))
}

// TestBenchYSBSweeps: cpsweep --input/--output on YSB through JetStream,
// Redis Streams and Kafka (kfake: it measures the fake, in this process),
// CP_BENCH_REPEATS sweeps each (default 5), then one sweep of a filter job
// per broker (CP_BENCH_BROKERS=kafka,redis: only those). Per sweep: the answer, its trials, the limit named, the
// latency at the answer (YSB's window latency, or per tuple through the
// filter) with its clock bound; per broker the repeats' spread around
// their median. The host rules are the defaults, with the job, the
// brokers and Redis named as the system's processes.
func TestBenchYSBSweeps(t *testing.T) {
	benchOnly(t)
	natsAddr, _ := realserver.NATS(t)
	redisAddr, _ := realserver.Redis(t)
	kafkaAddr := realserver.FakeKafka(t)
	n := 5 // CP_BENCH_REPEATS=0: the filter's sweeps only
	if v, err := strconv.Atoi(os.Getenv("CP_BENCH_REPEATS")); err == nil && v >= 0 {
		n = v
	}
	host := []string{"--max-others", "0.10", "--max-steal", "0.10", "--sut-process", "cpjob", "--sut-process", "nats-server", "--sut-process", "redis-server"}
	search := []string{"--start", "20k", "--precision", "0.05", "--max-trials", "20", "--duration", "3s", "--warmup", "1s"}
	for _, broker := range []string{"jetstream://" + natsAddr, "redis://" + redisAddr, "kafka://" + kafkaAddr} {
		drv := broker[:strings.Index(broker, ":")]
		if only := os.Getenv("CP_BENCH_BROKERS"); only != "" && !strings.Contains(only, drv) {
			continue
		}
		host := host
		if drv == "kafka" { // the fake broker runs in this test's process: the system's, not another
			host = append(slices.Clip(host), "--sut-process", filepath.Base(os.Args[0]))
		}
		in, out := broker+"/bench.in", broker+"/bench.out"
		if n > 0 {
			startYSB(t, in, out, redisAddr, nil)
		}
		var answers []float64
		// one results directory per broker: from the third sweep on, the
		// sweep compares its answer with the earlier ones (its history) and
		// flags a spread above 5% itself
		results := t.TempDir()
		for i := range n {
			args := append(append(append(jobSweepArgs(in, out), search...), host...), "--results", results)
			rep, p := runSweepAllowing(t, 20*time.Minute, []int{sweep.ExitContradicted, sweep.ExitDisturbed, sweep.ExitNoRatePassed}, args...)
			answers = append(answers, rep.Result.LastPass)
			t.Logf("YSB SWEEP %s #%d: %s", drv, i+1, sweepLine(t, rep, p))
		}
		if n > 0 {
			med := median(answers)
			spread := 0.0
			for _, a := range answers {
				spread = max(spread, abs(a-med)/med)
			}
			t.Logf("YSB SWEEP %s: answers %v, median %.0f, widest %.1f%% from it (target ±10%%)", drv, answers, med, 100*spread)
		}
		fin, fout := broker+"/filter.in", broker+"/filter.out"
		filterJob(t, fin, fout)
		args := append(append([]string{"--input", fin + "?group=filter", "--output", fout, "--scenario", "ad-event", "--schema", "ad-event",
			"--expect-filter", "event_type == view", "--bucket", "100", "--job-quiet", "1s", "--lateness-floor", "100ms", "--stage-period", "0"}, search...), host...)
		rep, p := runSweepAllowing(t, 20*time.Minute, []int{sweep.ExitContradicted, sweep.ExitDisturbed, sweep.ExitNoRatePassed}, args...)
		t.Logf("FILTER SWEEP %s: %s", drv, sweepLine(t, rep, p))
		if rep.Result.LastPass <= 0 { // what the sweep said of each trial, to tell why
			t.Logf("FILTER SWEEP %s: no rate passed; the sweep's output:\n%s", drv, p.Stderr.String())
		}
	}
}

// sweepLine is a sweep's answer, trials, limit and latency in one line.
func sweepLine(t *testing.T, rep sweepReport, p *Proc) string {
	t.Helper()
	var sum struct {
		Latency *rundir.AnswerLatency `json:"latency"`
		History *rundir.History       `json:"history"`
	}
	if b, err := os.ReadFile(filepath.Join(rep.Dir, "summary.json")); err == nil {
		_ = json.Unmarshal(b, &sum)
	}
	lat := "no latency"
	if l := sum.Latency; l != nil {
		lat = fmt.Sprintf("latency p50 %v p99 %v ± %v", time.Duration(l.P50Ns).Round(time.Millisecond), time.Duration(l.P99Ns).Round(time.Millisecond), time.Duration(max(l.ClockBoundNs, 0)))
	}
	flags := ""
	if h := sum.History; h != nil && h.Varies {
		flags = " HISTORY VARIES: " + h.Statement
	}
	if rep.Contradicted != "" {
		flags = " CONTRADICTED: " + rep.Contradicted
	}
	if code := ExitCode(p.Wait(time.Second)); code != 0 {
		flags += fmt.Sprintf(" (exit %d)", code)
	}
	if tr := rep.Result.Trials; rep.Result.LastPass <= 0 && len(tr) > 0 {
		flags += fmt.Sprintf("; the first trial at %.0f/s failed: %s", tr[0].Rate, failedRules(tr[0].Verdict.Checks))
	}
	return fmt.Sprintf("answer [%.0f, %.0f) tuples/s in %d trials, limited by %q; %s; %s%s", rep.Result.LastPass, rep.Result.FirstFail, len(rep.Result.Trials), rep.Limiting, lat, cpuAtAnswer(t, rep), flags)
}

// cpuAtAnswer is the CPU per tuple of the harness's agents and of the
// system under test (the job, its brokers, Redis) in the last passing run
// at the answer, from the host accounting in trials.csv.
func cpuAtAnswer(t *testing.T, rep sweepReport) string {
	t.Helper()
	f, err := os.Open(filepath.Join(rep.Dir, "trials.csv"))
	if err != nil {
		return "no trials.csv"
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		return fmt.Sprintf("trials.csv: %v", err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	num := func(r []string, name string) float64 {
		v, _ := strconv.ParseFloat(r[col[name]], 64)
		return v
	}
	var at []string
	for _, r := range rows[1:] {
		if r[col["pass"]] == "true" && abs(num(r, "target_rate")-rep.Result.LastPass) < 1 {
			at = r
		}
	}
	if at == nil || rep.Result.LastPass <= 0 {
		return "no passing run at the answer"
	}
	perTuple := func(cores float64) float64 { return cores / rep.Result.LastPass * 1e6 }
	return fmt.Sprintf("CPU per tuple at the answer: harness %.2f µs (senders %.2f + receiver %.2f cores), system %.2f µs (%.2f cores)",
		perTuple(num(at, "sender_cores")+num(at, "receiver_cores")), num(at, "sender_cores"), num(at, "receiver_cores"), perTuple(num(at, "sut_cores")), num(at, "sut_cores"))
}

func abs(x float64) float64 { return max(x, -x) }
