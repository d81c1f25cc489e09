package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"

	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/sweep"
)

// sweepReport is the part of cpsweep's JSON summary the tests read.
type sweepReport struct {
	FormatVersion int    `json:"format_version"`
	Dir           string `json:"dir"`
	Interrupted   bool   `json:"interrupted"`
	Limiting      string `json:"limiting_stage"`
	Evidence      string `json:"limiting_evidence"`
	Contradicted  string `json:"contradicted"`
	Result        struct {
		LastPass  float64 `json:"last_pass"`
		FirstFail float64 `json:"first_fail"`
		Stopped   string  `json:"stopped"`
		Hint      string  `json:"hint"`
		// Boundary is the sweep's own (the CLI's --json prints the report).
		Boundary *rundir.Boundary `json:"boundary"`
		Trials   []struct {
			Rate     float64 `json:"rate"`
			Achieved float64 `json:"achieved"`
			Purpose  string  `json:"purpose"`
			Short    bool    `json:"short"`
			// NextLimit is the smallest pipeline limit of the stages'
			// service-rate estimates in the trial (absent: none converged).
			NextLimit *struct {
				Stage      string  `json:"stage"`
				Method     string  `json:"method"`
				TuplesPerS float64 `json:"tuples_per_s"`
				// Inconsistent: the trials contradict it; Through: the
				// stage whose rate it is when the limit is the host's CPUs.
				Inconsistent string `json:"inconsistent"`
				Through      string `json:"through"`
			} `json:"next_limit"`
			Verdict struct {
				Pass   bool         `json:"pass"`
				Checks []sweepCheck `json:"checks"`
			} `json:"verdict"`
		} `json:"trials"`
	} `json:"result"`
}

// failedRules lists a trial's failing rules with their details.
func failedRules(checks []sweepCheck) string {
	var failed []string
	for _, c := range checks {
		if !c.Pass {
			failed = append(failed, c.Rule+": "+c.Detail)
		}
	}
	return strings.Join(failed, "; ")
}

// sweepCheck is one rule of a trial's verdict.
type sweepCheck struct {
	Rule   string `json:"rule"`
	Pass   bool   `json:"pass"`
	Detail string `json:"detail"`
}

func runSweep(t *testing.T, timeout time.Duration, args ...string) (sweepReport, *Proc) {
	t.Helper()
	return runSweepAllowing(t, timeout, nil, args...)
}

// runSweepAllowing is runSweep that also takes the exit statuses in ok
// (a benchmark on a noisy host counts contradicted sweeps, status 6).
func runSweepAllowing(t *testing.T, timeout time.Duration, ok []int, args ...string) (sweepReport, *Proc) {
	t.Helper()
	p, err := Start(filepath.Join(binDir, "cpsweep"), append(append([]string{"--json", "--results", t.TempDir()}, hostTolerant...), args...)...)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ok, sweep.ExitNoRatePassed) {
		// a job wrong at the first rates tried ends as wrong, not slow
		ok = append(slices.Clip(ok), sweep.ExitWrongOutput)
	}
	if err := p.Wait(timeout); err != nil && !slices.Contains(ok, ExitCode(err)) {
		t.Fatalf("cpsweep: %v\n%s", err, p.Stderr.String())
	}
	var rep sweepReport
	if err := json.Unmarshal(p.Stdout.Bytes(), &rep); err != nil {
		t.Fatalf("cpsweep output: %v\n%s\n%s", err, p.Stdout.String(), p.Stderr.String())
	}
	return rep, p
}

// TestSweepBracketsAnInjectedCapacity sweeps local agents whose consumer
// spends 100 us per tuple, so it cannot consume more than 10 k tuples/s: no
// trial above that may pass (a verdict that let buffering hide overload
// would), the answer must be a 5% interval below it, and
// the run directory must hold every file the README promises.
func TestSweepBracketsAnInjectedCapacity(t *testing.T) {
	// A generous trial budget: the consumer's CPU share, and so the
	// capacity, moves when the host is busy, and the search then needs
	// more trials (the 12-trial figure is a benchmark, not this test).
	// On a host loaded by the rest of the suite the capacity can sink
	// during the sweep (9.6 k -> 5.5 k seen in CI): the sweep then says its
	// own trials contradict the answer (exit 6) instead of answering; the
	// physical bound and the run directory are checked either way.
	rep, p := runSweepAllowing(t, 4*time.Minute, []int{sweep.ExitContradicted}, "--duration", "1s", "--warmup", "300ms", "--start", "2k", "--precision", "0.05",
		"--max-trials", "28", "--work", "100us", "--bucket", "10", "--name", "capacity")
	res := rep.Result
	contradicted := ExitCode(p.Wait(time.Second)) == sweep.ExitContradicted
	if contradicted != (rep.Contradicted != "") || (contradicted && !strings.Contains(p.Stderr.String(), "NOT TRUSTWORTHY")) {
		t.Fatalf("exit 6 %v, contradicted %q\n%s", contradicted, rep.Contradicted, p.Stderr.String())
	}
	// With the rest of the suite loading the host, the consumer's capacity
	// moves during the sweep (seen in CI: 9.8 k, then 8 k; 9 k, then 5 k),
	// and confirmations fail until the trial budget is spent. The sweep
	// says so ("used all ... trials"), and its interval must still hold
	// the bounds below; any other stop is a failure.
	if (res.Stopped != "" && !strings.HasPrefix(res.Stopped, "used all")) || rep.Interrupted {
		t.Fatalf("sweep stopped: %q\n%s", res.Stopped, p.Stderr.String())
	}
	if res.Stopped != "" {
		t.Logf("the sweep ran out of trials on a moving capacity: %s", res.Stopped)
	}
	const limit = 10e3 // 1 / 100 us: the consumer's physical maximum
	for _, tr := range res.Trials {
		if tr.Verdict.Pass && tr.Rate > limit*1.02 {
			t.Fatalf("a trial at %.0f tuples/s passed, above the consumer's maximum of %.0f\n%s", tr.Rate, limit, p.Stderr.String())
		}
	}
	// The upper side is physical (checked above). Below, the bound is what
	// this run measured: the trial at the first failing rate (the latest
	// of the narrowing, so the host's load then is the answer's) consumed
	// as fast as the consumer could, or kept up and failed another rule;
	// either way the answer must be close under what it achieved. (The
	// fastest failing trial over the whole sweep is no bound: a busy host
	// slows the consumer between trials.)
	var measured float64
	for _, tr := range res.Trials {
		if !tr.Verdict.Pass && tr.Rate == res.FirstFail {
			measured = tr.Achieved
		}
	}
	if contradicted {
		t.Logf("the host moved during the sweep: %s", rep.Contradicted)
	} else if measured <= 0 || measured > limit*1.02 {
		t.Fatalf("the trial at the first failing rate consumed %.0f tuples/s: want a consumer at or below %.0f\n%s", measured, limit, p.Stderr.String())
	}
	converged := !contradicted && res.Stopped == "" // a stopped search's interval may be wider (its convergence is sweep's unit tests' job)
	// The search's own resolution is 5% or better; the answer's measured
	// spread (rates above it that passed only some runs) may be wider on a
	// moving capacity, and the boundary says so.
	b := res.Boundary
	// An answer well below the capacity is honest only when the sweep says
	// it is not to be taken alone: its boundary did not reproduce, and the
	// rates that passed some runs above it reach the capacity (a host busy
	// with the suite failed a run at 4.6 k of a 7.8 k consumer once; the
	// sweep answered 3.5 k "outcomes varied up to +149%").
	low := res.LastPass < measured*0.8
	if low && b != nil && !b.Reproducible && res.LastPass*(1+b.Spread) >= measured*0.8 {
		t.Logf("a low answer the sweep itself says is uncertain: %s", b.Statement)
		low = false
	}
	if !contradicted && (low || res.FirstFail > limit*1.5 || (converged && (b == nil || b.Resolution > 0.05))) {
		t.Fatalf("answer [%.0f, %.0f) (boundary %+v) is not just below the %.0f tuples/s the consumer reached (limit %.0f) at a 5%% resolution\n%s",
			res.LastPass, res.FirstFail, b, measured, limit, p.Stderr.String())
	}
	if b != nil && len(b.Mixed) > 0 && b.Spread < b.Mixed[len(b.Mixed)-1].Rate/res.LastPass-1-1e-9 {
		t.Fatalf("rates up to %.0f passed some runs, but the spread says %.3f: %s", b.Mixed[len(b.Mixed)-1].Rate, b.Spread, b.Statement)
	}
	t.Logf("answer [%.0f, %.0f), the first failing trial consumed %.0f tuples/s (limit %.0f)", res.LastPass, res.FirstFail, measured, limit)
	for _, f := range []string{"format.json", "config.json", "summary.json", "trials.json", "trials.csv", "sweep.svg", "trials/001.json"} {
		st, err := os.Stat(filepath.Join(rep.Dir, f))
		if err != nil || st.Size() == 0 {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}
	// Every field documented (docs/results.md). The least a trials.json
	// holds is 28 fields (trials whose service rates did not converge, as
	// when a busy host keeps the search near 2 k/s).
	for f, least := range map[string]int{"summary.json": 60, "trials.json": 20} {
		b, err := os.ReadFile(filepath.Join(rep.Dir, f))
		if err != nil {
			t.Fatal(err)
		}
		checkFieldsDocumented(t, f, b, least)
	}
	csv, _ := os.ReadFile(filepath.Join(rep.Dir, "trials.csv"))
	if lines := strings.Count(string(csv), "\n"); lines != len(res.Trials)+1 {
		t.Errorf("trials.csv has %d lines for %d trials", lines, len(res.Trials))
	}
	svg, _ := os.ReadFile(filepath.Join(rep.Dir, "sweep.svg"))
	if !strings.Contains(string(svg), "<svg") || !strings.Contains(string(svg), "target rate") {
		t.Error("sweep.svg is not the plot")
	}
	if rep.FormatVersion != rundir.FormatVersion || !strings.Contains(p.Stderr.String(), "trial  1") {
		t.Errorf("format %d; progress:\n%s", rep.FormatVersion, p.Stderr.String())
	}
}

// TestSweepFailsWhenAnAgentIsGone points cpsweep at agents that do not
// exist: it must say so quickly, not hang.
func TestSweepFailsWhenAnAgentIsGone(t *testing.T) {
	start := time.Now()
	p, err := Start(filepath.Join(binDir, "cpsweep"), "--sender", "127.0.0.1:1", "--receiver", "127.0.0.1:2", "--results", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	err = p.Wait(time.Minute)
	if err == nil || !strings.Contains(p.Stderr.String(), "unreachable") || time.Since(start) > 30*time.Second {
		t.Fatalf("err %v after %v:\n%s", err, time.Since(start), p.Stderr.String())
	}
}

// TestSweepFailsATrialWhenAnAgentDies kills the sender agent during a
// trial: the trial is invalid (not a failed rate), the sweep stops within
// seconds with the agent's name and exit status 5, and no answer.
func TestSweepFailsATrialWhenAnAgentDies(t *testing.T) {
	recv, snd := startAgents(t, "--bind", fmt.Sprintf("tcp://127.0.0.1:%d", mustPort(t)))
	rAddr, sAddr := agentAddr(t, recv), agentAddr(t, snd)
	sw, err := Start(filepath.Join(binDir, "cpsweep"), "--sender", sAddr, "--receiver", rAddr, "--results", t.TempDir(), hostTolerant[0], hostTolerant[1], hostTolerant[2], hostTolerant[3],
		"--duration", "20s", "--warmup", "0s", "--search", "linear", "--from", "10k", "--to", "10k", "--step", "10k")
	if err != nil {
		t.Fatal(err)
	}
	// Killed once the sender's trial runs and data arrives: inside the
	// trial's 20 s window.
	waitMetric(t, rAddr, "cp_receiver_consumed_tuples_total", 15*time.Second, positive)
	_ = snd.Cmd.Process.Kill()
	killed := time.Now()
	err = sw.Wait(25 * time.Second)
	if code := ExitCode(err); code != sweep.ExitAgentFailure {
		t.Fatalf("cpsweep exited %d (%v), want %d:\n%s", code, err, sweep.ExitAgentFailure, sw.Stderr.String())
	}
	if took := time.Since(killed); took > 15*time.Second {
		t.Errorf("the sweep took %v to notice the dead agent", took)
	}
	out := sw.Stdout.String() + sw.Stderr.String()
	for _, want := range []string{"INVALID", "stopped answering mid-trial", sAddr, "SWEEP FAILED", "no answer"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "max sustainable") || strings.Contains(out, "no rate passed") {
		t.Errorf("an agent failure was reported as a capacity answer:\n%s", out)
	}
}

// TestSweepKeepsFinishedTrialsOnCtrlC interrupts a sweep during its second
// trial: it stops, keeps trial 1 on disk and says where.
func TestSweepKeepsFinishedTrialsOnCtrlC(t *testing.T) {
	results := t.TempDir()
	sw, err := Start(filepath.Join(binDir, "cpsweep"), "--results", results, hostTolerant[0], hostTolerant[1], hostTolerant[2], hostTolerant[3], "--duration", "1s", "--warmup", "0s",
		"--start", "5k", "--max-trials", "10")
	if err != nil {
		t.Fatal(err)
	}
	if !sw.WaitForLine("trial  1", 60*time.Second) {
		t.Fatalf("no first trial:\n%s", sw.Stderr.String())
	}
	_ = sw.Signal(syscall.SIGINT) // trial 2 is starting or running
	if err := sw.Wait(30 * time.Second); err != nil && ExitCode(err) < 0 {
		t.Fatalf("cpsweep after SIGINT: %v\n%s", err, sw.Stderr.String())
	}
	if out := sw.Stdout.String(); !strings.Contains(out, "interrupted") || !strings.Contains(out, "results: "+results) {
		t.Fatalf("cpsweep did not say it was interrupted and where the results are:\n%s\n%s", out, sw.Stderr.String())
	}
	if kept, _ := filepath.Glob(filepath.Join(results, "*", "trials", "001.json")); len(kept) != 1 {
		t.Fatalf("trial 1 not kept on disk: %v", kept)
	}
}

func mustPort(t *testing.T) int {
	p, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var readyAddr = regexp.MustCompile(`control http://([^/\s]+)/v1`)

// startAgents starts a receiver agent (with its data endpoint flags) and a
// sender agent on loopback; both are killed when the test ends.
func startAgents(t *testing.T, recvEndpoint ...string) (recv, snd *Proc) {
	t.Helper()
	recv, err := Start(filepath.Join(binDir, "dgrecv"), append([]string{"--agent", "--metrics-addr", "127.0.0.1:0"}, recvEndpoint...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = recv.Cmd.Process.Kill(); _ = recv.Wait(5 * time.Second) })
	snd, err = Start(filepath.Join(binDir, "dgsend"), "--agent", "--metrics-addr", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = snd.Cmd.Process.Kill(); _ = snd.Wait(5 * time.Second) })
	return recv, snd
}

func agentAddr(t *testing.T, p *Proc) string {
	t.Helper()
	if !p.WaitForLine("agent ready", 10*time.Second) {
		t.Fatalf("agent did not start:\n%s", p.Stderr.String())
	}
	return readyAddr.FindStringSubmatch(p.Stderr.String())[1]
}

// TestRelaySweep puts a system under test between senders and receivers:
// a ZeroMQ forwarder (PULL -> PUSH) that the receiver agent connects to.
func TestRelaySweep(t *testing.T) {
	in, out := mustPort(t), mustPort(t)
	ctx, err := zmq.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	front, _ := ctx.NewSocket(zmq.PULL)
	back, _ := ctx.NewSocket(zmq.PUSH)
	if err := front.Bind(fmt.Sprintf("tcp://127.0.0.1:%d", in)); err != nil {
		t.Fatal(err)
	}
	if err := back.Bind(fmt.Sprintf("tcp://127.0.0.1:%d", out)); err != nil {
		t.Fatal(err)
	}
	go func() { _ = zmq.Proxy(front, back, nil) }() // returns when the context ends
	defer func() { _ = ctx.Term() }()
	defer func() { front.SetLinger(0); back.SetLinger(0); front.Close(); back.Close() }()

	recv, snd := startAgents(t, "--connect", fmt.Sprintf("tcp://127.0.0.1:%d", out))
	rep, p := runSweep(t, 2*time.Minute, "--sender", agentAddr(t, snd), "--receiver", agentAddr(t, recv),
		"--relay-input", fmt.Sprintf("tcp://127.0.0.1:%d", in), "--schema", "raw", "--search", "linear",
		"--from", "10k", "--to", "20k", "--step", "10k", "--duration", "1s", "--warmup", "200ms", "--threads", "2", "--bucket", "10",
		// the relay is under test, not the shared VM's scheduling: a 12 ms
		// stall under CI load once failed the default 5 ms lateness floor
		"--lateness-floor", "100ms")
	if len(rep.Result.Trials) != 2 || !rep.Result.Trials[0].Verdict.Pass || !rep.Result.Trials[1].Verdict.Pass {
		t.Fatalf("relay sweep: %+v\n%s", rep.Result, p.Stderr.String())
	}
}

// TestLocalAgentsDieWithCpsweep: cpsweep killed outright (SIGKILL: no
// cleanup runs) must not leave its local agents behind, holding ports and
// CPUs for the next run.
func TestLocalAgentsDieWithCpsweep(t *testing.T) {
	p, err := Start(filepath.Join(binDir, "cpsweep"), append([]string{"--duration", "5s", "--warmup", "200ms", "--start", "10k", "--results", t.TempDir()}, hostTolerant...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !p.WaitForLine("trial  1", 30*time.Second) && !p.WaitForLine("results in", 1*time.Second) {
		_ = p.Cmd.Process.Kill()
		t.Fatalf("the sweep did not start:\n%s", p.Stderr.String())
	}
	out, _ := exec.Command("pgrep", "-P", fmt.Sprint(p.Cmd.Process.Pid)).Output()
	children := strings.Fields(string(out))
	if len(children) < 2 {
		_ = p.Cmd.Process.Kill()
		t.Fatalf("local agents: %q, want a receiver and a sender", children)
	}
	_ = p.Cmd.Process.Kill()
	_ = p.Wait(5 * time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for _, c := range children {
		for {
			st, err := os.ReadFile("/proc/" + c + "/stat")
			if err != nil || strings.Contains(string(st), ") Z ") {
				break // gone (a zombie has exited: only its reaper is missing)
			}
			if time.Now().After(deadline) {
				_ = exec.Command("kill", "-9", c).Run() // not left behind by the test either
				t.Fatalf("local agent %s outlived cpsweep", c)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// TestSweepSaysTheHostWasDisturbed: with two processes spinning beside the
// local agents and --max-others set, every trial is disturbed: it is
// repeated, and the sweep ends without an answer (exit 7), naming what
// disturbed it.
func TestSweepSaysTheHostWasDisturbed(t *testing.T) {
	for i := 0; i < 2; i++ {
		spin := exec.Command("sh", "-c", "end=$(($(date +%s)+40)); while [ $(date +%s) -lt $end ]; do :; done")
		if err := spin.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = spin.Process.Kill(); _ = spin.Wait() }()
	}
	p, err := Start(filepath.Join(binDir, "cpsweep"), "--results", t.TempDir(), "--duration", "1s", "--warmup", "200ms",
		"--start", "20k", "--bucket", "10", "--max-trials", "3", "--max-others", "0.15", "--max-repeats", "1")
	if err != nil {
		t.Fatal(err)
	}
	err = p.Wait(2 * time.Minute)
	out := p.Stdout.String() + p.Stderr.String()
	if ExitCode(err) != sweep.ExitDisturbed || !strings.Contains(out, "DISTURBED: other processes used") ||
		!strings.Contains(out, "no answer: the host stayed disturbed") || strings.Contains(out, "max sustainable throughput") {
		t.Fatalf("exit %d (want %d)\n%s", ExitCode(err), sweep.ExitDisturbed, out)
	}
}
