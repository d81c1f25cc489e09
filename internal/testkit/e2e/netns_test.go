package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/analysis"
	"github.com/cloudprofiler-go/cp/analysis/activity"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/sweep"
)

// testNet is a bridge in the root namespace with one veth-connected network
// namespace per host: a small LAN of test hosts that exist only for the
// test (addresses 10.231.77.0/24, the bridge is .1).
// testNets counts the test nets made by this process (their prefixes).
var testNets atomic.Int32

type testNet struct {
	t      *testing.T
	prefix string
	hosts  map[string]string // namespace -> address
}

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// newTestNet creates the namespaces, or skips saying why it cannot.
func newTestNet(t *testing.T, names ...string) *testNet {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "network namespaces need root: multi-host test skipped")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		skipOrFail(t, "no ip command (apt-get install iproute2): multi-host test skipped")
	}
	// A prefix of its own: a namespace's devices go away after its
	// deletion returns, so the next test's net must not reuse their names
	// (CI, 2026-11-28: "RTNETLINK answers: File exists").
	n := &testNet{t: t, prefix: fmt.Sprintf("cpt%d%c", os.Getpid()%10000, 'a'+testNets.Add(1)%26), hosts: map[string]string{}}
	br := n.prefix + "br"
	if err := run("ip", "link", "add", br, "type", "bridge"); err != nil {
		skipOrFail(t, fmt.Sprintf("cannot create a bridge here (%v): multi-host test skipped", err))
	}
	t.Cleanup(n.destroy)
	must := func(args ...string) {
		if err := run(args...); err != nil {
			t.Fatal(err)
		}
	}
	must("ip", "addr", "add", "10.231.77.1/24", "dev", br)
	must("ip", "link", "set", br, "up")
	for i, name := range names {
		ns := n.prefix + name
		veth, peer := fmt.Sprintf("%sv%d", n.prefix, i), fmt.Sprintf("%sp%d", n.prefix, i)
		addr := fmt.Sprintf("10.231.77.%d", i+2)
		must("ip", "netns", "add", ns)
		must("ip", "link", "add", veth, "type", "veth", "peer", "name", peer)
		must("ip", "link", "set", veth, "netns", ns)
		must("ip", "link", "set", peer, "master", br, "up")
		must("ip", "-n", ns, "addr", "add", addr+"/24", "dev", veth)
		must("ip", "-n", ns, "link", "set", veth, "up")
		must("ip", "-n", ns, "link", "set", "lo", "up")
		n.hosts[name] = addr
	}
	return n
}

func (n *testNet) destroy() {
	for name := range n.hosts {
		_ = run("ip", "netns", "del", n.prefix+name)
	}
	_ = run("ip", "link", "del", n.prefix+"br")
}

// start runs bin inside the namespace of host.
func (n *testNet) start(host, bin string, args ...string) (*Proc, error) {
	return Start("ip", append([]string{"netns", "exec", n.prefix + host, filepath.Join(binDir, bin)}, args...)...)
}

// TestMultiHostSweep runs two sender hosts and one receiver host in network
// namespaces, with agents on non-loopback addresses (so a token is
// required), and sweeps across them from the root namespace.
func TestMultiHostSweep(t *testing.T) {
	n := newTestNet(t, "s1", "s2", "r1")
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("multi-host-test-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// An agent on a non-loopback address without a token refuses to start.
	p, err := n.start("r1", "dgrecv", "--agent", "--bind", "tcp://*:5555", "--metrics-addr", n.hosts["r1"]+":9102")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(10 * time.Second); err == nil || !strings.Contains(p.Stderr.String(), "give a shared --token") {
		t.Fatalf("tokenless agent on %s: %v\n%s", n.hosts["r1"], err, p.Stderr.String())
	}
	var agents []*Proc
	defer func() {
		for _, a := range agents {
			_ = a.Cmd.Process.Kill()
			_ = a.Wait(5 * time.Second)
		}
	}()
	for _, spec := range []struct{ host, bin, port string }{{"r1", "dgrecv", "9102"}, {"s1", "dgsend", "9101"}, {"s2", "dgsend", "9101"}} {
		args := []string{"--agent", "--metrics-addr", n.hosts[spec.host] + ":" + spec.port, "--token-file", token, "--calibrate", "30ms"}
		if spec.bin == "dgrecv" {
			args = append(args, "--bind", "tcp://*:5555", "--lanes", "2")
		}
		a, err := n.start(spec.host, spec.bin, args...)
		if err != nil {
			t.Fatal(err)
		}
		agents = append(agents, a)
		if !a.WaitForLine("agent ready", 10*time.Second) {
			t.Fatalf("%s on %s did not start:\n%s", spec.bin, spec.host, a.Stderr.String())
		}
	}
	// Without the token the controller is refused.
	bad, err := Start(filepath.Join(binDir, "cpsweep"), "--sender", n.hosts["s1"]+":9101", "--receiver", n.hosts["r1"]+":9102",
		"--token", "wrong-wrong-wrong-wrong", "--results", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Wait(30 * time.Second); ExitCode(err) != sweep.ExitAgentFailure || !strings.Contains(bad.Stderr.String(), "refused the token: pass --token-file") {
		t.Fatalf("wrong token: %v\n%s", err, bad.Stderr.String())
	}
	handlers := filepath.Join(t.TempDir(), "handlers.yaml")
	if err := os.WriteFile(handlers, []byte("default: {handler: buffered, path: \"{name}.log\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The two-host example plan (examples/plans/two-hosts.yaml: two
	// threads a sender, the clocks related, one trial profiled), with
	// this network's addresses, token and a short linear search beside it.
	args := []string{"--plan", filepath.Join(moduleDir(t), "examples", "plans", "two-hosts.yaml"),
		"--sender", n.hosts["s1"] + ":9101", "--sender", n.hosts["s2"] + ":9101",
		"--receiver", n.hosts["r1"] + ":9102", "--token-file", token, "--search", "linear", "--from", "20k", "--to", "40k", "--step", "20k",
		"--duration", "1s", "--warmup", "300ms", "--bucket", "10", "--profile", handlers, "--profile-at", "0.5",
		"--lateness-floor", "500ms"} // these low rates pass on any host; a busy one must not fail them on lateness
	rep, sp := runSweepAllowing(t, 3*time.Minute, []int{sweep.ExitNoRatePassed}, args...)
	if rep.Result.LastPass <= 0 {
		// A sender thread preempted at the trial's end ends it behind
		// schedule (CI, 2026-11-27: 100 tuples of 26,020, on a host busy
		// with the other packages' tests): once more, strictly.
		t.Logf("the first sweep passed no rate (a busy host?); once more:\n%s", sp.Stderr.String())
		rep, sp = runSweep(t, 3*time.Minute, args...)
	}
	// two search trials and the profiled one
	if len(rep.Result.Trials) != 3 || !rep.Result.Trials[0].Verdict.Pass || rep.Result.Trials[2].Purpose != "profile" {
		t.Fatalf("multi-host sweep: %+v\n%s", rep.Result, sp.Stderr.String())
	}
	// The run directory kept the plan as it ran: the plan's settings and
	// the flags' (which won), no token.
	plan, err := os.ReadFile(filepath.Join(rep.Dir, "plan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"threads: 2\n", "clock: true\n", "name: two-hosts\n", "  - " + n.hosts["s2"] + ":9101\n", "duration: 1s\n", "token-file: " + token} {
		if !strings.Contains(string(plan), want) {
			t.Errorf("plan.yaml lacks %q:\n%s", want, plan)
		}
	}
	if strings.Contains(string(plan), "multi-host-test-token") || strings.Contains(string(plan), "10.0.0.2") {
		t.Errorf("plan.yaml holds the token or the example's addresses:\n%s", plan)
	}
	// The receiver host saw four streams: two threads on each sender host
	// (the plan's threads), spread over its two lanes.
	data, err := os.ReadFile(filepath.Join(rep.Dir, "trials", "001.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Outcome struct {
			Receivers []struct {
				Complete bool `json:"complete"`
				Streams  []struct {
					Sender, Thread uint8
					Lane           int
				} `json:"streams"`
			} `json:"receivers"`
			Senders []struct {
				Emitted uint64 `json:"emitted_tuples"`
			} `json:"senders"`
		} `json:"outcome"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	o := rec.Outcome
	if len(o.Senders) != 2 || len(o.Receivers) != 1 || !o.Receivers[0].Complete || len(o.Receivers[0].Streams) != 4 {
		t.Fatalf("trial 1 outcome: %+v", o)
	}
	// --clock probed the three hosts' TSCs through the agents before and
	// after, across the bridge: both senders relate to the receiver host.
	var rel struct {
		Relations []struct {
			Node, Status string
		} `json:"relations"`
	}
	if b, err := os.ReadFile(filepath.Join(rep.Dir, "relation.json")); err != nil || json.Unmarshal(b, &rel) != nil || len(rel.Relations) != 2 {
		t.Fatalf("relation.json: %v %+v\n%s", err, rel, sp.Stderr.String())
	}
	for _, r := range rel.Relations {
		if r.Status != "ok" {
			t.Fatalf("TSC relation %s: %s", r.Node, r.Status)
		}
	}
	senders, lanes := map[uint8]bool{}, map[int]bool{}
	for _, s := range o.Receivers[0].Streams {
		senders[s.Sender], lanes[s.Lane] = true, true
	}
	if len(senders) != 2 || len(lanes) != 2 {
		t.Fatalf("streams came from senders %v over lanes %v", senders, lanes)
	}
	// The profiled trial's logs came back from all three hosts (the
	// controller's "/etc/" was dropped: agents write only to their own
	// directory), and the analysis joins them across hosts with bounds.
	for _, f := range []string{"receiver0/consumed.log", "receiver0/receive.0.log", "receiver0/receive.1.log", "sender0/emit.0.log", "sender1/emit.1.log"} {
		if _, err := os.Stat(filepath.Join(rep.Dir, "profiles", f)); err != nil {
			t.Fatalf("profile %s not collected: %v\n%s", f, err, sp.Stderr.String())
		}
	}
	out, err := exec.Command(filepath.Join(binDir, "cpsweep"), "analyze", "--json", rep.Dir).Output()
	if err != nil {
		t.Fatalf("analyze: %v", err)
	}
	var an analysis.Report
	if err := json.Unmarshal(out, &an); err != nil {
		t.Fatal(err)
	}
	for _, p := range an.Pairs {
		if p.From != "emit" {
			continue
		}
		// The namespaces share one kernel, so one boot id and one TSC: the
		// analysis reads one clock there and the durations are exact
		// (bounds across machines: package analysis's synthetic runs).
		if len(p.Groups) != 1 || p.Groups[0].Name != "same machine" || p.Groups[0].Latency.Count < 10_000 || p.Groups[0].Error.Max != 0 || p.OnlyFrom != 0 || p.OnlyTo != 0 {
			t.Fatalf("%s -> %s across hosts: %+v\nproblems: %v", p.From, p.To, p, an.Problems)
		}
		t.Logf("%s -> %s across namespaces: p50 %v ± %v", p.From, p.To, time.Duration(p.Groups[0].Latency.P50), time.Duration(p.Groups[0].Error.P50))
	}
	// The activity graph of the three hosts, streamed: every stage of
	// every host is a worker, buckets cross hosts as message edges with
	// the clock relation's bounds, and none came after its window.
	checkPAGAcrossHosts(t, rep.Dir)
	// The report of the two-host run passes the page's own check in a
	// browser: every figure drawn, every point inside its axes, the answer
	// visible, no label off the canvas, no legend over a plot.
	if out, err := exec.Command(filepath.Join(binDir, "cpsweep"), "report", rep.Dir).CombinedOutput(); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	t.Run("report in chromium", func(t *testing.T) { checkInChromium(t, filepath.Join(rep.Dir, "report.html"), 6) })
}

func checkPAGAcrossHosts(t *testing.T, dir string) {
	t.Helper()
	if out, err := exec.Command(filepath.Join(binDir, "cpsweep"), "analyze", "--pag", "--window", "50ms", dir).CombinedOutput(); err != nil {
		t.Fatalf("analyze --pag: %v\n%s", err, out)
	}
	pag := activity.File{Report: &activity.Report{}}
	if b, err := os.ReadFile(filepath.Join(dir, rundir.PAGFile)); err != nil || json.Unmarshal(b, &pag) != nil {
		t.Fatalf("%s: %v", rundir.PAGFile, err)
	}
	want := []string{"receiver0/consumer", "receiver0/lane0", "receiver0/lane1", "sender0/thread0", "sender0/thread1", "sender1/thread0", "sender1/thread1"}
	if strings.Join(pag.Workers, " ") != strings.Join(want, " ") {
		t.Fatalf("workers %v, want %v\nproblems: %v", pag.Workers, want, pag.Problems)
	}
	if pag.Late != 0 || len(pag.Windows) < 10 {
		t.Fatalf("%d buckets late, %d windows\nproblems: %v", pag.Late, len(pag.Windows), pag.Problems)
	}
	for _, p := range pag.Problems {
		if strings.Contains(p, "relation") || strings.Contains(p, "late") || strings.Contains(p, "no message edges") || strings.Contains(p, "cannot be placed") {
			t.Fatalf("problem: %s", p)
		}
	}
	// Every host's threads' wait for a CPU lands on the graph's time,
	// through each host's own clock pairs.
	if c := pag.CPUWait; c == nil || strings.Join(c.Threads, " ") != strings.Join(want, " ") || c.PathWindows == 0 {
		t.Fatalf("cpu-wait placed for %+v, want every worker %v", c, want)
	}
	// Each sender host's buckets reached a lane on the receiver host.
	sent := map[string]uint64{}
	for _, w := range pag.Windows {
		for _, m := range w.Metrics {
			if m.Kind == "message" {
				sent[strings.SplitN(m.Worker, "/", 2)[0]] += m.Items
			}
		}
	}
	if sent["sender0"] == 0 || sent["sender1"] == 0 || sent["receiver0"] == 0 {
		t.Fatalf("tuples in message edges per host: %v", sent)
	}
	t.Logf("activity graph across hosts: %d events in %d windows, tuples in messages %v, %d ambiguous", pag.Events, len(pag.Windows), sent, pag.Ambiguous)
}
