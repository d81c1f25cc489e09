package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
	"github.com/cloudprofiler-go/cp/sweep"
)

// TestSweepAPlainJSONFilter sweeps examples/jobs/benthos-filter as its
// README runs it: a Benthos config that reads and writes JSON events and
// knows nothing of the harness, on a real nats-server. A correct filter
// passes per identity; the same job with one fault added after the
// filter (a view dropped and another repeated; a view whose
// cp_intended_ns is not a number) fails delivery, naming what is wrong.
func TestSweepAPlainJSONFilter(t *testing.T) {
	addr, _ := realserver.NATS(t)
	example, err := os.ReadFile(filepath.Join(moduleDir(t), "examples", "jobs", "benthos-filter", "filter.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const filter = `    - mapping: 'root = if this.event_type != "view" { deleted() } else { this }'` + "\n"
	if !strings.Contains(string(example), filter) {
		t.Fatalf("the example's filter is not the one this test adds faults after:\n%s", example)
	}
	for i, tc := range []struct {
		name, fault string
		pass        bool
		want        []string
	}{
		{"correct", "", true, []string{": exact;", "per identity: each owed tuple once, none invented"}},
		{"drops one view and repeats another",
			"    - mapping: 'root = if count(\"drop\") == 200 { deleted() } else { this }'\n" +
				"    - mapping: 'root = if count(\"dup\") == 300 { [this, this] } else { [this] }'\n    - unarchive:\n        format: json_array\n",
			false, []string{": 1 missing;", "per identity: 1 duplicated (not consumed)"}},
		{"writes a time that is not a number",
			"    - mapping: |\n        root = this\n        root.cp_intended_ns = if count(\"bad\") == 100 { \"soon\" } else { this.cp_intended_ns }\n",
			false, []string{"1 malformed message(s) in the job's output", "1 field", `the latest: field "cp_intended_ns": want a whole number`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := filepath.Join(t.TempDir(), "filter.yaml")
			yaml := strings.Replace(string(example), filter, filter+tc.fault, 1)
			if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			in := fmt.Sprintf("jetstream://%s/json%d.in?group=filter&format=json", addr, i)
			out := fmt.Sprintf("jetstream://%s/json%d.out?format=json", addr, i)
			job, err := StartEnv([]string{"INPUT=" + in, "OUTPUT=" + out}, filepath.Join(binDir, "cpjob"), "run", conf)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = job.Signal(syscall.SIGKILL); _ = job.Wait(5 * time.Second) })
			search := []string{"--search", "linear", "--from", "2k", "--to", "2k", "--step", "1k"}
			if tc.pass {
				search = []string{"--search", "linear", "--from", "2k", "--to", "4k", "--step", "2k"}
			}
			rep, p := runSweepAllowing(t, 3*time.Minute, []int{sweep.ExitNoRatePassed}, append([]string{"--input", in, "--output", out,
				"--scenario", "ad-event", "--schema", "ad-event", "--expect-filter", "event_type == view", "--duration", "2s",
				"--warmup", "500ms", "--job-quiet", "1500ms", "--lateness-floor", "100ms", "--stage-period", "0"}, search...)...)
			if len(rep.Result.Trials) == 0 {
				t.Fatalf("no trial\n%s\n%s", p.Stderr.String(), job.Stderr.String())
			}
			checkDelivery(t, rep, tc.pass, tc.want)
		})
	}
}

// checkDelivery checks every trial of a job's sweep: its delivery rule
// passes or fails as pass says, naming each of want, and every other rule
// passes.
func checkDelivery(t *testing.T, rep sweepReport, pass bool, want []string) {
	t.Helper()
	for _, tr := range rep.Result.Trials {
		for _, c := range tr.Verdict.Checks {
			if c.Rule != "delivery" {
				if !c.Pass {
					t.Errorf("trial at %.0f: rule %s failed too: %s", tr.Rate, c.Rule, c.Detail)
				}
				continue
			}
			t.Logf("trial at %.0f: delivery: %s", tr.Rate, c.Detail)
			if c.Pass != pass {
				t.Errorf("trial at %.0f: delivery pass %v, want %v", tr.Rate, c.Pass, pass)
			}
			for _, w := range want {
				if !strings.Contains(c.Detail, w) {
					t.Errorf("trial at %.0f: delivery lacks %q", tr.Rate, w)
				}
			}
		}
	}
}
