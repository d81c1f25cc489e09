package analysis

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/rundir"
)

// An overloaded profiled trial's tuples queue for as long as it runs: the
// join's lag follows the trial's length (within what the join can hold at
// its rate); a trial at a sustainable rate keeps the default.
func TestLagFor(t *testing.T) {
	for _, tc := range []struct {
		name    string
		summary string
		want    time.Duration
	}{
		{"no summary", "", DefaultLag},
		{"profiled below the answer, passed", `{"plan": {"duration_ns": 2000000000, "warmup_ns": 500000000},
			"result": {"last_pass": 1e6, "trials": [{"purpose": "profile", "rate": 9e5, "verdict": {"pass": true}}]}}`, DefaultLag},
		{"profiled below the answer, failed", `{"plan": {"duration_ns": 2000000000, "warmup_ns": 500000000},
			"result": {"last_pass": 2.2e5, "trials": [{"purpose": "profile", "rate": 2e5, "verdict": {"pass": false}}]}}`, 2500 * time.Millisecond},
		{"at the limit", `{"plan": {"duration_ns": 2000000000, "warmup_ns": 500000000},
			"result": {"last_pass": 1e5, "trials": [{"purpose": "profile", "rate": 1.1e5, "verdict": {"pass": false}}]}}`, 2500 * time.Millisecond},
		{"at the limit, a rate the join cannot hold for long", `{"plan": {"duration_ns": 2000000000, "warmup_ns": 500000000},
			"result": {"last_pass": 2e6, "trials": [{"purpose": "profile", "rate": 2.2e6, "verdict": {"pass": false}}]}}`,
			476625 * time.Microsecond}, // MaxPending / 4 / 2.2 M/s
		{"at the limit, faster still", `{"plan": {"duration_ns": 2000000000},
			"result": {"last_pass": 8e6, "trials": [{"purpose": "profile", "rate": 8.8e6, "verdict": {"pass": false}}]}}`, DefaultLag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &rundir.Dir{}
			if tc.summary != "" {
				d.Summary = &rundir.Summary{}
				if err := json.Unmarshal([]byte(tc.summary), d.Summary); err != nil {
					t.Fatal(err)
				}
			}
			if got := LagFor(d); got < tc.want-time.Millisecond || got > tc.want+time.Millisecond {
				t.Fatalf("lag %v, want %v", got, tc.want)
			}
		})
	}
}
