package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sut/ysb"
	"github.com/cloudprofiler-go/cp/sweep"
)

// jobSweepArgs are a sweep of YSB between in and out: short trials, the
// windows' counts owed exactly as the views the senders sent, per
// campaign and window of 1 s.
func jobSweepArgs(in, out string, extra ...string) []string {
	return append([]string{"--input", in + "?group=ysb", "--output", out, "--scenario", "ad-event", "--schema", "window",
		"--expect-filter", "event_type == view", "--expect-window", "1s", "--bucket", "100", "--duration", "2s", "--warmup", "500ms",
		"--job-quiet", "2500ms", "--lateness-floor", "100ms", "--stage-period", "0"}, extra...)
}

// startYSB starts YSB on the engine from in to out: cpjob ysb, or, with
// a fault, the same job's configuration with one processor added (a test
// build of the system), run by cpjob run.
func startYSB(t *testing.T, in, out, redisAddr string, fault func(yaml string) string) *Proc {
	t.Helper()
	args := []string{"ysb", "--input", in + "?group=ysb", "--output", out, "--redis", redisAddr, "--window", "1s", "--lateness", "500ms"}
	if fault != nil {
		c := ysb.Defaults()
		c.Input, c.Output, c.Redis, c.Lateness = in+"?group=ysb", out, redisAddr, 500*time.Millisecond
		s, err := scenarios.Load("ad-event")
		if err != nil {
			t.Fatal(err)
		}
		if err := ysb.LoadCampaigns(context.Background(), redisAddr, s); err != nil {
			t.Fatal(err)
		}
		conf, err := c.YAML()
		if err != nil {
			t.Fatal(err)
		}
		return runJobConfig(t, fault(conf))
	}
	return startJob(t, args...)
}

// runJobConfig runs a Benthos configuration with cpjob run.
func runJobConfig(t *testing.T, yaml string) *Proc {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(conf, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return startJob(t, "run", conf)
}

// startJob starts cpjob, killed when the test ends, and waits until it
// runs.
func startJob(t *testing.T, args ...string) *Proc {
	t.Helper()
	return startJobEnv(t, nil, args...)
}

// startJobEnv is startJob with env (NAME=VALUE) added to the job's.
func startJobEnv(t *testing.T, env []string, args ...string) *Proc {
	t.Helper()
	job, err := StartEnv(env, filepath.Join(binDir, "cpjob"), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = job.Signal(syscall.SIGKILL); _ = job.Wait(10 * time.Second) })
	if !job.WaitForLine("cpjob ", 30*time.Second) {
		t.Fatalf("cpjob did not start:\n%s", job.Stderr.String())
	}
	return job
}

// TestSweepAJobBetweenTopics: cpsweep --input/--output sweeps YSB on the
// engine through JetStream, two trials at fixed rates: each is exact (the
// windows' counts are the views the senders counted, and the output read
// back holds every view of the input in its campaign's window, each
// window once), the second trial's receiver goes on with the job's output
// stream where the first left it, and the answer's latency is YSB's.
func TestSweepAJobBetweenTopics(t *testing.T) {
	natsAddr, _ := realserver.NATS(t)
	redisAddr, _ := realserver.Redis(t)
	in, out := "jetstream://"+natsAddr+"/ysb.in", "jetstream://"+natsAddr+"/ysb.out"
	startYSB(t, in, out, redisAddr, nil)
	// The YSB example plan (examples/plans/ysb.yaml) gives the scenario,
	// the window schema and what the job owes; beside it, this test's
	// topics and a short linear search, no profiled trial.
	rep, p := runSweep(t, 3*time.Minute, "--plan", filepath.Join(moduleDir(t), "examples", "plans", "ysb.yaml"),
		"--input", in+"?group=ysb", "--output", out, "--search", "linear", "--from", "5k", "--to", "10k", "--step", "5k",
		"--duration", "2s", "--warmup", "500ms", "--job-quiet", "2500ms", "--lateness-floor", "100ms", "--stage-period", "0", "--profile", "")
	if len(rep.Result.Trials) != 2 {
		t.Fatalf("%d trials\n%s", len(rep.Result.Trials), p.Stderr.String())
	}
	for i, tr := range rep.Result.Trials {
		if !tr.Verdict.Pass {
			t.Errorf("trial %d failed: %s", i+1, failedRules(tr.Verdict.Checks))
		}
		for _, c := range tr.Verdict.Checks {
			if c.Rule == "delivery" && (!strings.Contains(c.Detail, "counted in the windows consumed: exact") || !strings.Contains(c.Detail, "per key and window: all")) {
				t.Errorf("trial %d: delivery %q", i+1, c.Detail)
			}
		}
		// the achieved rate is the input the job kept up with, not its
		// windows per second
		if tr.Achieved < 0.9*tr.Rate {
			t.Errorf("trial %d at %.0f/s: achieved %.0f/s", i+1, tr.Rate, tr.Achieved)
		}
	}
	if want, got := viewsIn(t, in), windowsIn(t, out); !maps.Equal(want, got) || len(want) == 0 {
		t.Errorf("over both trials the job counted %d windows, the input holds views of %d; first difference: %s", len(got), len(want), firstWindowDifference(want, got))
	}
	first, second := jobStreams(t, rep.Dir, 1), jobStreams(t, rep.Dir, 2)
	if len(first) != 1 || len(second) != 1 || second[0].FirstSeq != first[0].NextSeq || second[0].FirstSeq == 0 {
		t.Errorf("the job's output stream: trial 1 %+v, trial 2 %+v; want trial 2 to go on at trial 1's next sequence", first, second)
	}
	// a job's fields in the run directory are documented as every other
	for _, f := range []string{"summary.json", "trials/002.json"} {
		b, err := os.ReadFile(filepath.Join(rep.Dir, f))
		if err != nil {
			t.Fatal(err)
		}
		checkFieldsDocumented(t, f, b, 20)
	}
	if s := p.Stderr.String() + p.Stdout.String(); !strings.Contains(s, sweep.WindowLatency(receiver.WindowFromIdentity)) {
		t.Errorf("the answer's latency is not said to be YSB's window latency:\n%s", s)
	}
}

// jobStream is what a trial's receiver recorded of one output stream.
type jobStream struct {
	Stream   uint32 `json:"stream"`
	FirstSeq uint64 `json:"first_seq"`
	NextSeq  uint64 `json:"next_seq"`
	Status   string `json:"status"`
}

// jobStreams reads trial n's receiver streams from the run directory.
func jobStreams(t *testing.T, dir string, n int) []jobStream {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "trials", fmt.Sprintf("%03d.json", n)))
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		Outcome struct {
			Receivers []struct {
				Streams []jobStream `json:"streams"`
			} `json:"receivers"`
		} `json:"outcome"`
	}
	if err := json.Unmarshal(b, &tr); err != nil || len(tr.Outcome.Receivers) != 1 {
		t.Fatalf("trial %d: %v (%d receivers)", n, err, len(tr.Outcome.Receivers))
	}
	return tr.Outcome.Receivers[0].Streams
}

// TestSweepNamesAFaultyJobsExactError: test builds of YSB, its own
// configuration with one processor added, that drop one view, duplicate
// one, count one window one too high, or count one view in the next
// window (the sums agree): the trial fails on delivery, naming the
// difference exactly; the other rules hold.
func TestSweepNamesAFaultyJobsExactError(t *testing.T) {
	natsAddr, _ := realserver.NATS(t)
	redisAddr, _ := realserver.Redis(t)
	for i, tc := range []struct {
		name, after, insert, want string // insert: steps after the processor labelled after
	}{
		{"drops one view", "projection", "- label: drop_one\n  mapping: 'root = if count(\"drop\") == 500 { deleted() }'\n", "1 missing"},
		{"duplicates one view", "projection", "- label: duplicate_one\n  mapping: 'root = if count(\"dup\") == 500 { [this, this] } else { [this] }'\n- unarchive:\n    format: json_array\n", "1 more than owed"},
		// hostile output: every window written ten times over
		{"writes every window ten times", "window", "- label: ten_times\n  mapping: 'root = [this, this, this, this, this, this, this, this, this, this]'\n- unarchive:\n    format: json_array\n", "nine times owed"},
		{"counts a window one too high", "window", "- label: miscount_one\n  mapping: |\n    root = this\n    root.count = if count(\"miscount\") == 20 { this.count + 1 } else { this.count }\n", "1 more than owed"},
		{"counts a view in the next window", "projection", "- label: one_late\n  mapping: |\n    root = this\n    root.event_time_ms = if count(\"late\") == 500 { this.event_time_ms + 1000 } else { this.event_time_ms }\n", "one window off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, out := fmt.Sprintf("jetstream://%s/fault%d.in", natsAddr, i), fmt.Sprintf("jetstream://%s/fault%d.out", natsAddr, i)
			startYSB(t, in, out, redisAddr, func(y string) string { return withSteps(t, y, tc.after, tc.insert) })
			rep, p := runSweepAllowing(t, 2*time.Minute, []int{sweep.ExitNoRatePassed}, jobSweepArgs(in, out, "--search", "linear", "--from", "5k", "--to", "5k", "--step", "5k")...)
			if len(rep.Result.Trials) != 1 {
				t.Fatalf("%d trials\n%s", len(rep.Result.Trials), p.Stderr.String())
			}
			tr := rep.Result.Trials[0]
			for _, c := range tr.Verdict.Checks {
				if c.Rule == "delivery" {
					t.Logf("delivery: %s", c.Detail)
				}
				switch {
				case c.Rule == "delivery" && tc.want == "nine times owed":
					var owed, emitted, got, more uint64
					_, err := fmt.Sscanf(c.Detail, "the job owes the %d of %d emitted that \"event_type == view\" keeps; %d counted in the windows consumed: %d more than owed", &owed, &emitted, &got, &more)
					if c.Pass || err != nil || owed == 0 || got != 10*owed || more != 9*owed {
						t.Errorf("delivery: pass %v, %q (%v); want it failed with ten times what is owed", c.Pass, c.Detail, err)
					}
				case c.Rule == "delivery" && tc.want == "one window off":
					// the sums agree; the windows do not: the view's own
					// window is one short, the next one over
					if c.Pass || !strings.Contains(c.Detail, ": exact;") || !strings.Contains(c.Detail, "per key and window: 2 of") || !strings.Contains(c.Detail, "counted") {
						t.Errorf("delivery: pass %v, %q; want it failed with two windows named", c.Pass, c.Detail)
					}
				case c.Rule == "delivery" && (c.Pass || !strings.Contains(c.Detail, ": "+tc.want+";")):
					t.Errorf("delivery: pass %v, %q; want it failed with %q", c.Pass, c.Detail, tc.want)
				case c.Rule != "delivery" && !c.Pass:
					t.Errorf("rule %s failed too: %s", c.Rule, c.Detail)
				}
			}
		})
	}
}

// TestSweepFaultsOfAJob: what is wrong with the system under test is an
// invalid trial that names it (exit 8), never a rate: a job still behind
// on its input when a trial is due (after --catch-up; the next sweep, the
// job running, waits for it to catch up and passes, the backlog's windows
// counted apart), the job killed mid-trial, and the input topic deleted
// under it mid-trial.
func TestSweepFaultsOfAJob(t *testing.T) {
	natsAddr, _ := realserver.NATS(t)
	redisAddr, _ := realserver.Redis(t)
	single := []string{"--search", "linear", "--from", "5k", "--to", "5k", "--step", "5k"}
	t.Run("behind", func(t *testing.T) {
		in, out := "jetstream://"+natsAddr+"/behind.in", "jetstream://"+natsAddr+"/behind.out"
		e, err := driver.Parse(in + "?group=ysb")
		if err != nil {
			t.Fatal(err)
		}
		if err := ysbBrokers.Ensure(e); err != nil {
			t.Fatal(err)
		}
		send, err := Start(filepath.Join(binDir, "dgsend"), "--connect", in, "--scenario", "ad-event", "--rate", "5k", "--duration", "1s", "--bucket", "100")
		if err != nil {
			t.Fatal(err)
		}
		if err := send.Wait(30 * time.Second); err != nil {
			t.Fatalf("dgsend: %v\n%s", err, send.Stderr.String())
		}
		lag, err := ysbBrokers.GroupLag(e)
		if err != nil || lag < 50 {
			t.Fatalf("the job's lag before the sweep: %d, %v; want at least the 50 buckets sent", lag, err)
		}
		_, p := runSweepAllowing(t, time.Minute, []int{sweep.ExitSystemFailed}, jobSweepArgs(in, out, append(single, "--catch-up", "2s")...)...)
		want := fmt.Sprintf("the job is still %d message(s) behind", lag)
		if code := ExitCode(p.Wait(time.Second)); code != sweep.ExitSystemFailed || !strings.Contains(p.Stderr.String(), want) {
			t.Errorf("exit %d, want %d saying %q:\n%s", code, sweep.ExitSystemFailed, want, p.Stderr.String())
		}
		startYSB(t, in, out, redisAddr, nil)
		rep, p := runSweep(t, 2*time.Minute, jobSweepArgs(in, out, single...)...)
		if len(rep.Result.Trials) != 1 || !rep.Result.Trials[0].Verdict.Pass {
			t.Fatalf("after the job caught up: %+v\n%s", rep.Result.Trials, p.Stderr.String())
		}
	})
	for _, fault := range []string{"killed", "input deleted"} {
		t.Run(fault, func(t *testing.T) {
			name := strings.ReplaceAll(fault, " ", "")
			in, out := "jetstream://"+natsAddr+"/"+name+".in", "jetstream://"+natsAddr+"/"+name+".out"
			job := startYSB(t, in, out, redisAddr, nil)
			sw, err := Start(filepath.Join(binDir, "cpsweep"), append(append([]string{"--results", t.TempDir()}, hostTolerant...),
				jobSweepArgs(in, out, "--search", "linear", "--from", "5k", "--to", "5k", "--step", "5k", "--duration", "8s")...)...)
			if err != nil {
				t.Fatal(err)
			}
			if !sw.WaitForLine("sweep \"sweep\": senders", 60*time.Second) {
				t.Fatalf("the sweep did not start:\n%s", sw.Stderr.String())
			}
			time.Sleep(5 * time.Second) // inside the trial's 8.5 s, which starts 1.5 s in
			if fault == "killed" {
				_ = job.Signal(syscall.SIGKILL)
			} else {
				if err := realserver.DeleteJetStream(natsAddr, name+".in"); err != nil {
					t.Fatal(err)
				}
			}
			err = sw.Wait(2 * time.Minute)
			t.Log(sw.Stderr.String())
			out2 := sw.Stdout.String() + sw.Stderr.String()
			if code := ExitCode(err); code != sweep.ExitSystemFailed || !strings.Contains(out2, "the system under test failed") || strings.Contains(out2, "max sustainable") {
				t.Errorf("exit %d (%v), want %d naming the system under test, no answer:\n%s", code, err, sweep.ExitSystemFailed, out2)
			}
			// Which part sees a deleted input first is a race: the senders'
			// publishes fail until the job makes it again (at once, on
			// reconnecting), for a reason of the broker's (no stream, or
			// the stream's files gone under it); the receiver sees it made again, or its read
			// fails when the deletion outlasts a read's interval.
			named := map[string][]string{
				"killed":        {"the job made no progress"},
				"input deleted": {"was deleted and made again mid-trial", "could not be read", "publishes to " + name + ".in failed (the first: "},
			}[fault]
			if !slices.ContainsFunc(named, func(s string) bool { return strings.Contains(out2, s) }) {
				t.Errorf("the fault is not named (any of %q):\n%s", named, out2)
			}
		})
	}
}

// withSteps is a job's configuration with steps (a YAML sequence of
// processors) put right after the processor labelled after.
func withSteps(t *testing.T, conf, after, steps string) string {
	t.Helper()
	var doc, add yaml.Node
	if err := yaml.Unmarshal([]byte(conf), &doc); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(steps), &add); err != nil || len(add.Content) != 1 || add.Content[0].Kind != yaml.SequenceNode {
		t.Fatalf("steps %q: %v (want a sequence)", steps, err)
	}
	labelled := func(n *yaml.Node) bool {
		for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "label" && n.Content[i+1].Value == after {
				return true
			}
		}
		return false
	}
	var put func(n *yaml.Node) bool
	put = func(n *yaml.Node) bool {
		for i, c := range n.Content {
			if n.Kind == yaml.SequenceNode && labelled(c) {
				n.Content = slices.Concat(n.Content[:i+1], add.Content[0].Content, n.Content[i+1:])
				return true
			}
			if put(c) {
				return true
			}
		}
		return false
	}
	if !put(&doc) {
		t.Fatalf("no processor labelled %q in the job's configuration:\n%s", after, conf)
	}
	b, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
