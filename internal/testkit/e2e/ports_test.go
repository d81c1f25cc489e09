package e2e

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/sweep"
)

// TestAgentPortsAndTheirErrors: an agent answers TSC probes on UDP at its
// control port number (one number to open in a firewall), or where
// --probe-addr says; a port already taken is an error naming the flag
// that moves it; and a controller without the agents' token is told to
// pass --token-file.
func TestAgentPortsAndTheirErrors(t *testing.T) {
	p, err := Start(filepath.Join(binDir, "dgsend"), "--agent", "--metrics-addr", "127.0.0.1:0", "--calibrate", "20ms")
	if err != nil {
		t.Fatal(err)
	}
	addr := agentAddr(t, p)
	_, port, _ := net.SplitHostPort(addr)
	if want := "TSC probes on udp 127.0.0.1:" + port; !strings.Contains(p.Stderr.String(), want) {
		t.Errorf("ready line lacks %q:\n%s", want, p.Stderr.String())
	}

	// The control port taken (by the agent above), then the probe port.
	taken, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		name string
		args []string
		says string
	}{
		{"control port in use", []string{"--metrics-addr", addr}, "pick another with --metrics-addr"},
		{"probe port in use", []string{"--metrics-addr", "127.0.0.1:0", "--probe-addr", taken.LocalAddr().String()}, "pick another with --probe-addr"},
		{"no token off loopback", []string{"--metrics-addr", "0.0.0.0:0"}, "--token-file"},
	} {
		q, err := Start(filepath.Join(binDir, "dgsend"), append([]string{"--agent", "--calibrate", "20ms"}, tc.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		err = q.Wait(10 * time.Second)
		if ExitCode(err) != 1 || !strings.Contains(q.Stderr.String(), tc.says) {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant %q", tc.name, ExitCode(err), q.Stderr.String(), tc.says)
		}
	}
	_ = p.Signal(syscall.SIGTERM)
	_ = p.Wait(5 * time.Second)

	// A token-protected pair of agents and a controller without the token.
	const token = "ports-test-token-0123456789"
	recv, err := Start(filepath.Join(binDir, "dgrecv"), "--agent", "--bind", fmt.Sprintf("tcp://127.0.0.1:%d", mustPort(t)), "--metrics-addr", "127.0.0.1:0",
		"--token", token, "--calibrate", "20ms")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = recv.Signal(syscall.SIGTERM); _ = recv.Wait(5 * time.Second) }()
	snd, err := Start(filepath.Join(binDir, "dgsend"), "--agent", "--metrics-addr", "127.0.0.1:0", "--token", token, "--calibrate", "20ms")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = snd.Signal(syscall.SIGTERM); _ = snd.Wait(5 * time.Second) }()
	results := t.TempDir()
	sw, err := Start(filepath.Join(binDir, "cpsweep"), "--sender", agentAddr(t, snd), "--receiver", agentAddr(t, recv), "--results", results, hostTolerant[0], hostTolerant[1], hostTolerant[2], hostTolerant[3],
		"--token", "not-the-agents-token-000")
	if err != nil {
		t.Fatal(err)
	}
	err = sw.Wait(30 * time.Second)
	if ExitCode(err) != sweep.ExitAgentFailure || !strings.Contains(sw.Stderr.String(), "refused the token: pass --token-file with the token the agents were started with") {
		t.Fatalf("wrong token: exit %d:\n%s", ExitCode(err), sw.Stderr.String())
	}
	for _, line := range strings.Split(sw.Stderr.String(), "\n") {
		if strings.Contains(line, "refused the token") && strings.Count(line, ":") > 0 && strings.Count(line, "agent 127.0.0.1") != 1 {
			t.Errorf("the agent is named more than once: %q", line)
		}
	}
	if entries, _ := filepath.Glob(filepath.Join(results, "*")); len(entries) != 0 {
		t.Errorf("a failed pre-flight left %v behind", entries)
	}
}
