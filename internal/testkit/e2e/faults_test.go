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

	"github.com/cloudprofiler-go/cp/sender/tally"
	"github.com/cloudprofiler-go/cp/sweep"
)

// Faults of the instrument itself, on the real binaries: each must end in
// the documented message and a non-zero exit, never a confident number.

// TestReceiverKilledMidRun: dgsend cannot claim a delivery it cannot know.
func TestReceiverKilledMidRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"block low rate", []string{"--rate", "1000", "--overflow", "block"}},
		{"block high rate", []string{"--rate", "200k", "--bucket", "10", "--overflow", "block"}},
		{"drop low rate", []string{"--rate", "1000", "--overflow", "drop"}},
		{"drop high rate", []string{"--rate", "200k", "--bucket", "10", "--overflow", "drop"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := mustPort(t)
			recv, err := Start(filepath.Join(binDir, "dgrecv"), "--bind", fmt.Sprintf("tcp://127.0.0.1:%d", port), "--metrics-addr", "", "--calibrate", "30ms")
			if err != nil {
				t.Fatal(err)
			}
			if !recv.WaitForLine("listening on", 5*time.Second) {
				t.Fatalf("dgrecv did not start:\n%s", recv.Stderr.String())
			}
			args := append([]string{"--connect", fmt.Sprintf("tcp://127.0.0.1:%d", port), "--duration", "3s", "--json",
				"--metrics-addr", "", "--calibrate", "30ms", "--scenario", "synthetic:100"}, tc.args...)
			snd, err := Start(filepath.Join(binDir, "dgsend"), args...)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(1200 * time.Millisecond)
			_ = recv.Signal(syscall.SIGKILL)
			_ = recv.Wait(5 * time.Second)
			err = snd.Wait(30 * time.Second)
			if ExitCode(err) == 0 {
				t.Fatalf("dgsend exited 0 with its receiver killed:\n%s", snd.Stderr.String())
			}
			var res tally.Result
			if jerr := json.Unmarshal(snd.Stdout.Bytes(), &res); jerr != nil {
				t.Fatalf("no JSON result (%v):\n%s", jerr, snd.Stdout.String())
			}
			all := strings.Join(res.Errors, "\n")
			if !strings.Contains(all, "gone at the end") || len(res.Links) != 1 || res.Links[0].Disconnects < 1 || res.Links[0].Flushed {
				t.Errorf("errors %q, links %+v", all, res.Links)
			}
			if !strings.Contains(snd.Stderr.String(), "run finished with errors") {
				t.Errorf("stderr: %s", snd.Stderr.String())
			}
		})
	}
}

// TestNoReceiverAtAll: with nobody listening, dgsend says that nothing was
// delivered and does not wait long for it.
func TestNoReceiverAtAll(t *testing.T) {
	started := time.Now()
	snd, err := Start(filepath.Join(binDir, "dgsend"), "--connect", fmt.Sprintf("tcp://127.0.0.1:%d", mustPort(t)), "--rate", "1000",
		"--duration", "1s", "--json", "--metrics-addr", "", "--calibrate", "30ms")
	if err != nil {
		t.Fatal(err)
	}
	err = snd.Wait(30 * time.Second)
	var res tally.Result
	if jerr := json.Unmarshal(snd.Stdout.Bytes(), &res); jerr != nil {
		t.Fatalf("no JSON result (%v):\n%s", jerr, snd.Stderr.String())
	}
	if ExitCode(err) == 0 || !strings.Contains(strings.Join(res.Errors, "\n"), "no peer ever connected") {
		t.Fatalf("exit %d, errors %q", ExitCode(err), res.Errors)
	}
	if took := time.Since(started); took > 5*time.Second {
		t.Errorf("a 1 s run with no receiver took %v", took)
	}
}

// TestHealthyRunClaimsDelivery: the counterpart, so that the checks above
// cannot pass by always complaining.
func TestHealthyRunClaimsDelivery(t *testing.T) {
	pr := Pair{Bin: binDir, SendArgs: []string{"--rate", "20k", "--bucket", "10", "--duration", "1s", "--scenario", "synthetic:100"},
		RecvArgs: []string{"--schema", "synthetic", "--expect-streams", "1"}}
	pr.Run(t)
	if pr.SendExit != 0 || pr.RecvExit != 0 || len(pr.Send.Links) != 1 || !pr.Send.Links[0].Flushed || pr.Send.Links[0].Disconnects != 0 {
		t.Fatalf("exits %d/%d, links %+v, errors %v", pr.SendExit, pr.RecvExit, pr.Send.Links, pr.Send.Errors)
	}
}

// TestSenderKilledMidRun: the receiver waits for the end marker, gives up
// after --end-timeout and exits 3 (incomplete), saying which stream.
func TestSenderKilledMidRun(t *testing.T) {
	port := mustPort(t)
	recv, err := Start(filepath.Join(binDir, "dgrecv"), "--bind", fmt.Sprintf("tcp://127.0.0.1:%d", port), "--metrics-addr", "127.0.0.1:0",
		"--end-timeout", "1s", "--json", "--calibrate", "30ms", "--schema", "synthetic")
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := recv.MetricsAddr(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	snd, err := Start(filepath.Join(binDir, "dgsend"), "--connect", fmt.Sprintf("tcp://127.0.0.1:%d", port), "--rate", "10k",
		"--duration", "10s", "--metrics-addr", "", "--calibrate", "30ms", "--scenario", "synthetic:100")
	if err != nil {
		t.Fatal(err)
	}
	waitMetric(t, metrics, "cp_receiver_consumed_tuples_total", 10*time.Second, positive) // killed mid-run
	_ = snd.Signal(syscall.SIGKILL)
	_ = snd.Wait(5 * time.Second)
	err = recv.Wait(20 * time.Second)
	if ExitCode(err) != 3 {
		t.Fatalf("dgrecv exit %d, want 3:\n%s", ExitCode(err), recv.Stderr.String())
	}
	if !strings.Contains(recv.Stdout.String(), "no end marker") {
		t.Errorf("the result does not say the end marker is missing:\n%s", recv.Stdout.String())
	}
}

// stopAgentDuring runs a sweep of one 6 s trial and stops the sender agent
// with SIGSTOP for pause once the trial's data flows; it returns cpsweep's
// exit status and output.
func stopAgentDuring(t *testing.T, pause time.Duration, extra ...string) (int, string) {
	t.Helper()
	recv, err := Start(filepath.Join(binDir, "dgrecv"), "--agent", "--bind", fmt.Sprintf("tcp://127.0.0.1:%d", mustPort(t)), "--metrics-addr", "127.0.0.1:0", "--calibrate", "30ms")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = recv.Signal(syscall.SIGKILL); _ = recv.Wait(5 * time.Second) }()
	snd, err := Start(filepath.Join(binDir, "dgsend"), "--agent", "--metrics-addr", "127.0.0.1:0", "--calibrate", "30ms")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = snd.Signal(syscall.SIGCONT)
		_ = snd.Signal(syscall.SIGKILL)
		_ = snd.Wait(5 * time.Second)
	}()
	sAddr, rAddr := agentAddr(t, snd), agentAddr(t, recv)
	args := append([]string{"--sender", sAddr, "--receiver", rAddr, "--results", t.TempDir(), "--duration", "5s", "--warmup", "1s",
		"--search", "linear", "--from", "10k", "--to", "10k", "--step", "10k", "--bucket", "10"}, extra...)
	sw, err := Start(filepath.Join(binDir, "cpsweep"), append(args, hostTolerant...)...)
	if err != nil {
		t.Fatal(err)
	}
	// Frozen while its trial runs (data arrives at the receiver).
	waitMetric(t, rAddr, "cp_receiver_consumed_tuples_total", 20*time.Second, positive)
	_ = snd.Signal(syscall.SIGSTOP)
	resume := time.AfterFunc(pause, func() { _ = snd.Signal(syscall.SIGCONT) })
	defer resume.Stop()
	err = sw.Wait(2 * time.Minute)
	return ExitCode(err), sw.Stdout.String() + sw.Stderr.String()
}

// TestAgentStoppedBriefly: an agent frozen for 10 s makes the trial
// invalid; with --retry-agent the sweep waits for it and repeats the trial.
func TestAgentStoppedBriefly(t *testing.T) {
	// This is a test of the retry, not of lateness: the repeated trial
	// runs on a machine that may be busy, so its lateness bound is loose.
	code, out := stopAgentDuring(t, 10*time.Second, "--retry-agent", "40s", "--lateness-floor", "500ms")
	if code != sweep.ExitAnswer || !strings.Contains(out, "INVALID") || !strings.Contains(out, "--retry-agent") || !strings.Contains(out, "max sustainable throughput: at least") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// TestAgentStoppedLong: an agent frozen for 60 s ends the sweep with exit
// status 5, naming the agent, without waiting the minute out.
func TestAgentStoppedLong(t *testing.T) {
	started := time.Now()
	code, out := stopAgentDuring(t, 60*time.Second, "--retry-agent", "5s")
	if code != sweep.ExitAgentFailure || !strings.Contains(out, "stopped answering") || !strings.Contains(out, "did not come back") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if took := time.Since(started); took > 45*time.Second {
		t.Errorf("the sweep took %v to give up", took)
	}
}

// mountTmpfs mounts a small tmpfs (root and mount namespaces needed).
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
		skipOrFail(t, fmt.Sprintf("mount tmpfs: %v %s", err, out))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// TestDiskFull: profile logs on a full disk are an error naming the file
// and the records lost, and the exit status is not 0.
func TestDiskFull(t *testing.T) {
	dir := mountTmpfs(t, "size=256k")
	handlers := filepath.Join(t.TempDir(), "h.yaml")
	if err := os.WriteFile(handlers, []byte("default: {handler: buffered, path: '{name}.log', codec: none, block_size: 4096}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pr := Pair{Bin: binDir, SendArgs: []string{"--rate", "100k", "--bucket", "10", "--duration", "2s", "--scenario", "synthetic:100"},
		RecvArgs: []string{"--schema", "synthetic", "--expect-streams", "1", "--profile", handlers, "--profile-dir", dir}}
	pr.Run(t)
	stderr := pr.RecvProc.Stderr.String()
	if pr.RecvExit == 0 || !strings.Contains(stderr, "records lost") || !strings.Contains(stderr, "no space left") || !strings.Contains(stderr, ".log") {
		t.Fatalf("dgrecv exit %d on a full disk:\n%s", pr.RecvExit, stderr)
	}
	if pr.Recv.Consumed != pr.Send.Emitted {
		t.Errorf("the run's own result must stand: consumed %d of %d", pr.Recv.Consumed, pr.Send.Emitted)
	}
}

// TestReadOnlyDirectories: a read-only profile directory fails before the
// run; a result file that cannot be written fails the run.
func TestReadOnlyDirectories(t *testing.T) {
	ro := mountTmpfs(t, "size=64k,ro")
	handlers := filepath.Join(t.TempDir(), "h.yaml")
	if err := os.WriteFile(handlers, []byte("default: {handler: buffered, path: '{name}.log'}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Start(filepath.Join(binDir, "dgrecv"), "--bind", fmt.Sprintf("tcp://127.0.0.1:%d", mustPort(t)), "--metrics-addr", "",
		"--profile", handlers, "--profile-dir", ro, "--calibrate", "30ms")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(20 * time.Second); ExitCode(err) != 1 || !strings.Contains(p.Stderr.String(), "read-only") {
		t.Fatalf("dgrecv with a read-only profile directory: exit %d\n%s", ExitCode(err), p.Stderr.String())
	}
	snd, err := Start(filepath.Join(binDir, "dgsend"), "--connect", fmt.Sprintf("tcp://127.0.0.1:%d", mustPort(t)), "--rate", "1000",
		"--duration", "300ms", "--metrics-addr", "", "--calibrate", "30ms", "-o", filepath.Join(ro, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := snd.Wait(30 * time.Second); ExitCode(err) == 0 || !strings.Contains(snd.Stderr.String(), "result.json") {
		t.Fatalf("dgsend -o into a read-only directory: exit %d\n%s", ExitCode(err), snd.Stderr.String())
	}
}

// skipOrFail skips a test whose environment is missing, or fails it when
// CP_REQUIRE_ALL is set (CI), so that nothing is skipped silently there.
func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CP_REQUIRE_ALL") != "" {
		t.Fatalf("CP_REQUIRE_ALL is set but %s", why)
	}
	t.Skip(why)
}

// TestScheduleNotKeptIsSaidFirst: a run that cannot keep its rate says so
// in the first line of its summary, and --strict makes that an exit 1; a
// run that keeps it says nothing of the kind.
func TestScheduleNotKeptIsSaidFirst(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		kept    bool
		strict  bool
		wantErr bool
	}{
		{"impossible rate", []string{"--rate", "50M", "--no-rate-check"}, false, false, false},
		{"impossible rate, strict", []string{"--rate", "50M", "--no-rate-check", "--strict"}, false, true, true},
		{"easy rate, strict", []string{"--rate", "2000", "--late-threshold", "5ms", "--max-late-fraction", "0.2", "--strict"}, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := Pair{Bin: binDir, RecvArgs: []string{"--drain", "--expect-streams", "1"},
				SendArgs: append([]string{"--duration", "1s", "--scenario", "synthetic-100"}, tc.args...)}
			pr.Run(t)
			if pr.Send.ScheduleKept != tc.kept || (pr.SendExit != 0) != tc.wantErr {
				t.Fatalf("kept %v (%q), exit %d", pr.Send.ScheduleKept, pr.Send.Schedule, pr.SendExit)
			}
			// The text summary, from the same run's JSON.
			var b strings.Builder
			pr.Send.WriteText(&b)
			first := strings.SplitN(b.String(), "\n", 2)[0]
			if tc.kept == strings.Contains(first, "SCHEDULE NOT KEPT") {
				t.Fatalf("first line %q with the schedule kept: %v", first, tc.kept)
			}
			if tc.strict && !tc.kept && !strings.Contains(pr.SendProc.Stderr.String(), "--strict: the schedule was not kept") {
				t.Fatalf("stderr: %s", pr.SendProc.Stderr.String())
			}
		})
	}
}
