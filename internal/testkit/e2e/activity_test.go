package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/analysis/activity"
)

// profiledRun sweeps one rate with every channel logged (the profiled
// trial at --profile-rate) and returns the run directory.
func profiledRun(t *testing.T, name string, extra ...string) string {
	t.Helper()
	handlers := filepath.Join(t.TempDir(), "handlers.yaml")
	if err := os.WriteFile(handlers, []byte("default: {handler: buffered, path: \"{name}.log\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--search", "linear", "--from", "20k", "--to", "20k", "--step", "1k", "--duration", "2s", "--warmup", "300ms",
		"--work", "10us", "--bucket", "10", "--clock", "--profile", handlers, "--name", name, "--lateness-floor", "500ms"}, extra...)
	rep, p := runSweep(t, 3*time.Minute, args...)
	if _, err := os.Stat(filepath.Join(rep.Dir, "profiles", "receiver0", "activity.consumer.log")); err != nil {
		t.Fatalf("no activity log collected: %v\n%s", err, p.Stderr.String())
	}
	return rep.Dir
}

// The activity graph of real runs: in an overloaded run with a slow
// consumer (10 us a tuple, offered 300 k/s) the consumer's work carries
// the critical paths; a 200 ms consumer stall fires progress-max=100ms
// where it happened, for about its length; the same run without the stall
// fires nothing (exit 0), the stalled one exits 2. (A stall counts from
// the receiver's start, before the first bucket: 1.5 s is inside the data.)
func TestActivityGraphOfRealRuns(t *testing.T) {
	over := profiledRun(t, "overloaded", "--profile-rate", "300k")
	out, err := exec.Command(filepath.Join(binDir, "cpsweep"), "analyze", "--pag", "--json", over).Output()
	if err != nil {
		t.Fatalf("analyze --pag: %v\n%s", err, out)
	}
	var both struct{ PAG activity.Report }
	if err := json.Unmarshal(out, &both); err != nil {
		t.Fatal(err)
	}
	cp := map[string]float64{}
	for _, s := range both.PAG.CP {
		cp[s.Worker+" "+s.Kind] = s.Value
	}
	// The consumer's thread carries the paths: consuming, or (on a loaded
	// host) runnable while consuming, which the graph books as cpu-wait.
	// Alone on this host it is 0.92 or more, under two CPU hogs 0.97; no
	// other activity comes near. (While a lane's brief wait at the clip
	// point left its queued buckets unclipped, the sender's messages took
	// 0.1 alone and up to 0.45 in CI.)
	consumer := cp["receiver0/consumer consume"] + cp["receiver0/consumer cpu-wait"]
	if consumer < 0.75 || cp["receiver0/consumer consume"] < 0.35 {
		t.Fatalf("consumer-bound run: critical participation %v, want the consumer's consume (and its cpu-wait) >= 0.75", both.PAG.CP)
	}
	for k, v := range cp {
		if !strings.HasPrefix(k, "receiver0/consumer ") && v > 0.1 {
			t.Fatalf("consumer-bound run: %s carries %.2f of the paths (at most 0.1 beside the consumer's %.2f): %v", k, v, consumer, both.PAG.CP)
		}
	}
	if both.PAG.CPUWait == nil || both.PAG.CPUWait.PathWindows == 0 || len(both.PAG.CPUWait.Threads) < 3 {
		t.Fatalf("the threads' runnable wait was not placed on the graph: %+v", both.PAG.CPUWait)
	}
	for _, f := range []string{"pag.json", "pag.csv"} {
		if st, err := os.Stat(filepath.Join(over, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}

	invariants := func(dir string) (int, []activity.Violation) {
		out, err := exec.Command(filepath.Join(binDir, "cpsweep"), "invariants", "--json", "--progress-max", "100ms", dir).Output()
		var res struct{ Violations []activity.Violation }
		if jerr := json.Unmarshal(out, &res); jerr != nil {
			t.Fatalf("invariants: %v / %v\n%s", err, jerr, out)
		}
		return ExitCode(err), res.Violations
	}
	if code, v := invariants(profiledRun(t, "clean", "--profile-rate", "20k")); code != 0 || len(v) != 0 {
		t.Fatalf("a fault-free run at 20 k/s: exit %d, violations %+v", code, v)
	}
	code, v := invariants(profiledRun(t, "stall", "--profile-rate", "20k", "--stall", "consumer@1500ms+200ms"))
	if code != 2 || len(v) != 1 || v[0].Invariant != "progress-max" || v[0].ValueNs < 150e6 || v[0].ValueNs > 400e6 {
		t.Fatalf("a 200 ms consumer stall: exit %d, violations %+v, want one progress-max of about 200 ms", code, v)
	}
}
