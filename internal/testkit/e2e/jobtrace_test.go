package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/analysis"
	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
)

// TestAProfiledSweepTracesTheJobsOperators: a sweep's profiled trial
// traces the job's operators too (cpjob --agent-addr; dataflow.Trace):
// their logs come back into profiles/job0/, and the analysis joins them
// along the job's edges, emit -> op.filter -> op.join -> op.window ->
// receive, each pair with its tuples and error bound across the nodes
// (Fig. 17 per operator), and puts the operators in the activity graph
// as workers with their own kinds and message edges.
func TestAProfiledSweepTracesTheJobsOperators(t *testing.T) {
	natsAddr, _ := realserver.NATS(t)
	redisAddr, _ := realserver.Redis(t)
	in, out := "jetstream://"+natsAddr+"/trace.in", "jetstream://"+natsAddr+"/trace.out"
	addr := startJobAgent(t, in, out, redisAddr)
	handlers := filepath.Join(moduleDir(t), "profiles", "default.yaml")
	rep, p := runSweep(t, 3*time.Minute, jobSweepArgs(in, out,
		"--search", "linear", "--from", "5k", "--to", "5k", "--step", "5k", "--duration", "3s", "--stage-period", "100ms",
		"--job-agent", addr, "--clock", "--profile", handlers, "--profile-rate", "5k")...)
	t.Log(p.Stderr.String())
	for _, f := range []string{"op.filter.log", "op.join.log", "op.window.log", "activity.op.join.log"} {
		if _, err := os.Stat(filepath.Join(rep.Dir, "profiles", "job0", f)); err != nil {
			t.Errorf("profiles/job0/%s: %v", f, err)
		}
	}
	both := analyzeWithPAG(t, rep.Dir)
	joined := map[string]uint64{}
	for _, pr := range both.Latency.Pairs {
		for _, g := range pr.Groups {
			joined[pr.From+" -> "+pr.To] += uint64(g.Latency.Count)
		}
	}
	for _, pr := range []string{"emit -> op.input", "op.input -> op.filter", "op.filter -> op.join", "op.join -> op.window", "op.window -> receive"} {
		if joined[pr] == 0 {
			t.Errorf("%s: no tuple joined (%v)", pr, joined)
		}
	}
	// At a sustainable rate the paths run along the senders' schedule
	// (the operators wait for their input): the operators are workers of
	// the graph with their own kinds (TestBenchOperatorLimits: on the
	// paths at the limit).
	kinds := both.kinds()
	for _, k := range []string{"job0/op.input busy", "job0/op.filter busy", "job0/op.join busy", "job0/op.window busy", "job0/op.join waiting", "job0/op.join message"} {
		if kinds[k] == 0 {
			t.Errorf("no %s activity in the graph: %v", k, kinds)
		}
	}
	t.Logf("joined %v; critical participation %+v", joined, both.PAG.CP)
	text, err := exec.Command(filepath.Join(binDir, "cpsweep"), "analyze", rep.Dir).Output()
	if err != nil && ExitCode(err) != 2 {
		t.Fatalf("analyze: %v", err)
	}
	if !strings.Contains(string(text), "op.filter -> op.join") {
		t.Errorf("the table has no operator pairs:\n%s", text)
	}
	t.Logf("cpsweep analyze:\n%s", text)
}

// pagAnalysis is cpsweep analyze --pag --json's output, as the tests read
// it: the latency pairs and the activity graph.
type pagAnalysis struct {
	Latency analysis.Report `json:"analysis"`
	PAG     struct {
		Workers []string `json:"workers"`
		CP      []struct {
			Worker string  `json:"worker"`
			Kind   string  `json:"kind"`
			Value  float64 `json:"value"`
		} `json:"critical_participation"`
		Windows []struct {
			Metrics []struct {
				Worker, Kind string
				Count        int
			} `json:"metrics"`
		} `json:"windows"`
	} `json:"pag"`
}

// analyzeWithPAG runs cpsweep analyze --pag --json on a run directory
// (exit 2, problems listed, is an answer too).
func analyzeWithPAG(t *testing.T, dir string) pagAnalysis {
	t.Helper()
	b, err := exec.Command(filepath.Join(binDir, "cpsweep"), "analyze", "--pag", "--json", dir).Output()
	if err != nil && ExitCode(err) != 2 {
		t.Fatalf("analyze --pag: %v\n%s", err, b)
	}
	var out pagAnalysis
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return out
}

// kinds sums the graph's windows' activities by "worker kind".
func (p pagAnalysis) kinds() map[string]int {
	out := map[string]int{}
	for _, w := range p.PAG.Windows {
		for _, m := range w.Metrics {
			out[m.Worker+" "+m.Kind] += m.Count
		}
	}
	return out
}
