package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchDemoProfiledTrial runs the sweep of `make demo` (its command
// line read from the Makefile) CP_BENCH_DEMO_RUNS times (default 10) and
// counts the runs whose profiled trial, at 90% of the answer with every
// tuple logged at every point, passed (issue 16: >= 9 of 10 on a quiet
// machine).
func TestBenchDemoProfiledTrial(t *testing.T) {
	benchOnly(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	args := demoArgs(t, root)
	runs := 10
	if n, err := strconv.Atoi(os.Getenv("CP_BENCH_DEMO_RUNS")); err == nil && n > 0 {
		runs = n
	}
	passed, contradicted := 0, 0
	for i := 0; i < runs; i++ {
		// A contradicted sweep (exit 6: the host moved during it) is what
		// a new user would see too: counted, and not a pass.
		r, p := runSweepAllowing(t, 10*time.Minute, []int{6}, args...)
		if r.Contradicted != "" {
			contradicted++
			t.Logf("demo %d: NOT TRUSTWORTHY: %s", i, r.Contradicted)
		}
		ok, found := false, false
		for _, tr := range r.Result.Trials {
			if !tr.Verdict.Pass && tr.Purpose != "profile" { // what set the answer
				t.Logf("demo %d: trial at %.3fM (%s) failed: %s", i, tr.Rate/1e6, tr.Purpose, failedRules(tr.Verdict.Checks))
			}
			if tr.Purpose == "profile" {
				found, ok = true, tr.Verdict.Pass
				t.Logf("demo %d: answer %.3fM tuples/s; profiled trial at %.3fM achieved %.3fM: pass %v %s",
					i, r.Result.LastPass/1e6, tr.Rate/1e6, tr.Achieved/1e6, ok, failedRules(tr.Verdict.Checks))
			}
		}
		if !found {
			t.Fatalf("demo %d ran no profiled trial:\n%s", i, p.Stderr.String())
		}
		if ok && r.Contradicted == "" {
			passed++
		}
	}
	t.Logf("DEMO profiled trial at 90%% of the answer: passed in %d of %d runs (%d sweeps contradicted) (target >= 9 of 10: %s)",
		passed, runs, contradicted, verdict(passed*10 >= 9*runs))
	record(t, "demo_profiled_trial", map[string]any{"runs": runs, "passed": passed, "contradicted": contradicted})
}

// demoArgs returns the arguments of the Makefile's demo sweep, with its
// profile's path made absolute (the test runs elsewhere) and without
// --name/--results (runSweep sets its own results directory).
func demoArgs(t *testing.T, root string) []string {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(mk), "\ndemo: build\n")
	if !ok {
		t.Fatal("the Makefile has no demo target")
	}
	line, _, _ := strings.Cut(rest, "\n")
	_, cmd, ok := strings.Cut(line, "$(BIN)/cpsweep ")
	if !ok {
		t.Fatalf("the demo target does not start with cpsweep: %q", line)
	}
	args := strings.Fields(cmd)
	for i, a := range args {
		if strings.HasPrefix(a, "profiles/") {
			args[i] = filepath.Join(root, a)
		}
	}
	return args
}
