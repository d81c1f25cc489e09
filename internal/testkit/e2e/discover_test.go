package e2e

import (
	"fmt"
	"net"
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

// TestDiscoveryOneWaitAndTheServerAsked: the senders appear 1.5 s into a
// 2 s --discover-timeout and the receivers never do: the receivers get
// what is left of the 2 s, not 2 s more. A --dns-server that never
// answers is the server the error names, not the system's resolver.
func TestDiscoveryOneWaitAndTheServerAsked(t *testing.T) {
	z, err := dnszone.Serve()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { z.Close() })
	time.AfterFunc(1500*time.Millisecond, func() { z.Set("cp-sender.cp.svc.cluster.local", "127.0.0.2") })
	start := time.Now()
	sw, err := Start(filepath.Join(binDir, "cpsweep"), "--results", t.TempDir(), "--dns-server", z.Addr(), "--discover-timeout", "2s",
		"--senders-from", "dns:cp-sender.cp.svc.cluster.local:9101", "--receivers-from", "dns:cp-receiver.cp.svc.cluster.local:9102")
	if err != nil {
		t.Fatal(err)
	}
	err = sw.Wait(time.Minute)
	if code := ExitCode(err); code != sweep.ExitAgentFailure || !strings.Contains(sw.Stderr.String(), "0 agents answer, 1 asked for") {
		t.Fatalf("exit %d, want %d with the receivers' count:\n%s", code, sweep.ExitAgentFailure, sw.Stderr.String())
	}
	if el := time.Since(start); el > 3500*time.Millisecond {
		t.Errorf("the two sources waited %v in all, want about the one 2 s --discover-timeout", el)
	}

	// a DNS server that reads every question and answers none
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		buf := make([]byte, 1500)
		for {
			if _, _, err := silent.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	sw, err = Start(filepath.Join(binDir, "cpsweep"), "--results", t.TempDir(), "--dns-server", silent.LocalAddr().String(), "--discover-timeout", "2s",
		"--senders-from", "dns:cp-sender.cp.svc.cluster.local:9101", "--receivers-from", "dns:cp-receiver.cp.svc.cluster.local:9102")
	if err != nil {
		t.Fatal(err)
	}
	err = sw.Wait(time.Minute)
	out := sw.Stderr.String()
	if code := ExitCode(err); code != sweep.ExitAgentFailure || !strings.Contains(out, "on "+silent.LocalAddr().String()) {
		t.Errorf("a silent --dns-server: exit %d; the error does not name it (%s):\n%s", code, silent.LocalAddr(), out)
	}
}
