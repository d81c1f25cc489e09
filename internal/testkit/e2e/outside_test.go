package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
	"github.com/cloudprofiler-go/cp/limits"
	"github.com/cloudprofiler-go/cp/sweep"
)

// TestSweepNamesTheJobFromOutside: YSB on the engine without its agent,
// its join made the limit by an injected cost, swept with the job's
// process named (--sut-process cpjob): with no stage of the harness's own
// limiting, the trial's limit is the system under test, named with its
// process's cores and threads.
func TestSweepNamesTheJobFromOutside(t *testing.T) {
	natsAddr, _ := realserver.NATS(t)
	redisAddr, _ := realserver.Redis(t)
	in, out := "jetstream://"+natsAddr+"/outside.in", "jetstream://"+natsAddr+"/outside.out"
	startJob(t, "ysb", "--input", in+"?group=ysb", "--output", out, "--redis", redisAddr, "--window", "1s", "--lateness", "500ms", "--join-work", "400us")
	rep, p := runSweepAllowing(t, 2*time.Minute, []int{sweep.ExitNoRatePassed}, jobSweepArgs(in, out,
		"--search", "linear", "--from", "15k", "--to", "15k", "--step", "5k", "--duration", "3s", "--stage-period", "100ms", "--sut-process", "cpjob")...)
	if len(rep.Result.Trials) != 1 || rep.Result.Trials[0].Verdict.Pass {
		t.Fatalf("trials %+v\n%s", rep.Result.Trials, p.Stderr.String())
	}
	var tf struct {
		Trial struct {
			Limiting     string            `json:"limiting_stage"`
			Evidence     string            `json:"limiting_evidence"`
			ServiceRates []json.RawMessage `json:"service_rates"`
			Hosts        []struct {
				Node       string                   `json:"node"`
				Seconds    float64                  `json:"seconds"`
				SUTThreads []cpustat.SUTThreadShare `json:"sut_threads"`
			} `json:"hosts"`
		} `json:"trial"`
	}
	if b, err := os.ReadFile(filepath.Join(rep.Dir, "trials", "001.json")); err != nil || json.Unmarshal(b, &tf) != nil {
		t.Fatalf("trials/001.json: %v", err)
	}
	t.Logf("limited by: %s (%s)", tf.Trial.Limiting, tf.Trial.Evidence)
	for _, h := range tf.Trial.Hosts {
		t.Logf("%s over %.1f s: the system's busiest threads %+v", h.Node, h.Seconds, h.SUTThreads)
	}
	// a Go job's goroutine moves between its threads: no one thread is
	// saturated, and the job reads ahead of its lag
	if tf.Trial.Limiting != limits.SUT || !strings.Contains(tf.Trial.Evidence, "its output was short while the harness kept up; cpjob used ") {
		t.Errorf("limiting %q (%s), want the system under test, cpjob named; the sweep:\n%s", tf.Trial.Limiting, tf.Trial.Evidence, p.Stderr.String())
	}
	// the trial's one line names it; its evidence is behind -v
	if !strings.Contains(p.Stderr.String(), "; limited by "+limits.SUT+"\n") {
		t.Errorf("the sweep's line does not name it:\n%s", p.Stderr.String())
	}
	// the trial has service rates, so a prediction of its next limit; the
	// default progress shows outcomes only (--verbose: the prediction too)
	if len(tf.Trial.ServiceRates) == 0 || strings.Contains(p.Stderr.String(), "next limit:") {
		t.Errorf("%d service rates; the default progress shows a prediction:\n%s", len(tf.Trial.ServiceRates), p.Stderr.String())
	}
}

// TestSweepNamesASaturatedThreadFromOutside: YSB in Python (one thread),
// made slower by a busy loop on each event (a test build: the example
// keeps up with all the senders send here), swept above what it can do,
// its process named (--sut-process python3). 3000 rounds a event kept
// up with 20 k/s on a faster host (2026-11-29); 6000 halve what it can
// do. The limit is the system
// under test by its saturated thread, with the growth of its input lag
// (it reads only what it counts).
func TestSweepNamesASaturatedThreadFromOutside(t *testing.T) {
	python := "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import redis").Run(); err != nil {
		skipOrFail(t, "Debian's python3-redis is not installed (apt-get install python3-redis): the Python YSB example needs it")
	}
	addr, _ := realserver.Redis(t)
	if out, err := exec.Command(filepath.Join(binDir, "cpjob"), "campaigns", "--redis", addr).CombinedOutput(); err != nil {
		t.Fatalf("cpjob campaigns: %v\n%s", err, out)
	}
	script, err := os.ReadFile(filepath.Join(moduleDir(t), "examples", "jobs", "python-ysb", "ysb.py"))
	if err != nil {
		t.Fatal(err)
	}
	const parse = `                event = json.loads(fields[b"d"])` + "\n"
	if !strings.Contains(string(script), parse) {
		t.Fatalf("the example no longer parses an event at:\n%s", parse)
	}
	path := filepath.Join(t.TempDir(), "ysb.py")
	if err := os.WriteFile(path, []byte(strings.Replace(string(script), parse, parse+"                for _ in range(6000): pass\n", 1)), 0o755); err != nil {
		t.Fatal(err)
	}
	job, err := Start(python, path, "--redis", addr, "--input", "sat.in", "--output", "sat.out", "--window", "1", "--lateness", "0.5")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = job.Signal(syscall.SIGKILL); _ = job.Wait(5 * time.Second) })
	if !job.WaitForLine("ysb.py: reading", 20*time.Second) {
		t.Fatalf("the job did not start:\n%s", job.Stderr.String())
	}
	in := "redis://" + addr + "/sat.in?group=ysb&format=json"
	out := "redis://" + addr + "/sat.out?format=json&key=campaign_id&window_end=window_end&count=count"
	rep, p := runSweepAllowing(t, 2*time.Minute, []int{sweep.ExitNoRatePassed}, "--input", in, "--output", out,
		"--scenario", "ad-event", "--schema", "window", "--expect-filter", "event_type == view", "--expect-window", "1s", "--duration", "3s",
		"--warmup", "500ms", "--job-quiet", "2500ms", "--lateness-floor", "100ms", "--stage-period", "100ms", "--sut-process", "python3",
		"--search", "linear", "--from", "20k", "--to", "20k", "--step", "10k")
	if len(rep.Result.Trials) != 1 || rep.Result.Trials[0].Verdict.Pass {
		t.Fatalf("trials %+v\n%s", rep.Result.Trials, p.Stderr.String())
	}
	// the trial's line names the system under test; its record names the
	// thread (the console's -v prints it)
	var tf struct {
		Trial struct {
			Limiting string `json:"limiting_stage"`
			Evidence string `json:"limiting_evidence"`
		} `json:"trial"`
	}
	if b, err := os.ReadFile(filepath.Join(rep.Dir, "trials", "001.json")); err != nil || json.Unmarshal(b, &tf) != nil {
		t.Fatalf("trials/001.json: %v", err)
	}
	line := p.Stderr.String()
	if !strings.Contains(line, "; limited by "+limits.SUT+"\n") || tf.Trial.Limiting != limits.SUT ||
		!strings.HasPrefix(tf.Trial.Evidence, "python3: thread ") || !strings.Contains(tf.Trial.Evidence, "% of a core") {
		t.Errorf("the sweep does not name the saturated thread: %q (%s)\n%s", tf.Trial.Limiting, tf.Trial.Evidence, line)
	}
}
