package rundir

import (
	"os"
	"path/filepath"
	"testing"
)

// Every agent with host accounting is read, under the node name the
// sweep gives it; one with no accounting or an error is left out, one
// without clock pairs (or with pairs that do not pair up) has none, and a
// trial file that is not a regular file is refused.
func TestHostSeries(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "trials"), 0o755); err != nil {
		t.Fatal(err)
	}
	const doc = `{"outcome": {
	  "receivers": [
	    {"stage_series": {"tsc": [1, 2], "unix_ns": [10, 20]}, "host": {"error": "no /proc"}},
	    {"stage_series": {"tsc": [1, 2], "unix_ns": [10, 20]}, "host": {"period_ns": 100000000, "samples": [{"t_unix_ns": 15, "threads": {"lane0": {"runqueue_s": 0.5}}}]}},
	    {"stage_series": {"tsc": [1, 2, 3], "unix_ns": [10, 20]}, "host": {"period_ns": 1, "samples": []}},
	    {"host": {"period_ns": 1, "samples": []}}
	  ],
	  "senders": [null, {"stage_series": {"tsc": [5], "unix_ns": [50]}, "host": {"period_ns": 200000000, "samples": []}}]
	}}`
	if err := os.WriteFile(filepath.Join(dir, "trials", "007.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	d := &Dir{Path: dir}
	got, err := d.HostSeries(7)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].Node != "receiver1" || got[1].Node != "receiver2" || got[2].Node != "receiver3" || got[3].Node != "sender1" {
		t.Fatalf("agents %+v", got)
	}
	if len(got[1].TSC) != 0 || len(got[2].TSC) != 0 || len(got[3].TSC) != 1 {
		t.Fatalf("clock pairs: %d, %d, %d", len(got[1].TSC), len(got[2].TSC), len(got[3].TSC))
	}
	if r := got[0]; r.PeriodNs != 1e8 || len(r.Samples) != 1 || r.Samples[0].Threads["lane0"].Runqueue != 0.5 || len(r.TSC) != 2 {
		t.Fatalf("receiver1 %+v", r)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "trials", "008.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.HostSeries(8); err == nil {
		t.Fatal("a trial file linked to /dev/zero was read")
	}
	if _, err := d.HostSeries(9); err == nil {
		t.Fatal("a missing trial file gave no error")
	}
}
