package deploy

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

var update = flag.Bool("update", false, "rewrite the golden manifests")

// TestWalkthroughGolden: the manifests of docs/walkthrough.md's topology
// (one sender with two threads, one receiver with two lanes, the default
// handlers) are exactly the reviewed ones. go test ./deploy -update
// rewrites them after a deliberate change.
func TestWalkthroughGolden(t *testing.T) {
	handlers, err := os.ReadFile(filepath.Join("..", "profiles", "default.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := Render(topologies()["walkthrough"], testToken, handlers)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "#### %s (mode %04o)\n%s", f.Name, f.Mode, f.Data)
	}
	golden := filepath.Join("testdata", "walkthrough.golden.yaml")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./deploy -update writes it)", err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("the walkthrough's manifests changed; review the difference and run go test ./deploy -update:\n%s", firstDifference(string(want), got))
	}
}

func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d: want %q, got %q", i+1, wl, gl)
		}
	}
	return "(same lines)"
}

// checkAgentArgs: the ports the agents are told to use are the ports the
// pods and Services declare.
func checkAgentArgs(t *testing.T, name string, ctr corev1.Container) {
	args := strings.Join(ctr.Args, " ")
	for _, p := range ctr.Ports {
		var want string
		switch p.Name {
		case "control", "tsc-probe":
			want = fmt.Sprintf("--metrics-addr :%d", p.ContainerPort)
		case "data":
			want = fmt.Sprintf("--bind tcp://*:%d", p.ContainerPort)
		}
		if !strings.Contains(args, want) {
			t.Errorf("%s: container %s declares %s port %d but runs with %q", name, ctr.Name, p.Name, p.ContainerPort, args)
		}
	}
}

func TestValidateRefusesBadTopologies(t *testing.T) {
	for _, tc := range []struct {
		change func(*Topology)
		want   string
	}{
		{func(t *Topology) { t.Name = "CP" }, "name"},
		{func(t *Topology) { t.Name = strings.Repeat("a", 31) }, "at most 30"},
		{func(t *Topology) { t.Namespace = "a_b" }, "namespace"},
		{func(t *Topology) { t.Image = "" }, "image"},
		{func(t *Topology) { t.PullPolicy = "Sometimes" }, "pull policy"},
		{func(t *Topology) { t.ClusterDomain = "cluster..local" }, "cluster domain"},
		{func(t *Topology) { t.Senders.Count = 0 }, "senders: count 0"},
		{func(t *Topology) { t.Receivers.CPUs = 0 }, "whole number of CPUs"},
		{func(t *Topology) { t.Senders.Memory = "1.5Gi" }, "memory"},
		{func(t *Topology) { t.Sweep.Count = 2 }, "sweep: count 2"},
		{func(t *Topology) { t.Senders.NodeSelector = Labels{"bad key!": "x"} }, "not a label key"},
		{func(t *Topology) { t.SUTSelector = Labels{"app": "a b"} }, "not a label value"},
		{func(t *Topology) { t.Lanes = 0 }, "lanes"},
		{func(t *Topology) { t.AntiAffinity = "sometimes" }, "anti-affinity"},
		{func(t *Topology) { t.RunsSize = "lots" }, "runs size"},
		{func(t *Topology) { t.Hold = -time.Second }, "hold"},
		{func(t *Topology) { t.JobInput = "kafka://k:9092/ads?group=ysb" }, "needs both its input"},
		{func(t *Topology) { t.JobInput, t.JobOutput = "kafka://k:9092/ads", "kafka://k:9092/out" }, "name the job's consumer group"},
		{func(t *Topology) { t.JobInput, t.JobOutput = "kafka://k:9092/ads?group=ysb", "tcp://k:9092" }, "job output"},
		{func(t *Topology) {
			t.JobInput, t.JobOutput, t.Receivers.Count = "kafka://k:9092/ads?group=ysb", "kafka://k:9092/out", 2
		}, "one receiver with one lane"},
	} {
		topo := Default()
		tc.change(&topo)
		_, err := Render(topo, testToken, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error with %q, got %v", tc.want, err)
		}
	}
	if _, err := Render(Default(), "short", nil); err == nil {
		t.Error("a short token was accepted")
	}
	topo := Default()
	topo.SweepArgs = []string{"--name", "x" + testToken}
	if _, err := Render(topo, testToken, nil); err == nil || !strings.Contains(err.Error(), "holds the token") {
		t.Errorf("a sweep argument with the token: %v", err)
	}
}

func TestParseTopology(t *testing.T) {
	topo, err := ParseTopology([]byte("name: bench\nsenders: {count: 3, cpus: 4, memory: 2Gi, node_selector: {pool: load}}\nhold: 10m\nsweep_args: [--duration, 5s]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if topo.Name != "bench" || topo.Senders.Count != 3 || topo.Senders.NodeSelector["pool"] != "load" || topo.Hold != 10*time.Minute ||
		topo.Receivers.CPUs != Default().Receivers.CPUs || len(topo.SweepArgs) != 2 {
		t.Errorf("parsed %+v", topo)
	}
	for _, bad := range []string{"sender: {count: 3}\n", "senders: {count: three}\n", "hold: forever\n", "senders: [1]\n"} {
		if _, err := ParseTopology([]byte(bad)); err == nil {
			t.Errorf("topology %q was accepted", bad)
		}
	}
}

// TestWriteKeepsAnEarlierDeploy: files already there are not replaced
// (the token would change under running agents) unless forced; the
// Secret's file is readable by its owner only.
func TestWriteKeepsAnEarlierDeploy(t *testing.T) {
	dir := t.TempDir()
	files, err := Render(Default(), testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, files, false); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "01-token-secret.yaml"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("Secret file: %v %v", st.Mode(), err)
	}
	err = Write(dir, files, false)
	if err == nil || !strings.Contains(err.Error(), "01-token-secret.yaml") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("a second deploy into the same folder: %v", err)
	}
	if err := Write(dir, files, true); err != nil {
		t.Fatalf("forced: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".cp-deploy-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestNewTokenIsAcceptedByTheAgents(t *testing.T) {
	a, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewToken()
	if a == b {
		t.Error("two tokens are equal")
	}
	if _, err := Render(Default(), a, nil); err != nil {
		t.Errorf("a new token is refused: %v", err)
	}
}

func TestSizeWarnings(t *testing.T) {
	topo := Default() // 2 CPUs per agent pod, 1 lane
	if w := SizeWarnings(topo, 1); len(w) != 0 {
		t.Errorf("1 thread, 1 lane on 2 CPUs: %v", w)
	}
	topo.Lanes = 2
	w := SizeWarnings(topo, 2)
	if len(w) != 2 || !strings.Contains(w[0], "--sender-cpus 3") || !strings.Contains(w[1], "--receiver-cpus 3") {
		t.Errorf("2 threads, 2 lanes on 2 CPUs: %v", w)
	}
}
