package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/tsc/probing"
)

var clockReady = regexp.MustCompile(`control http://([^/\s]+)/v1/clock`)

// TestClockRelationAcrossProcesses runs three TSC clients as separate
// processes, two of them simulated nodes whose clock is SCALE·TSC+OFFSET
// (known to the test), probes before and after, relates, and checks that
// the truth lies inside both methods' bounds for every one of 2,000
// values per node, and that the tighter bound is never wider.
func TestClockRelationAcrossProcesses(t *testing.T) {
	sims := map[string][2]float64{"a": {1, 0}, "b": {0.75 * (1 + 40e-6), 1e12}, "c": {1.2, 5e11}}
	var nodeArgs []string
	for _, name := range []string{"a", "b", "c"} {
		args := []string{"clock", "client", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0", "--calibrate", "30ms"}
		if s := sims[name]; s != [2]float64{1, 0} {
			args = append(args, "--simulate", fmt.Sprintf("%v,%v", s[0], s[1]))
		}
		p, err := Start(filepath.Join(binDir, "cpsweep"), args...)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Cmd.Process.Kill()
		if !p.WaitForLine("clock client ready", 10*time.Second) {
			t.Fatalf("clock client %s did not start:\n%s", name, p.Stderr.String())
		}
		nodeArgs = append(nodeArgs, "--node", name+"="+clockReady.FindStringSubmatch(p.Stderr.String())[1])
	}
	dir := t.TempDir()
	for _, session := range []string{"before", "after"} {
		out, err := exec.Command(filepath.Join(binDir, "cpsweep"), append([]string{"clock", "probe", "--count", "100", "--gap", "0", "-o", filepath.Join(dir, session+".json")}, nodeArgs...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("probe %s: %v\n%s", session, err, out)
		}
		time.Sleep(300 * time.Millisecond)
	}
	rel := filepath.Join(dir, "relation.json")
	if out, err := exec.Command(filepath.Join(binDir, "cpsweep"), "clock", "relate", "--reference", "a", filepath.Join(dir, "before.json"), filepath.Join(dir, "after.json"), "-o", rel).CombinedOutput(); err != nil {
		t.Fatalf("relate: %v\n%s", err, out)
	}
	var rf probing.RelationFile
	b, _ := os.ReadFile(rel)
	if err := json.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	for _, r := range rf.Relations {
		s := sims[r.Node]
		if r.Status != "ok" || r.AlphaLo > 1/s[0] || r.AlphaHi < 1/s[0] {
			t.Fatalf("%s: relation %+v does not contain the true slope %v", r.Node, r, 1/s[0])
		}
		var paperSum, tightSum float64
		n := 0
		for i := 0; i <= 2000; i++ {
			v := r.Window[0] + uint64(float64(r.Window[1]-r.Window[0])*float64(i)/2000)
			truth := (float64(v) - s[1]) / s[0] // the reference's TSC at that instant
			tr, err := rf.Translate(r.Node, v)
			if err != nil {
				t.Fatalf("%s: translate %d: %v", r.Node, v, err)
			}
			// the simulated clock rounds to a tick: allow one tick of truth
			if math.Abs(tr.Tighter.Value-truth) > tr.Tighter.Err+2 {
				t.Fatalf("%s: tighter bound %+v misses truth %.0f", r.Node, tr.Tighter, truth)
			}
			if tr.Network == nil || math.Abs(tr.Network.Value-truth) > tr.Network.Err+2 || tr.Network.Err > tr.Tighter.Err+1 {
				t.Fatalf("%s: network bound %+v (%s) misses truth %.0f or is wider than %v", r.Node, tr.Network, tr.NetworkNote, truth, tr.Tighter.Err)
			}
			if tr.Paper != nil {
				if math.Abs(tr.Paper.Value-truth) > tr.Paper.Err+2 {
					t.Fatalf("%s: paper bound %+v misses truth %.0f", r.Node, *tr.Paper, truth)
				}
				if tr.Tighter.Err > tr.Paper.Err+1 {
					t.Fatalf("%s: tighter %v wider than the paper's %v", r.Node, tr.Tighter.Err, tr.Paper.Err)
				}
				paperSum, tightSum, n = paperSum+tr.Paper.Err, tightSum+tr.Tighter.Err, n+1
			}
		}
		t.Logf("%s: %d values inside both bounds; mean half-width paper %.0f ticks, tighter %.0f ticks (reference ticks)", r.Node, n, paperSum/float64(n), tightSum/float64(n))
	}
}
