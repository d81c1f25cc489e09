package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/sweep"
)

// exampleAnswer is one sweep of an example job: its answer, latency and
// the limit it named.
type exampleAnswer struct {
	rate     float64
	p50, p99 time.Duration
	limit    string
	unsteady string // the sweep's own flag: a hot thread waited for a core
}

// sweepExample sweeps a job from in to out (fast search from start) and
// reads its answer from summary.json.
func sweepExample(t *testing.T, in, out, start string, args ...string) exampleAnswer {
	t.Helper()
	rep, p := runSweepAllowing(t, 10*time.Minute, []int{sweep.ExitNoRatePassed, sweep.ExitContradicted}, append([]string{"--input", in, "--output", out,
		"--start", start, "--duration", "3s", "--warmup", "1s", "--precision", "0.05", "--max-trials", "12", "--lateness-floor", "100ms"}, args...)...)
	var sum rundir.Summary
	b, err := os.ReadFile(filepath.Join(rep.Dir, rundir.SummaryFile))
	if err == nil {
		err = json.Unmarshal(b, &sum)
	}
	if err != nil {
		t.Fatalf("summary: %v\n%s", err, p.Stderr.String())
	}
	a := exampleAnswer{rate: rep.Result.LastPass, limit: rep.Limiting + " (" + rep.Evidence + ")", unsteady: sum.Unsteady}
	if sum.Latency != nil {
		a.p50, a.p99 = time.Duration(sum.Latency.P50Ns), time.Duration(sum.Latency.P99Ns)
	}
	return a
}

// TestBenchExampleJobs sweeps each example job through its broker,
// repeats() times: the answer, its latency (YSB's window latency for the
// Python YSB, per event for the filters), the limit named, and whether
// every answer lies within ±10% of their median or was flagged unsteady
// by its sweep (a hot thread waited for a core on the shared host).
func TestBenchExampleJobs(t *testing.T) {
	benchOnly(t)
	type job struct {
		name, start string
		run         func(t *testing.T) (in, out string, args []string)
	}
	jobs := []job{
		{"benthos-filter", "10k", func(t *testing.T) (string, string, []string) {
			addr, _ := realserver.NATS(t)
			in, out := "jetstream://"+addr+"/bf.in?group=filter&format=json", "jetstream://"+addr+"/bf.out?format=json"
			startExample(t, []string{"INPUT=" + in, "OUTPUT=" + out}, filepath.Join(binDir, "cpjob"), "run", filepath.Join(moduleDir(t), "examples", "jobs", "benthos-filter", "filter.yaml"))
			return in, out, []string{"--scenario", "ad-event", "--expect-filter", "event_type == view", "--job-quiet", "1500ms", "--sut-process", "cpjob", "--sut-process", "nats-server"}
		}},
		{"node-filter", "5k", func(t *testing.T) (string, string, []string) {
			addr, _ := realserver.NATS(t)
			dir := npmExample(t)
			startExample(t, nil, "node", filepath.Join(dir, "filter.js"), "--server", addr, "--input", "nf.in", "--group", "filter", "--output", "nf.out")
			return "jetstream://" + addr + "/nf.in?group=filter&format=json", "jetstream://" + addr + "/nf.out?format=json",
				[]string{"--scenario", "ad-event", "--expect-filter", "event_type == view", "--job-quiet", "1500ms", "--sut-process", "node", "--sut-process", "nats-server"}
		}},
		{"python-ysb", "10k", func(t *testing.T) (string, string, []string) {
			addr, _ := realserver.Redis(t)
			if out, err := exec.Command(filepath.Join(binDir, "cpjob"), "campaigns", "--redis", addr).CombinedOutput(); err != nil {
				t.Fatalf("cpjob campaigns: %v\n%s", err, out)
			}
			startExample(t, nil, "/usr/bin/python3", filepath.Join(moduleDir(t), "examples", "jobs", "python-ysb", "ysb.py"), "--redis", addr, "--input", "py.in", "--output", "py.out", "--window", "1", "--lateness", "0.5")
			return "redis://" + addr + "/py.in?group=ysb&format=json", "redis://" + addr + "/py.out?format=json&key=campaign_id&window_end=window_end&count=count",
				[]string{"--scenario", "ad-event", "--schema", "window", "--expect-filter", "event_type == view", "--expect-window", "1s", "--job-quiet", "2500ms", "--sut-process", "python3", "--sut-process", "redis-server"}
		}},
	}
	for _, j := range jobs {
		t.Run(j.name, func(t *testing.T) {
			var answers []exampleAnswer
			var rates []float64
			for i := 0; i < repeats(); i++ {
				in, out, args := j.run(t)
				a := sweepExample(t, in, out, j.start, args...)
				answers, rates = append(answers, a), append(rates, a.rate)
			}
			med := median(rates)
			within, flagged := 0, 0
			var lines []string
			for _, a := range answers {
				in := a.rate >= 0.9*med && a.rate <= 1.1*med
				if in {
					within++
				}
				line := fmt.Sprintf("%s (p50 %v, p99 %v; limited by: %s)", fmtRates([]float64{a.rate}), a.p50.Round(time.Millisecond), a.p99.Round(time.Millisecond), a.limit)
				if a.unsteady != "" {
					line += "; flagged unsteady by the sweep: " + a.unsteady
					if !in {
						flagged++
					}
				}
				lines = append(lines, line)
			}
			t.Logf("EXAMPLE JOB %s: median %s, %d of %d within ±10%% of it, %d of the others flagged unsteady by the sweep itself %s\n  %s",
				j.name, fmtRates([]float64{med}), within, len(answers), flagged, verdict(within+flagged == len(answers)), strings.Join(lines, "\n  "))
			record(t, "example_job_"+j.name, map[string]any{"rates": rates, "median": med, "within": within, "flagged": flagged})
		})
	}
}

// startExample starts an example job and waits for its first words.
func startExample(t *testing.T, env []string, bin string, args ...string) {
	t.Helper()
	job, err := StartEnv(env, bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = job.Signal(syscall.SIGKILL); _ = job.Wait(5 * time.Second) })
	time.Sleep(time.Second)
	if job.Cmd.ProcessState != nil {
		t.Fatalf("%s exited:\n%s", bin, job.Stderr.String())
	}
}

// npmExample is a copy of examples/jobs/node-filter with its nats client
// installed from the lock file.
func npmExample(t *testing.T) string {
	t.Helper()
	return npmCopy(t, filepath.Join(moduleDir(t), "examples", "jobs", "node-filter"), "filter.js")
}

// npmCopy copies a Node package's manifest, lock file and scripts from
// src into a temporary directory and installs its dependencies there
// from the lock file (npm ci).
func npmCopy(t *testing.T, src string, scripts ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range append([]string{"package.json", "package-lock.json"}, scripts...) {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ci := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	ci.Dir = dir
	if out, err := ci.CombinedOutput(); err != nil {
		skipOrFail(t, fmt.Sprintf("npm ci: %v\n%s", err, out))
	}
	return dir
}

// TestBenchNamedFromOutside: YSB on the engine with its join made the
// limit (400 µs a view), swept at 15 k/s repeats() times (10 for the
// issue's figure) without its agent, its process named: how often the
// limit is the system under test; and with its agent, how often it is
// the join.
func TestBenchNamedFromOutside(t *testing.T) {
	benchOnly(t)
	natsAddr, _ := realserver.NATS(t)
	redisAddr, _ := realserver.Redis(t)
	outside, agent := 0, 0
	n := repeats()
	for i := 0; i < n; i++ {
		in, out := fmt.Sprintf("jetstream://%s/nfo%d.in", natsAddr, i), fmt.Sprintf("jetstream://%s/nfo%d.out", natsAddr, i)
		job := startJob(t, "ysb", "--input", in+"?group=ysb", "--output", out, "--redis", redisAddr, "--window", "1s", "--lateness", "500ms", "--join-work", "400us")
		rep, _ := runSweepAllowing(t, 2*time.Minute, []int{sweep.ExitNoRatePassed}, jobSweepArgs(in, out,
			"--search", "linear", "--from", "15k", "--to", "15k", "--step", "5k", "--duration", "3s", "--stage-period", "100ms", "--sut-process", "cpjob")...)
		if rep.Limiting == "the system under test" {
			outside++
		}
		t.Logf("outside %d: limited by: %s (%s)", i, rep.Limiting, rep.Evidence)
		_ = job.Signal(syscall.SIGKILL)
		_ = job.Wait(5 * time.Second)
		in, out = fmt.Sprintf("jetstream://%s/nfa%d.in", natsAddr, i), fmt.Sprintf("jetstream://%s/nfa%d.out", natsAddr, i)
		addr := startJobAgent(t, in, out, redisAddr, "--join-work", "400us")
		rep, _ = runSweepAllowing(t, 2*time.Minute, []int{sweep.ExitNoRatePassed}, jobSweepArgs(in, out,
			"--search", "linear", "--from", "15k", "--to", "15k", "--step", "5k", "--duration", "3s", "--stage-period", "100ms", "--job-agent", addr)...)
		if rep.Limiting == "ysb/join" {
			agent++
		}
		t.Logf("agent %d: limited by: %s (%s)", i, rep.Limiting, rep.Evidence)
	}
	t.Logf("NAMED FROM OUTSIDE: the system under test in %d of %d sweeps without the job's agent %s; ysb/join in %d of %d with it %s",
		outside, n, verdict(outside == n), agent, n, verdict(agent == n))
	record(t, "named_from_outside", map[string]any{"outside": outside, "agent": agent, "sweeps": n})
}
