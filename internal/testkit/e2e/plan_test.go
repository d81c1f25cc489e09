package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/sweep"
)

// TestPlanRerunCompare: a sweep keeps the plan it ran with (plan.yaml),
// cpsweep rerun repeats it into a run directory of its own, and cpsweep
// compare sets the two side by side, judging each difference against the
// runs' own spread.
func TestPlanRerunCompare(t *testing.T) {
	// a consumer that spends 100 us a tuple holds ~10 k/s: 12 k fails
	first, p := runSweepAllowing(t, 2*time.Minute, []int{sweep.ExitNoRatePassed}, "--search", "linear", "--from", "4k", "--to", "12k", "--step", "4k",
		"--work", "100us", "--bucket", "10", "--duration", "1s", "--warmup", "300ms", "--lateness-floor", "200ms", "--name", "first")
	plan, err := os.ReadFile(filepath.Join(first.Dir, "plan.yaml"))
	if err != nil {
		t.Fatalf("no plan.yaml: %v\n%s", err, p.Stderr.String())
	}
	for _, want := range []string{"work: 100µs\n", "search: linear\n", "from: 4k\n", "name: first\n", "json: true\n"} {
		if !strings.Contains(string(plan), want) {
			t.Errorf("plan.yaml lacks %q:\n%s", want, plan)
		}
	}
	cpsweep := filepath.Join(binDir, "cpsweep")
	// With no terminal to ask on, a rerun goes on only with --yes; the
	// plan is shown first either way.
	refused := exec.Command(cpsweep, "rerun", first.Dir, "--", "--name", "refused")
	if out, err := refused.CombinedOutput(); ExitCode(err) != sweep.ExitInvalidPlan || !strings.Contains(string(out), "work: 100µs") || !strings.Contains(string(out), "give --yes") {
		t.Fatalf("rerun without --yes and no terminal: %v\n%s", err, out)
	}
	if runs, _ := filepath.Glob(filepath.Join(filepath.Dir(first.Dir), "*-refused")); len(runs) != 0 {
		t.Fatalf("a refused rerun wrote %v", runs)
	}
	rerun := exec.Command(cpsweep, "rerun", "--yes", first.Dir, "--", "--name", "again")
	out, err := rerun.Output()
	if err != nil && ExitCode(err) != sweep.ExitNoRatePassed {
		t.Fatalf("rerun: %v\n%s", err, out)
	}
	var again sweepReport
	if err := json.Unmarshal(out, &again); err != nil || again.Dir == "" || again.Dir == first.Dir || filepath.Dir(again.Dir) != filepath.Dir(first.Dir) {
		t.Fatalf("rerun's report: %v, dir %q beside %q", err, again.Dir, first.Dir)
	}
	if b, _ := os.ReadFile(filepath.Join(again.Dir, "plan.yaml")); !strings.Contains(string(b), "name: again\n") || !strings.Contains(string(b), "work: 100µs\n") {
		t.Errorf("the rerun's plan.yaml: the plan with the flag beside it winning, got:\n%s", b)
	}
	cmp, err := exec.Command(cpsweep, "compare", "--json", first.Dir, again.Dir).Output()
	if err != nil {
		t.Fatalf("compare: %v", err)
	}
	var c struct {
		Changes []struct {
			Run              int
			Figure           string
			From, To, Spread float64
			Exceeds, Judged  bool
			Why, Statement   string
		} `json:"changes"`
	}
	if err := json.Unmarshal(cmp, &c); err != nil || len(c.Changes) != 3 {
		t.Fatalf("compare --json: %v\n%s", err, cmp)
	}
	a := c.Changes[0]
	if a.Figure != "answer" || a.Run != 2 || a.From != first.Result.LastPass || a.To != again.Result.LastPass {
		t.Errorf("the answer's change %+v, runs answered %.0f and %.0f", a, first.Result.LastPass, again.Result.LastPass)
	}
	if a.Judged != (a.Why == "") || a.Judged && (a.Spread <= 0 || strings.Contains(a.Statement, "CHANGE") != a.Exceeds) {
		t.Errorf("the answer's change is not said as judged: %+v", a)
	}
	if first.Result.FirstFail > 0 && again.Result.FirstFail > 0 && first.Result.LastPass > 0 && again.Result.LastPass > 0 && !a.Judged {
		t.Errorf("two answers with their intervals were not judged: %+v", a)
	}
	text, _ := exec.Command(cpsweep, "compare", first.Dir, again.Dir).Output()
	if !strings.Contains(string(text), "against run 1") || !strings.Contains(string(text), a.Statement) {
		t.Errorf("compare's text lacks the changes:\n%s", text)
	}
	// A run directory without a plan, and a second plan, are refused.
	if out, err := exec.Command(cpsweep, "rerun", t.TempDir()).CombinedOutput(); ExitCode(err) != sweep.ExitInvalidPlan {
		t.Errorf("rerun of a folder that is no run directory: %v\n%s", err, out)
	}
	if out, err := exec.Command(cpsweep, "rerun", first.Dir, "--", "--plan", "x.yaml").CombinedOutput(); ExitCode(err) != sweep.ExitInvalidPlan || !strings.Contains(string(out), "leave --plan out") {
		t.Errorf("rerun with --plan: %v\n%s", err, out)
	}
}
