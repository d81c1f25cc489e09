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
)

// podman runs a podman command and returns its combined output.
func podman(args ...string) (string, error) {
	out, err := exec.Command("podman", args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// podmanLimits are the resource limits a container gets: podman's
// defaults are above this sandbox's hard limits, and runc may not raise
// them ("error setting rlimit ... operation not permitted").
func podmanLimits() []string {
	var nofile syscall.Rlimit
	n := uint64(4096)
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile) == nil {
		n = min(nofile.Max, 20000)
	}
	return []string{"--ulimit", fmt.Sprintf("nofile=%d:%d", n, n), "--ulimit", "nproc=4096:4096"}
}

// TestContainersSweptWithDiscovery builds the image from this checkout's
// binaries (scripts/image-from-host.sh: no base image can be pulled
// here), runs two sender agents and a receiver agent as containers on a
// private network, each role behind one DNS name as a headless Service
// puts it, and runs cpsweep in a fourth container that finds them by DNS.
// The token is a mounted file, as the Secret is.
func TestContainersSweptWithDiscovery(t *testing.T) {
	if _, err := exec.LookPath("podman"); err != nil {
		skipOrFail(t, "podman is not installed (apt-get install podman): the container test needs it")
	}
	if out, err := podman("info", "--format", "{{.Host.OCIRuntime.Name}}"); err != nil {
		skipOrFail(t, fmt.Sprintf("podman cannot run here: %v %s", err, out))
	}
	id := fmt.Sprintf("cp-e2e-%d", os.Getpid())
	image := "localhost/" + id + ":test"
	build := exec.Command(filepath.Join(moduleDir(t), "scripts", "image-from-host.sh"), image)
	build.Env = append(os.Environ(), "BIN="+binDir)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the image: %v\n%s", err, out)
	}
	t.Cleanup(func() { podman("rmi", "-f", image) })
	if out, err := podman("network", "create", id); err != nil {
		t.Fatalf("podman network create: %v %s", err, out)
	}
	t.Cleanup(func() { podman("network", "rm", "-f", id) })

	dir := t.TempDir()
	token, runs := filepath.Join(dir, "token"), filepath.Join(dir, "runs")
	if err := os.WriteFile(token, []byte("e2e-container-token-0123456789abcdef\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(runs, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(runs, 0o777) // the containers run as 65532
	common := append([]string{"--network", id, "-v", token + ":/etc/cp/token/token:ro"}, podmanLimits()...)
	agent := func(name, alias string, cmd ...string) {
		args := append(append([]string{"run", "-d", "--name", name, "--network-alias", alias}, common...), image)
		if out, err := podman(append(args, cmd...)...); err != nil {
			t.Fatalf("start %s: %v %s", name, err, out)
		}
		t.Cleanup(func() {
			if t.Failed() {
				logs, _ := podman("logs", name)
				t.Logf("%s:\n%s", name, logs)
			}
			podman("rm", "-f", "-t", "1", name)
		})
	}
	agent(id+"-sender-0", "cp-sender", "dgsend", "--agent", "--metrics-addr", ":9101", "--token-file", "/etc/cp/token/token")
	agent(id+"-sender-1", "cp-sender", "dgsend", "--agent", "--metrics-addr", ":9101", "--token-file", "/etc/cp/token/token")
	agent(id+"-receiver-0", "cp-receiver", "dgrecv", "--agent", "--bind", "tcp://*:5555", "--metrics-addr", ":9102", "--token-file", "/etc/cp/token/token")

	args := append(append([]string{"run", "--rm", "--name", id + "-sweep", "-v", runs + ":/runs"}, common...), image,
		"cpsweep", "--json", "--senders-from", "dns:cp-sender", "--sender-count", "2", "--receivers-from", "dns:cp-receiver", "--discover-timeout", "30s",
		"--token-file", "/etc/cp/token/token", "--results", "/runs", "--search", "linear", "--from", "20k", "--to", "40k", "--step", "20k",
		"--duration", "1s", "--warmup", "200ms", "--lateness-floor", "100ms")
	cmd := exec.Command("podman", append(args, hostTolerant...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	go func() { done <- cmd.Run() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the sweep in a container: %v\n%s", err, stderr.String())
		}
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the sweep in a container did not finish:\n%s", stderr.String())
	}
	var rep struct {
		sweepReport
		Agents []struct {
			Role, Host, Machine string
		} `json:"agents"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil {
		t.Fatalf("summary: %v\n%s", err, stdout.String())
	}
	if len(rep.Result.Trials) != 2 || !rep.Result.Trials[0].Verdict.Pass || !rep.Result.Trials[1].Verdict.Pass {
		t.Fatalf("trials %+v\n%s", rep.Result.Trials, stderr.String())
	}
	if len(rep.Agents) != 3 {
		t.Fatalf("agents %+v, want 2 senders and a receiver", rep.Agents)
	}
	for _, a := range rep.Agents {
		if a.Machine == "" || a.Machine != rep.Agents[0].Machine {
			t.Errorf("agents %+v: containers on one machine should report one boot id", rep.Agents)
			break
		}
	}
	if kept, _ := filepath.Glob(filepath.Join(runs, "*", "summary.json")); len(kept) != 1 {
		t.Errorf("the run directory is not on the mounted volume: %v", kept)
	}
}
