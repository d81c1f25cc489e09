package e2e

import (
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/analysis"
	"github.com/cloudprofiler-go/cp/rundir"
)

// TestYSBAcrossThreeHosts is the paper's Fig. 17 on three network
// namespaces: YSB in two processes with the broker between them, as
// Storm's actors were spread over workers. Host "src" runs dgsend and the
// job's filter part, "mid" the broker (nats-server with JetStream),
// Redis and the count part (the join and the window), "dst" dgrecv. One
// profiled sweep from the root namespace, with the TSC relation; then the
// analysis joins every tuple from the senders through both jobs' operators
// (chained by the topic between them) to the receivers: operator to
// operator, local (one process) and remote (through the broker, another
// namespace), each with its bound. The namespaces read one TSC, so a
// second analysis bounds them through the relation as if they were three
// machines (--relate-same-machine): each tuple's one-clock latency must
// lie within its bound.
func TestYSBAcrossThreeHosts(t *testing.T) {
	for _, bin := range []string{"nats-server", "redis-server"} {
		if _, err := exec.LookPath(bin); err != nil {
			skipOrFail(t, fmt.Sprintf("%s is not installed (make test installs it): three-host YSB skipped", bin))
		}
	}
	n := newTestNet(t, "src", "mid", "dst")
	src, mid, dst := n.hosts["src"], n.hosts["mid"], n.hosts["dst"]
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("three-host-ysb-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var procs []*Proc
	t.Cleanup(func() {
		for _, p := range procs {
			_ = p.Cmd.Process.Kill()
			_ = p.Wait(5 * time.Second)
		}
	})
	start := func(host, ready string, bin string, args ...string) *Proc {
		t.Helper()
		path := bin
		if !strings.Contains(bin, "-server") {
			path = filepath.Join(binDir, bin)
		}
		p, err := Start("ip", append([]string{"netns", "exec", n.prefix + host, path}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
		if ready != "" && !p.WaitForLine(ready, 30*time.Second) {
			t.Fatalf("%s on %s did not start:\n%s%s", bin, host, p.Stdout.String(), p.Stderr.String())
		}
		return p
	}
	start("mid", "", "nats-server", "-a", mid, "-p", "4222", "-js", "-sd", filepath.Join(dir, "js"))
	start("mid", "", "redis-server", "--port", "6379", "--bind", mid, "--save", "", "--appendonly", "no", "--dir", dir, "--protected-mode", "no")
	for _, addr := range []string{mid + ":4222", mid + ":6379"} {
		waitListening(t, addr)
	}
	broker := "jetstream://" + mid + ":4222/"
	in, views, out := broker+"ysb.in", broker+"ysb.views", broker+"ysb.out"
	jobArgs := []string{"--window", "1s", "--lateness", "500ms", "--token-file", token}
	start("src", "cpjob: agent ready", "cpjob", append([]string{"ysb", "--part", "filter", "--input", in + "?group=ysb", "--output", views,
		"--agent-addr", src + ":9103"}, jobArgs...)...)
	start("mid", "cpjob: agent ready", "cpjob", append([]string{"ysb", "--part", "count", "--input", views + "?group=ysb-count", "--output", out,
		"--redis", mid + ":6379", "--agent-addr", mid + ":9103"}, jobArgs...)...)
	agent := []string{"--agent", "--token-file", token, "--calibrate", "30ms"}
	start("src", "agent ready", "dgsend", append(agent, "--metrics-addr", src+":9101")...)
	start("dst", "agent ready", "dgrecv", append(agent, "--metrics-addr", dst+":9102", "--connect", out+"?group=cp", "--job-input", in+"?group=ysb")...)
	handlers := filepath.Join(moduleDir(t), "profiles", "default.yaml")
	rep, sp := runSweep(t, 4*time.Minute, jobSweepArgs(in, out,
		"--sender", src+":9101", "--receiver", dst+":9102", "--job-agent", src+":9103", "--job-agent", mid+":9103", "--token-file", token,
		"--search", "linear", "--from", "5k", "--to", "5k", "--step", "5k", "--duration", "3s", "--stage-period", "100ms",
		"--clock", "--profile", handlers, "--profile-rate", "5k")...)
	t.Log(sp.Stderr.String())
	for _, job := range []string{"job0", "job1"} {
		files, _ := filepath.Glob(filepath.Join(rep.Dir, "profiles", job, "*"))
		for i := range files {
			files[i] = filepath.Base(files[i])
		}
		t.Logf("profiles/%s: %v", job, files)
	}
	d, err := rundir.Open(rep.Dir)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		pair string
		id   uint64
	}
	truth := map[key]float64{}
	one, err := analysis.Analyze(d, analysis.Options{Lag: analysis.LagFor(d), Visit: func(m analysis.Match) {
		truth[key{m.From + " -> " + m.To, m.ID}] = m.LatencyNs
	}})
	if err != nil {
		t.Fatal(err)
	}
	var checked, outside int
	var worst float64
	related, err := analysis.Analyze(d, analysis.Options{Lag: analysis.LagFor(d), RelateSameMachine: true, Visit: func(m analysis.Match) {
		want, ok := truth[key{m.From + " -> " + m.To, m.ID}]
		if !ok || m.FromNode == m.ToNode {
			return
		}
		checked++
		if off := math.Abs(m.LatencyNs - want); off > m.ErrorNs+1 {
			outside++
			worst = max(worst, off-m.ErrorNs)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	local, remote := []string{"job0/op.input -> job0/op.filter", "job1/op.input -> job1/op.join", "job1/op.join -> job1/op.window"},
		[]string{"emit -> job0/op.input", "job0/op.filter -> job1/op.input", "job1/op.window -> receive"}
	groups := func(r *analysis.Report) map[string]map[string]analysis.Group {
		out := map[string]map[string]analysis.Group{}
		for _, p := range r.Pairs {
			out[p.From+" -> "+p.To] = map[string]analysis.Group{}
			for _, g := range p.Groups {
				out[p.From+" -> "+p.To][g.Name] = g
			}
		}
		return out
	}
	g1, g2 := groups(one), groups(related)
	for _, pr := range local {
		if g := g1[pr]["same node"]; g.Latency.Count == 0 || g.Error.Max != 0 {
			t.Errorf("%s: %+v, want tuples on one node, exact (%v)", pr, g1[pr], one.Problems)
		}
	}
	for _, pr := range remote {
		if g := g1[pr]["same machine"]; g.Latency.Count == 0 {
			t.Errorf("%s: %+v, want tuples across namespaces of one machine (%v)", pr, g1[pr], one.Problems)
		}
		if g := g2[pr]["cross node"]; g.Latency.Count == 0 || g.Error.Max <= 0 {
			t.Errorf("%s related: %+v, want tuples across nodes with a bound above 0 (%v)", pr, g2[pr], related.Problems)
		}
	}
	if checked == 0 || outside > 0 {
		t.Errorf("of %d tuples between nodes, %d had their one-clock latency outside the relation's bound (by up to %.0f ns)", checked, outside, worst)
	}
	text, err := exec.Command(filepath.Join(binDir, "cpsweep"), "analyze", "--relate-same-machine", rep.Dir).Output()
	if err != nil && ExitCode(err) != 2 {
		t.Fatalf("analyze: %v", err)
	}
	if !strings.Contains(string(text), "job0/op.filter -> job1/op.input") {
		t.Errorf("the table has no pair from one job to the next:\n%s", text)
	}
	t.Logf("%d tuples between nodes, each within its bound; cpsweep analyze --relate-same-machine:\n%s", checked, text)
	if text, err = exec.Command(filepath.Join(binDir, "cpsweep"), "analyze", rep.Dir).Output(); err == nil || ExitCode(err) == 2 {
		t.Logf("cpsweep analyze (one clock):\n%s", text)
	}
	// The activity graph has both jobs' operators as workers, each its
	// node's, with messages along the chain.
	kinds := analyzeWithPAG(t, rep.Dir).kinds()
	for _, k := range []string{"job0/op.filter busy", "job1/op.input message", "job1/op.join busy", "job1/op.window busy", "receiver0/lane0 message"} {
		if kinds[k] == 0 {
			t.Errorf("no %s activity in the graph: %v", k, kinds)
		}
	}
}

// waitListening waits until addr takes a TCP connection.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s", addr)
		}
	}
}
