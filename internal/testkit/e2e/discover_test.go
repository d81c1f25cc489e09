package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/internal/testkit/dnszone"
	"github.com/cloudprofiler-go/cp/sweep"
)

// discoveredAgents starts two sender agents and one receiver agent on
// their own loopback addresses (127.0.0.2-4) with one port per role, as
// the pods of a StatefulSet share theirs, and a DNS zone that lists them
// as a headless Service would.
func discoveredAgents(t *testing.T) (z *dnszone.Zone, sendPort, recvPort int) {
	t.Helper()
	ports, err := FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	sendPort, recvPort = ports, ports+1
	data := ports + 2
	start := func(bin string, args ...string) {
		p, err := Start(filepath.Join(binDir, bin), args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Cmd.Process.Kill(); _ = p.Wait(5 * time.Second) })
		agentAddr(t, p)
	}
	start("dgrecv", "--agent", "--metrics-addr", fmt.Sprintf("127.0.0.4:%d", recvPort), "--bind", fmt.Sprintf("tcp://127.0.0.4:%d", data))
	start("dgsend", "--agent", "--metrics-addr", fmt.Sprintf("127.0.0.2:%d", sendPort))
	start("dgsend", "--agent", "--metrics-addr", fmt.Sprintf("127.0.0.3:%d", sendPort))
	if z, err = dnszone.Serve(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { z.Close() })
	z.Set("cp-sender.cp.svc.cluster.local", "127.0.0.2", "127.0.0.3")
	z.Set("cp-receiver.cp.svc.cluster.local", "127.0.0.4")
	return z, sendPort, recvPort
}

// TestSweepDiscoversItsAgentsByDNS: a sweep given the Services' names and
// counts, not addresses, finds both senders and the receiver and runs
// with both senders sharing the rate.
func TestSweepDiscoversItsAgentsByDNS(t *testing.T) {
	z, sp, rp := discoveredAgents(t)
	rep, p := runSweep(t, 2*time.Minute, "--dns-server", z.Addr(),
		"--senders-from", fmt.Sprintf("dns:cp-sender.cp.svc.cluster.local:%d", sp), "--sender-count", "2",
		"--receivers-from", fmt.Sprintf("dns:cp-receiver.cp.svc.cluster.local:%d", rp),
		"--search", "linear", "--from", "20k", "--to", "20k", "--step", "10k", "--duration", "1s", "--warmup", "200ms", "--lateness-floor", "100ms")
	if len(rep.Result.Trials) != 1 || !rep.Result.Trials[0].Verdict.Pass {
		t.Fatalf("discovered sweep: %+v\n%s", rep.Result, p.Stderr.String())
	}
	errOut := p.Stderr.String()
	for _, want := range []string{fmt.Sprintf("127.0.0.2:%d", sp), fmt.Sprintf("127.0.0.3:%d", sp), fmt.Sprintf("127.0.0.4:%d", rp)} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the sweep does not name agent %s it should have found:\n%s", want, errOut)
		}
	}
	dir := rep.Dir
	cfg, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil || !strings.Contains(string(cfg), "127.0.0.3") {
		t.Errorf("config.json does not record the second discovered sender:\n%s", cfg)
	}
}

// TestSweepRefusesFewerAgentsThanAskedFor: three senders asked for, two
// answer; after the bounded wait the sweep refuses (exit 5) and says how
// many answered; nothing ran.
func TestSweepRefusesFewerAgentsThanAskedFor(t *testing.T) {
	z, sp, rp := discoveredAgents(t)
	results := t.TempDir()
	sw, err := Start(filepath.Join(binDir, "cpsweep"), "--results", results, "--dns-server", z.Addr(), "--discover-timeout", "2s",
		"--senders-from", fmt.Sprintf("dns:cp-sender.cp.svc.cluster.local:%d", sp), "--sender-count", "3",
		"--receivers-from", fmt.Sprintf("dns:cp-receiver.cp.svc.cluster.local:%d", rp))
	if err != nil {
		t.Fatal(err)
	}
	err = sw.Wait(time.Minute)
	if code := ExitCode(err); code != sweep.ExitAgentFailure {
		t.Fatalf("cpsweep exited %d (%v), want %d:\n%s", code, err, sweep.ExitAgentFailure, sw.Stderr.String())
	}
	if out := sw.Stderr.String(); !strings.Contains(out, "2 agents answer, 3 asked for") {
		t.Errorf("the error does not give the counts:\n%s", out)
	}
	if runs, _ := filepath.Glob(filepath.Join(results, "*")); len(runs) != 0 {
		t.Errorf("a refused sweep left run directories: %v", runs)
	}
}
