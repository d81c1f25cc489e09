package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/sweep"
)

// operatorStallPlan is 20 seeded stalls of 250 ms to 2 s of one of
// cpjob's operators, 2 s apart, from 15 s after the job's start (the
// sweep's trial has begun by then); it returns cpjob's flags and when
// the last ends.
func operatorStallPlan(op string, seed uint64, fixed time.Duration) ([]string, time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 29))
	var args []string
	at := 15 * time.Second
	for i := 0; i < 20; i++ {
		length := 250*time.Millisecond + time.Duration(rng.IntN(36))*50*time.Millisecond
		if fixed > 0 {
			length = fixed
		}
		args = append(args, "--stall", fmt.Sprintf("%s@%v+%v", op, at, length))
		at += length + 2*time.Second
	}
	return args, at
}

// TestBenchOperatorStalls: 20 stalls of 250 ms to 2 s injected into each
// of YSB's per-event operators (the filter, the join; cpjob --stall), one
// long sweep trial each at 5 k events/s through JetStream, the job's
// operators served to the sweep (--job-agent), snapshots every 100 ms;
// then a fault-free trial of 30 s. Scored as TestBenchStallDetection
// scores the harness's stages, per snapshot and per stall. Targets: TPR
// >= 95%, FPR <= 2% (FlowDiagnoser's 93% / 2%), every length within one
// period, no stall confirmed in the fault-free trial.
// CP_BENCH_STALL_LENGTHS (e.g. 120ms,3s) scores 20 stalls of each length
// apart, and CP_BENCH_STALL_PERIOD (e.g. 50ms) samples the job and the
// sweep at that period (issue 58: stalls down to two periods).
func TestBenchOperatorStalls(t *testing.T) {
	benchOnly(t)
	natsAddr, _ := realserver.NATS(t)
	redisAddr, _ := realserver.Redis(t)
	period := stallPeriod(t)
	for _, fixed := range stallLengths(t) {
		operatorStallsOfLength(t, natsAddr, redisAddr, period, fixed)
	}
	d, _ := operatorStallTrial(t, natsAddr, redisAddr, "clean", nil, 30*time.Second, period)
	t.Logf("OPSTALLS fault-free trial at a %v period: %d confirmed stall(s) %v (target 0: %s)", period, len(d.Stalls), d.Stalls, verdict(len(d.Stalls) == 0))
	record(t, "operator_stalls_clean", map[string]any{"confirmed": len(d.Stalls), "period": period.String()})
}

// stallLengths are CP_BENCH_STALL_LENGTHS (e.g. 120ms,3s: 20 stalls of
// each length, scored apart), or the default plan's 250 ms to 2 s (0).
func stallLengths(t *testing.T) []time.Duration {
	v := os.Getenv("CP_BENCH_STALL_LENGTHS")
	if v == "" {
		return []time.Duration{0}
	}
	var out []time.Duration
	for _, s := range strings.Split(v, ",") {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("CP_BENCH_STALL_LENGTHS %q: %v", v, err)
		}
		out = append(out, d)
	}
	return out
}

// stallPeriod is CP_BENCH_STALL_PERIOD (the job's and the sweep's
// --stage-period), 100 ms by default.
func stallPeriod(t *testing.T) time.Duration {
	v := os.Getenv("CP_BENCH_STALL_PERIOD")
	if v == "" {
		return 100 * time.Millisecond
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("CP_BENCH_STALL_PERIOD %q: %v", v, err)
	}
	return d
}

// operatorStallsOfLength scores 20 stalls of each benchOperators()
// operator, of length fixed (0: 250 ms to 2 s), sampled every period.
func operatorStallsOfLength(t *testing.T, natsAddr, redisAddr string, period, fixed time.Duration) {
	var total score
	lengths := "250 ms to 2 s"
	if fixed > 0 {
		lengths = fixed.String()
	}
	for i, op := range benchOperators() {
		stalls, end := operatorStallPlan(op, uint64(i+1), fixed)
		d, injected := operatorStallTrial(t, natsAddr, redisAddr, fmt.Sprintf("st%d%d", i, fixed.Milliseconds()), stalls, end, period)
		windows := map[string][][2]int64{}
		first, last := d.Snapshots[0].UnixNs-d.PeriodNs, d.Snapshots[len(d.Snapshots)-1].UnixNs
		for _, st := range injected {
			if st.FromUnixNs >= first && st.ToUnixNs <= last { // inside the diagnosed trial
				windows["ysb/"+st.Operator] = append(windows["ysb/"+st.Operator], [2]int64{st.FromUnixNs, st.ToUnixNs})
			}
		}
		var s score
		s.addWindows(windows, d)
		if os.Getenv("CP_BENCH_DEBUG") != "" {
			logStallLabels(t, d, injected[:min(len(injected), 3)])
		}
		total.tp, total.fn, total.fp, total.tn = total.tp+s.tp, total.fn+s.fn, total.fp+s.fp, total.tn+s.tn
		total.injected, total.found, total.lengthOK, total.maxErr = total.injected+s.injected, total.found+s.found, total.lengthOK+s.lengthOK, max(total.maxErr, s.maxErr)
		t.Logf("OPSTALLS %s, stalls of %s at a %v period: TPR %.1f%% (%d/%d), FPR %.2f%% (%d/%d), %d confirmed stalls; %d of %d injected in the trial found, %d within one period of their length (largest difference %v)",
			op, lengths, period, 100*s.tpr(), s.tp, s.tp+s.fn, 100*s.fpr(), s.fp, s.fp+s.tn, len(d.Stalls), s.found, s.injected, s.lengthOK, s.maxErr.Round(time.Millisecond))
		for _, st := range d.Stalls {
			t.Logf("OPSTALLS %s: confirmed %s %.3f s", op, st.Stage, st.Seconds)
		}
		record(t, "operator_stalls", map[string]any{"operator": op, "length": lengths, "period": period.String(), "tp": s.tp, "fn": s.fn, "fp": s.fp, "tn": s.tn,
			"injected": s.injected, "found": s.found, "length_ok": s.lengthOK, "max_length_error_ns": s.maxErr.Nanoseconds()})
	}
	t.Logf("OPSTALLS all operators at 5 k events/s, a %v period: TPR %.1f%% (target >= 95%%: %s), FPR %.2f%% (target <= 2%%: %s); stalls of %s found %d of %d, lengths within one period %d of %d (target all: %s, largest difference %v)",
		period, 100*total.tpr(), verdict(total.tpr() >= 0.95), 100*total.fpr(), verdict(total.fpr() <= 0.02),
		lengths, total.found, total.injected, total.lengthOK, total.injected, verdict(total.injected > 0 && total.lengthOK == total.injected), total.maxErr.Round(time.Millisecond))
}

// operatorStallTrial runs a fresh YSB with stalls (cpjob flags) and one
// sweep trial at 5 k events/s that lasts until end after the job's start;
// it returns the trial's diagnosis and the stalls the job reported
// injecting in it.
func operatorStallTrial(t *testing.T, natsAddr, redisAddr, id string, stalls []string, end, period time.Duration) (*diagnose.Diagnosis, []protocol.InjectedStall) {
	t.Helper()
	in, out := "jetstream://"+natsAddr+"/"+id+".in", "jetstream://"+natsAddr+"/"+id+".out"
	// a lateness above the longest stall (and a window above that): the
	// windows count what a stall held
	args := append([]string{"ysb", "--input", in + "?group=ysb", "--output", out, "--redis", redisAddr, "--window", "4s", "--lateness", "3s",
		"--agent-addr", "127.0.0.1:0", "--stage-period", period.String()}, stalls...)
	started := time.Now()
	job := startJob(t, args...)
	defer func() { _ = job.Signal(syscall.SIGINT); _ = job.Wait(10 * time.Second) }()
	if !job.WaitForLine("cpjob: agent ready", 30*time.Second) {
		t.Fatalf("cpjob's agent:\n%s", job.Stderr.String())
	}
	m := regexp.MustCompile(`agent ready: control http://([0-9.:]+)/v1`).FindStringSubmatch(job.Stderr.String())
	duration := max(end-time.Since(started)-3*time.Second, 10*time.Second) // less the sweep's start and warm-up
	sweepArgs := jobSweepArgs(in, out, "--search", "linear", "--from", "5k", "--to", "5k", "--step", "5k",
		"--duration", duration.Round(time.Second).String(), "--warmup", "1s", "--job-quiet", "5s", "--expect-window", "4s", "--stage-period", period.String(), "--job-agent", m[1])
	rep, p := runSweepAllowing(t, end+3*time.Minute, []int{sweep.ExitNoRatePassed}, sweepArgs...)
	var rf diagnose.RunFile
	b, err := os.ReadFile(filepath.Join(rep.Dir, rundir.DiagnosisFile))
	if err != nil || json.Unmarshal(b, &rf) != nil || len(rf.Trials) != 1 || rf.Trials[0].Diagnosis == nil || len(rf.Trials[0].Diagnosis.Snapshots) == 0 {
		t.Fatalf("the trial's diagnosis: %v\n%s", err, p.Stderr.String())
	}
	var tf struct {
		Outcome struct {
			Jobs []*protocol.JobResult `json:"jobs"`
		} `json:"outcome"`
	}
	b, err = os.ReadFile(filepath.Join(rep.Dir, "trials", "001.json"))
	if err != nil || json.Unmarshal(b, &tf) != nil || len(tf.Outcome.Jobs) != 1 {
		t.Fatalf("the trial's job: %v", err)
	}
	if len(stalls) > 0 && len(tf.Outcome.Jobs[0].Injected) == 0 {
		t.Fatalf("the job reported no stall injected in its trial:\n%s", p.Stderr.String())
	}
	return rf.Trials[0].Diagnosis, tf.Outcome.Jobs[0].Injected
}

// logStallLabels logs every module's label in the snapshots around the
// given stalls (CP_BENCH_DEBUG: why a stall was or was not found).
func logStallLabels(t *testing.T, d *diagnose.Diagnosis, stalls []protocol.InjectedStall) {
	for _, st := range stalls {
		t.Logf("OPSTALLS debug: %s stalled %d .. %d", st.Operator, st.FromUnixNs, st.ToUnixNs)
		for _, snap := range d.Snapshots {
			if snap.UnixNs < st.FromUnixNs-3*d.PeriodNs || snap.UnixNs > st.ToUnixNs+3*d.PeriodNs {
				continue
			}
			line := fmt.Sprintf("%+6d ms:", (snap.UnixNs-st.FromUnixNs)/1e6)
			for i, m := range d.Modules {
				line += fmt.Sprintf(" %s=%s", m.Name, snap.Labels[i])
			}
			t.Log(line)
		}
	}
}

// benchOperators are the operators stalled: the filter and the join, or
// CP_BENCH_STALL_OPS (e.g. join).
func benchOperators() []string {
	if v := os.Getenv("CP_BENCH_STALL_OPS"); v != "" {
		return strings.Split(v, ",")
	}
	return []string{"filter", "join"}
}
