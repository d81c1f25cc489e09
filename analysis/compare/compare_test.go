package compare

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/rundir"
)

// runDir writes a minimal run directory: a summary with the given plan,
// agents' machine, answer and trust.
func runDir(t *testing.T, name, plan, machine string, lastPass float64, extra string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		rundir.FormatFile: `{"format": "cloudprofiler-go run directory", "version": 2}`,
		"summary.json": `{"format_version": 2, "name": "` + name + `", "plan": ` + plan + `, "agents": [{"role": "sender", "machine": "` + machine + `"}, {"role": "receiver", "machine": "` + machine + `"}]` + extra + `,
			"latency": {"rate": 1000, "runs": 3, "p50_ns": 2000000, "p99_ns": 9000000, "clock_bound_ns": 0, "clock": "one machine"},
			"result": {"method": "fast", "last_pass": ` + strconv.FormatFloat(lastPass, 'f', -1, 64) + `, "first_fail": 1100000,
			"boundary": {"runs": 3, "resolution": 0.01, "spread": 0.02, "reproducible": true, "statement": "as stated"}, "trials": [
			{"n": 1, "rate": 500000, "achieved": 500000, "purpose": "ramp", "verdict": {"pass": true}}]}}`,
	}
	for f, body := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCompare(t *testing.T) {
	plan := `{"duration_ns": 1000000000, "bucket_size": 100}`
	for _, tc := range []struct {
		name     string
		runs     []string
		says     []string
		differs  int
		machines bool
	}{
		{"same plan, same machines", []string{
			runDir(t, "a", plan, "m1", 1e6, ""),
			runDir(t, "b", plan, "m1", 1.05e6, ""),
		}, []string{"2 runs, 2 with an answer to use; same plan on the same machines: answers from 1.000 M/s to 1.050 M/s (the highest 5.0% above the lowest)"}, 0, false},
		{"a bucket size apart", []string{
			runDir(t, "a", plan, "m1", 1e6, ""),
			runDir(t, "b", `{"duration_ns": 1000000000, "bucket_size": 10}`, "m1", 2e6, ""),
		}, []string{"differ in plan (1 field(s))", "bucket_size: 100 | 10"}, 1, false},
		{"durations in units", []string{
			runDir(t, "a", plan, "m1", 1e6, ""),
			runDir(t, "b", `{"duration_ns": 500000000, "bucket_size": 100}`, "m1", 2e6, ""),
		}, []string{"duration_ns: 1s | 500ms"}, 1, false},
		{"other machines, one contradicted", []string{
			runDir(t, "a", plan, "m1", 1e6, ""),
			runDir(t, "b", plan, "m2", 2e6, `, "contradicted": "8 k/s passed"`),
		}, []string{"1 with an answer to use", "differ in machines", "NOT TO BE USED: contradicted: 8 k/s passed"}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Open(tc.runs)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			c.WriteText(&b)
			for _, s := range tc.says {
				if !strings.Contains(b.String(), s) {
					t.Errorf("text lacks %q:\n%s", s, b.String())
				}
			}
			if len(c.PlanDiffers) != tc.differs || (c.MachinesDiffer != "") != tc.machines {
				t.Errorf("plan differs %q, machines %q", c.PlanDiffers, c.MachinesDiffer)
			}
			if c.Runs[0].LatencyP99Ns != 9e6 || c.Runs[0].Answer != "as stated" {
				t.Errorf("run 1: %+v", c.Runs[0])
			}
		})
	}
	if _, err := Open([]string{runDir(t, "only", plan, "m1", 1e6, "")}); err == nil {
		t.Error("one run compared")
	}
	if _, err := Open([]string{t.TempDir(), t.TempDir()}); err == nil {
		t.Error("directories without summary.json compared")
	}
}

// TestCompareBudgetsBeforeReading: a summary over the budget of a run, or
// runs over the budget together, are refused from their sizes before
// anything is read (sparse files: nothing of them is on the disk).
func TestCompareBudgetsBeforeReading(t *testing.T) {
	plan := `{"duration_ns": 1000000000}`
	huge := runDir(t, "huge", plan, "m1", 1e6, "")
	if err := os.Truncate(filepath.Join(huge, "summary.json"), 250<<20); err != nil {
		t.Fatal(err)
	}
	runs := make([]string, MaxRuns)
	for i := range runs {
		runs[i] = huge
	}
	if _, err := Open(runs); err == nil || !strings.Contains(err.Error(), "over compare's 64.00 MiB a run") {
		t.Errorf("16 copies of a 250 MiB summary: %v", err)
	}
	var many []string
	for i := range 5 {
		d := runDir(t, strconv.Itoa(i), plan, "m1", 1e6, "")
		if err := os.Truncate(filepath.Join(d, "summary.json"), 60<<20); err != nil {
			t.Fatal(err)
		}
		many = append(many, d)
	}
	if _, err := Open(many); err == nil || !strings.Contains(err.Error(), "over compare's 256.0 MiB in all") {
		t.Errorf("5 summaries of 60 MiB: %v", err)
	}
}

// TestCompareEscapesWhatARunSays: a newline or a terminal's escape in a
// run's name, its directory or its statements shows as an escape in the
// text: it starts no line of its own.
func TestCompareEscapesWhatARunSays(t *testing.T) {
	plan := `{"duration_ns": 1000000000}`
	a := runDir(t, `a\nFORGED line\u001b[2J\u009b31m`, plan, "m1", 1e6, `, "contradicted": "x\nFORGED too"`)
	b := filepath.Join(filepath.Dir(runDir(t, "b", plan, "m1", 1e6, "")), "b\nFORGED dir")
	if err := os.Rename(filepath.Join(filepath.Dir(b), "b"), b); err != nil {
		t.Fatal(err)
	}
	c, err := Open([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	c.WriteText(&out)
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "FORGED") || strings.ContainsAny(line, "\x1b\u009b") {
			t.Errorf("a forged line or an escape: %q", line)
		}
	}
	if !strings.Contains(out.String(), `a\nFORGED line\x1b[2J\u009b31m`) {
		t.Errorf("the name is not shown escaped:\n%s", out.String())
	}
}

// TestCompareRefusesARunGivenTwice: the same run by two paths (as is, and
// through a symbolic link) is refused, naming both; it compared with
// itself as two runs that agree.
func TestCompareRefusesARunGivenTwice(t *testing.T) {
	plan := `{"duration_ns": 1000000000}`
	a := runDir(t, "a", plan, "m1", 1e6, "")
	link := filepath.Join(t.TempDir(), "again")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	for _, paths := range [][]string{{a, a}, {a, link}, {a + "/", runDir(t, "b", plan, "m1", 1e6, ""), a}} {
		if _, err := Open(paths); err == nil || !strings.Contains(err.Error(), "is given twice") {
			t.Errorf("%v: %v, want it refused", paths, err)
		}
	}
	if _, err := Open([]string{a, runDir(t, "c", plan, "m1", 1e6, "")}); err != nil {
		t.Errorf("two runs: %v", err)
	}
}
