package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/receiver/tally"
	sendtally "github.com/cloudprofiler-go/cp/sender/tally"
	"github.com/cloudprofiler-go/cp/sweep"
)

// Binaries builds dgsend, dgrecv, cpsweep and cpjob once into dir.
func Binaries(dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	// --version names the commit (a test checks it), stamped as make
	// build stamps it: the go command leaves a worktree's build unstamped.
	commit := ""
	rev := exec.Command("git", "rev-parse", "HEAD")
	rev.Dir = root
	if out, err := rev.Output(); err == nil {
		commit = strings.TrimSpace(string(out))
		status := exec.Command("git", "status", "--porcelain")
		status.Dir = root
		if out, err := status.Output(); err == nil && len(out) > 0 {
			commit += "+modified"
		}
	}
	cmd := exec.Command("go", "build", "-ldflags", "-X github.com/cloudprofiler-go/cp/cmd/internal/cli.commit="+commit,
		"-o", dir+"/", "./cmd/dgsend", "./cmd/dgrecv", "./cmd/cpsweep", "./cmd/cpjob")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build binaries: %v\n%s", err, out)
	}
	return dir, nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// FreePorts returns n consecutive free TCP ports on loopback.
func FreePorts(n int) (int, error) { return sweep.FreePorts(n) }

// Proc is a running binary whose stdout (JSON) and stderr are captured.
type Proc struct {
	Cmd            *exec.Cmd
	Stdout, Stderr Output
	done           chan struct{} // closed when the process has exited
	exitErr        error
}

// Output is a process's captured output: written by the exec goroutine,
// read by the test while the process runs.
type Output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// String is what was written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// Bytes is a copy of what was written so far.
func (o *Output) Bytes() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return bytes.Clone(o.b.Bytes())
}

// hostTolerant turns cpsweep's host rules off: the tests run beside other
// test packages (go test runs packages in parallel), whose CPU would
// disturb every trial. A test of the rules sets its own, later on the
// command line, which wins.
var hostTolerant = []string{"--max-others", "0", "--max-steal", "0"}

// Start runs bin with args.
func Start(bin string, args ...string) (*Proc, error) { return StartEnv(nil, bin, args...) }

// StartEnv runs bin with args and env (NAME=VALUE) added to the test's.
func StartEnv(env []string, bin string, args ...string) (*Proc, error) {
	p := &Proc{Cmd: exec.Command(bin, args...), done: make(chan struct{})}
	if env != nil {
		p.Cmd.Env = append(os.Environ(), env...)
	}
	p.Cmd.Stdout, p.Cmd.Stderr = &p.Stdout, &p.Stderr
	if err := p.Cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.exitErr = p.Cmd.Wait(); close(p.done) }()
	return p, nil
}

// Wait waits up to timeout and kills the process after it. It may be
// called again (e.g. by a cleanup) and returns the same.
func (p *Proc) Wait(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.exitErr
	case <-time.After(timeout):
		_ = p.Cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not exit within %v; stderr:\n%s", filepath.Base(p.Cmd.Path), timeout, p.Stderr.String())
	}
}

// Signal sends sig to the process.
func (p *Proc) Signal(sig syscall.Signal) error { return p.Cmd.Process.Signal(sig) }

// WaitForLine waits until stderr contains s.
func (p *Proc) WaitForLine(s string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if strings.Contains(p.Stderr.String(), s) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

var metricsAddrRe = regexp.MustCompile(`metrics on http://([^/\s]+)/metrics`)

// MetricsAddr waits for the process to log its /metrics address.
func (p *Proc) MetricsAddr(timeout time.Duration) (string, error) {
	if !p.WaitForLine("metrics on", timeout) {
		return "", fmt.Errorf("%s did not report a metrics address:\n%s", filepath.Base(p.Cmd.Path), p.Stderr.String())
	}
	m := metricsAddrRe.FindStringSubmatch(p.Stderr.String())
	if m == nil {
		return "", fmt.Errorf("no metrics address in %q", p.Stderr.String())
	}
	return m[1], nil
}

// ExitCode returns the exit status of a finished process (-1 if unknown).
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// Pair runs dgrecv then dgsend with the given extra flags (each gets --json
// and its endpoints) and returns both results.
type Pair struct {
	Bin                string
	Lanes              int
	RecvArgs, SendArgs []string
	Timeout            time.Duration
	Recv               tally.Result
	Send               sendtally.Result
	RecvExit, SendExit int
	RecvProc, SendProc *Proc
}

// Run starts both and waits for both.
func (pr *Pair) Run(t testing.TB) {
	t.Helper()
	if pr.Lanes == 0 {
		pr.Lanes = 1
	}
	if pr.Timeout == 0 {
		pr.Timeout = 60 * time.Second
	}
	base, err := FreePorts(pr.Lanes)
	if err != nil {
		t.Fatal(err)
	}
	rargs := append([]string{"--bind", fmt.Sprintf("tcp://127.0.0.1:%d", base), "--lanes", fmt.Sprint(pr.Lanes),
		"--json", "--metrics-addr", "", "--calibrate", "30ms"}, pr.RecvArgs...)
	rp, err := Start(filepath.Join(pr.Bin, "dgrecv"), rargs...)
	if err != nil {
		t.Fatal(err)
	}
	pr.RecvProc = rp
	if !rp.WaitForLine("listening on", 5*time.Second) {
		_ = rp.Cmd.Process.Kill()
		t.Fatalf("dgrecv did not start: %s", rp.Stderr.String())
	}
	sargs := []string{"--json", "--metrics-addr", "", "--calibrate", "30ms"}
	for i := 0; i < pr.Lanes; i++ {
		sargs = append(sargs, "--connect", fmt.Sprintf("tcp://127.0.0.1:%d", base+i))
	}
	sp, err := Start(filepath.Join(pr.Bin, "dgsend"), append(sargs, pr.SendArgs...)...)
	if err != nil {
		t.Fatal(err)
	}
	pr.SendProc = sp
	serr := sp.Wait(pr.Timeout)
	rerr := rp.Wait(pr.Timeout)
	pr.SendExit, pr.RecvExit = ExitCode(serr), ExitCode(rerr)
	if err := json.Unmarshal(sp.Stdout.Bytes(), &pr.Send); err != nil {
		t.Fatalf("dgsend output is not JSON (%v, exit %d):\n%s\nstderr:\n%s", err, pr.SendExit, sp.Stdout.String(), sp.Stderr.String())
	}
	if err := json.Unmarshal(rp.Stdout.Bytes(), &pr.Recv); err != nil {
		t.Fatalf("dgrecv output is not JSON (%v, exit %d):\n%s\nstderr:\n%s", err, pr.RecvExit, rp.Stdout.String(), rp.Stderr.String())
	}
}
