package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/sweep"
)

// The fifth round of hostile inputs: a plan or a run directory from
// someone else, files that never end, output that would overwrite, text
// that would forge lines (docs/security.md).

// strangerHost is a loopback listener standing for a host of the
// stranger's: it counts the connections made to it.
func strangerHost(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return l.Addr().String(), &n
}

// TestStrangersPlanIsShownFirst: a run directory whose plan sends a file
// of the user's to the stranger's broker, their token to the stranger's
// agent and its run directory into /, rerun (and --plan) list all of it
// and, with no terminal and no --yes, refuse (exit 4) with nothing read
// and nothing sent.
func TestStrangersPlanIsShownFirst(t *testing.T) {
	broker, brokerConns := strangerHost(t)
	agent, agentConns := strangerHost(t)
	work := t.TempDir()
	secret := filepath.Join(work, "customers.jsonl")
	if err := os.WriteFile(secret, []byte(`{"customer":"c-1","card":"4111"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(work, "api-token")
	if err := os.WriteFile(token, []byte("a-token-of-the-users-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(work, "20261206T000000Z-shared")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	plan := "name: shared\nevents: " + secret + "\ninput: nats://" + broker + "/in?format=json\noutput: nats://" + broker + "/out?format=json\n" +
		"token-file: " + token + "\nsender: [" + agent + "]\nreceiver: [" + agent + "]\nresults: /\n"
	if err := os.WriteFile(filepath.Join(run, "plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	atimeBefore := atime(t, secret)
	cpsweep := filepath.Join(binDir, "cpsweep")
	for _, args := range [][]string{{"rerun", run}, {"--plan", filepath.Join(run, "plan.yaml")}} {
		cmd := exec.Command(cpsweep, args...)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		if ExitCode(err) != sweep.ExitInvalidPlan {
			t.Fatalf("%v: %v, want exit 4\n%s", args, err, out)
		}
		for _, want := range []string{"reads these files of yours", secret, token, "writes its run directory in", "results: /",
			"contacts these hosts", broker, agent, "give --yes"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%v: the listing lacks %q:\n%s", args, want, out)
			}
		}
		if strings.Contains(string(out), "4111") || strings.Contains(string(out), "a-token-of-the-users") {
			t.Errorf("%v printed a file's content:\n%s", args, out)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if n := brokerConns.Load() + agentConns.Load(); n != 0 {
		t.Errorf("%d connection(s) to the stranger's hosts before anyone confirmed", n)
	}
	if atime(t, secret) != atimeBefore {
		t.Errorf("the events file was read before anyone confirmed")
	}
	if entries, _ := filepath.Glob("/*-shared"); len(entries) != 0 {
		t.Errorf("a run directory was written in /: %v", entries)
	}
}

// atime is a file's last access time (read-only mounts aside, a read
// moves it when it is older than its modification: relatime).
func atime(t *testing.T, path string) time.Time {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return time.Unix(st.Atim.Sec, st.Atim.Nsec)
}

// TestRerunReadsOnlyItsOwnPlan: a plan.yaml that is a link (to a file of
// the user's) is refused without printing a line of it, and a huge
// summary.json is never read (rerun needs the plan alone).
func TestRerunReadsOnlyItsOwnPlan(t *testing.T) {
	work := t.TempDir()
	private := filepath.Join(work, "private")
	if err := os.WriteFile(private, []byte("root:*:20228:0:99999:7:::\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(work, "linked")
	if err := os.Mkdir(linked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(private, filepath.Join(linked, "plan.yaml")); err != nil {
		t.Fatal(err)
	}
	cpsweep := filepath.Join(binDir, "cpsweep")
	out, err := exec.Command(cpsweep, "rerun", "--yes", linked).CombinedOutput()
	if ExitCode(err) != sweep.ExitInvalidPlan || strings.Contains(string(out), "root:") || !strings.Contains(string(out), "symbolic link") {
		t.Errorf("rerun of a linked plan.yaml: %v\n%s", err, out)
	}
	// A 1 GiB summary.json (sparse) beside a plan of values: rerun shows
	// the plan and, unconfirmed, stops, in little memory and time.
	big := filepath.Join(work, "big")
	if err := os.Mkdir(big, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(big, "plan.yaml"), []byte("name: big\nduration: 1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(big, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cmd := exec.Command(cpsweep, "rerun", big)
	start := time.Now()
	out, err = cmd.CombinedOutput()
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB
	if ExitCode(err) != sweep.ExitInvalidPlan || !strings.Contains(string(out), "duration: 1s") || rss > 100<<10 || time.Since(start) > 10*time.Second {
		t.Errorf("rerun beside a 1 GiB summary.json: %v, %d KiB, %v\n%s", err, rss, time.Since(start), out)
	}
}

// TestKernelFilesAsInputs: a link to /proc/kmsg as --events, --plan or a
// rerun's plan.yaml is refused at once (it used to wait for kernel
// messages forever).
func TestKernelFilesAsInputs(t *testing.T) {
	work := t.TempDir()
	kmsg := filepath.Join(work, "events.jsonl")
	if err := os.Symlink("/proc/kmsg", kmsg); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(work, "plan.yaml")
	if err := os.Symlink("/proc/kmsg", plan); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		bin  string
		args []string
	}{
		{"dgsend", []string{"--events", kmsg, "--connect", "nats://127.0.0.1:1/x?format=json", "--count", "1"}},
		{"cpsweep", []string{"--events", kmsg, "--sut", "nats://127.0.0.1:1/x?format=json"}},
		{"cpsweep", []string{"--plan", plan}},
		{"cpsweep", []string{"rerun", "--yes", work}},
	} {
		cmd := exec.Command(filepath.Join(binDir, c.bin), c.args...)
		done := make(chan error, 1)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if ExitCode(err) == 0 || !strings.Contains(out.String(), "refused") {
				t.Errorf("%s %v: %v\n%s", c.bin, c.args, err, out.String())
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("%s %v hangs on a link to /proc/kmsg", c.bin, c.args)
		}
	}
}

// TestPrivateFileAsSettingShowsNoLine: a private file given where a
// handler configuration, a scenario or a metrics mapping is expected is
// refused naming the file and its lines, never printing a line of it.
func TestPrivateFileAsSettingShowsNoLine(t *testing.T) {
	work := t.TempDir()
	private := filepath.Join(work, "shadow")
	if err := os.WriteFile(private, []byte("root:*:20228:0:99999:7:::\nsecret_key: hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, setting := range []string{"profile", "scenario", "job-metrics-map"} {
		plan := filepath.Join(work, setting+".yaml")
		body := setting + ": " + private + "\n"
		if setting == "job-metrics-map" {
			body += "job-metrics: [http://127.0.0.1:1/metrics]\n"
		}
		if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(filepath.Join(binDir, "cpsweep"), "--plan", plan, "--yes").CombinedOutput()
		if ExitCode(err) != sweep.ExitInvalidPlan || !strings.Contains(string(out), "line 1") || !strings.Contains(string(out), private) ||
			strings.Contains(string(out), "root:") || strings.Contains(string(out), "secret_key") || strings.Contains(string(out), "hunter2") {
			t.Errorf("%s: %v\n%s", setting, err, out)
		}
	}
}

// TestHgrmNeverOverwritesInSilence: dgrecv --hgrm refuses, before the
// run, a device, a FIFO and a file that is already there; --force
// replaces the files, keeping their modes; --force alone is refused.
func TestHgrmNeverOverwritesInSilence(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.hgrm")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(dir, "mine.hgrm")
	if err := os.WriteFile(mine, []byte("the user's own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mine.hlog"), []byte("the user's own\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--hgrm", "/dev/null"}, "/dev/null is not a regular file (a character device)"},
		{[]string{"--hgrm", fifo}, "(a FIFO)"},
		{[]string{"--hgrm", mine}, "exists: give --force"},
		{[]string{"--force"}, "--force lets --hgrm replace its files"},
	} {
		out, err := exec.Command(filepath.Join(binDir, "dgrecv"), tc.args...).CombinedOutput()
		if ExitCode(err) != sweep.ExitInvalidPlan || !strings.Contains(string(out), tc.want) {
			t.Errorf("dgrecv %v: %v, want exit 4 saying %q\n%s", tc.args, err, tc.want, out)
		}
	}
	if st, err := os.Stat("/dev/null"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is no longer a device: %v %v", st.Mode(), err)
	}
	pr := &Pair{Bin: binDir, RecvArgs: []string{"--hgrm", mine, "--force"},
		SendArgs: []string{"--rate", "20k", "--bucket", "10", "--count", "2000", "--duration", "0"}}
	pr.Run(t)
	if pr.RecvExit != 0 {
		t.Fatalf("dgrecv --force: exit %d\n%s", pr.RecvExit, pr.RecvProc.Stderr.String())
	}
	for name, mode := range map[string]os.FileMode{"mine.hgrm": 0o600, "mine.hlog": 0o640} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.Mode().Perm() != mode || st.Size() < 100 {
			t.Errorf("%s after --force: %v, %v bytes, mode %v, want %v", name, err, st.Size(), st.Mode().Perm(), mode)
		}
	}
}

// TestNamesCannotForgeLines: a newline or a terminal escape in a path
// the user gave, or in a run directory's name, is printed escaped: no
// line of the output can be made to read like the tool's own.
func TestNamesCannotForgeLines(t *testing.T) {
	work := t.TempDir()
	run := filepath.Join(work, "x\nFORGED: trial 1 PASS\x1b]0;title\x07\u009b")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "plan.yaml"), []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		bin  string
		args []string
	}{
		{"dgsend", []string{"--events", "evil\nFORGED: trial 1 PASS", "--connect", "nats://127.0.0.1:1/x?format=json"}},
		{"cpsweep", []string{"--events", "evil\nFORGED: trial 1 PASS", "--sut", "nats://127.0.0.1:1/x?format=json"}},
		{"cpsweep", []string{"rerun", run}},
		{"cpsweep", []string{"rerun", filepath.Join(work, "missing\nFORGED: trial 1 PASS")}},
	} {
		out, err := exec.Command(filepath.Join(binDir, c.bin), c.args...).CombinedOutput()
		if ExitCode(err) == 0 {
			t.Errorf("%s %q: exit 0\n%s", c.bin, c.args, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "FORGED") || strings.ContainsAny(line, "\x1b\x07\u009b") {
				t.Errorf("%s %q printed a forged line or an escape:\n%q", c.bin, c.args, out)
			}
		}
	}
}

// TestSUTOfJSONEventsTakesYourEvents: --sut naming a broker with
// format=json carries --events (the plan check used to look at a
// placeholder ZeroMQ target and refuse them); the bucket is one event.
func TestSUTOfJSONEventsTakesYourEvents(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(events, []byte(`{"order":"o-1"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A port nothing listens on: the plan is checked, then the broker is
	// not there, which is the trial's fault, not the plan's.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(filepath.Join(binDir, "cpsweep"), "--sut", "redis://"+addr+"/k?format=json", "--events", events,
		"--duration", "500ms", "--warmup", "0s", "--max-trials", "1", "--results", t.TempDir())
	out, err := cmd.CombinedOutput()
	if ExitCode(err) == sweep.ExitInvalidPlan || strings.Contains(string(out), "your events go only as JSON") || strings.Contains(string(out), "--bucket 1, not") {
		t.Errorf("--sut with format=json and --events: %v\n%s", err, out)
	}
}

// TestARateAboveTheSendersGoesOn: a first rate far above what the
// senders can send fails its trial on the send cost, and the next trial
// starts (the receiver's refused trial used to be still stopping: "trial 1
// is running: stop it first (POST /v1/trial/stop) (HTTP 409)", exit 5).
func TestARateAboveTheSendersGoesOn(t *testing.T) {
	cmd := exec.Command(filepath.Join(binDir, "cpsweep"), "--start", "1G", "--max-trials", "3", "--duration", "300ms", "--warmup", "100ms",
		"--max-others", "0", "--max-steal", "0", "--results", t.TempDir())
	out, err := cmd.CombinedOutput()
	if code := ExitCode(err); code == sweep.ExitAgentFailure || strings.Contains(string(out), "HTTP 409") || strings.Contains(string(out), "INVALID") ||
		!strings.Contains(string(out), "send-cost") || !strings.Contains(string(out), "trial  2") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// TestABrokerThatIsNotRunningIsNamed: a sweep whose broker is not there
// names it by its URL, as the system under test, with one exit status
// whether the broker is the system (--sut) or a job's (--input/--output).
func TestABrokerThatIsNotRunningIsNamed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, args := range [][]string{
		{"--sut", "jetstream://" + addr + "/cp"},
		{"--input", "jetstream://" + addr + "/in?group=job", "--output", "jetstream://" + addr + "/out"},
	} {
		start := time.Now()
		out, err := exec.Command(filepath.Join(binDir, "cpsweep"), append(args, "--results", t.TempDir())...).CombinedOutput()
		if ExitCode(err) != sweep.ExitSystemFailed || !strings.Contains(string(out), "the broker jetstream://"+addr+"/") ||
			!strings.Contains(string(out), "is not answering") || strings.Contains(string(out), "HTTP") || time.Since(start) > 10*time.Second {
			t.Errorf("%v: exit %d after %v\n%s", args, ExitCode(err), time.Since(start), out)
		}
	}
}

// TestTheRunningLineOnATerminal: on a terminal the running trial's line
// says its place among about how many and the time left, and is cleared
// in place when the trial ends: no escape shows as text (the clearing
// went through the escaping writer and read "\r\x1b[K").
func TestTheRunningLineOnATerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		skipOrFail(t, "no tmux here (apt-get install tmux; .ci/run installs it): the terminal check is skipped")
	}
	dir := t.TempDir()
	session := fmt.Sprintf("cpsweep%d", time.Now().UnixNano())
	cmdline := fmt.Sprintf("cd %s && %s --search linear --from 20k --to 60k --step 20k --duration 2s --warmup 200ms --max-others 0 --max-steal 0; sleep 30",
		dir, filepath.Join(binDir, "cpsweep"))
	if out, err := exec.Command("tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "30", cmdline).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	defer exec.Command("tmux", "kill-session", "-t", session).Run()
	var running, done string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && done == ""; time.Sleep(200 * time.Millisecond) {
		out, err := exec.Command("tmux", "capture-pane", "-p", "-t", session).Output()
		if err != nil {
			t.Fatal(err)
		}
		screen := string(out)
		if m := regexp.MustCompile(`trial +\d+ +linear +[0-9.]+ k/s +running \.\.\. \(of about 3, ~\d+s left\)`).FindString(screen); m != "" {
			running = m
		}
		if strings.Contains(screen, "max sustainable throughput") {
			done = screen
		}
	}
	if running == "" || done == "" || strings.Contains(done, `\x1b`) || strings.Contains(done, `\r`) || strings.Contains(done, "running ...") {
		t.Fatalf("running line %q; the screen at the end:\n%s", running, done)
	}
}
