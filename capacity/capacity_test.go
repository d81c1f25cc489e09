package capacity

import (
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/tsc"
)

// The consumer measured alone at a known work per tuple: its capacity is
// below 1/work (the work plus the consumer's own cost) and not far below
// (generous: the machine is shared).
func TestCapacityOfConsumer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the consumer for about a second")
	}
	clock, err := tsc.NewClock(50 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Measure(Plan{Stage: Consumer, Work: 20 * time.Microsecond, Bucket: 10,
		Scenario: "synthetic-100", Duration: 500 * time.Millisecond, Repeats: 1, Clock: clock, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	// 20 µs of work per tuple caps it at 50k/s; the floor is generous,
	// because the test shares the CPUs with other packages' tests (a CI
	// run measured 18.9k).
	if res.TuplesPerS > 50e3 || res.TuplesPerS < 5e3 || len(res.Runs) != 1 || res.Runs[0].Starved > MaxStarved {
		t.Fatalf("capacity %+v: want below 50k tuples/s (20 µs each) and above 5k, not starved", res)
	}
	for _, r := range res.NotAlone {
		if r.Starved <= MaxStarved {
			t.Errorf("run %+v discarded as not alone, but starved at most %.0f%%", r, 100*MaxStarved)
		}
	}
	if r := res.Runs[0]; r.Seconds <= 0 || r.TuplesPerS < 0.99*float64(r.Tuples)/r.Seconds || r.TuplesPerS > 1.01*float64(r.Tuples)/r.Seconds {
		t.Errorf("run %+v: the rate is not its tuples over its seconds", r)
	}
}

func TestCapacityRefusesUnknownStage(t *testing.T) {
	_, err := Measure(Plan{Stage: "network", Bucket: 1, Repeats: 1, Duration: time.Second, Clock: tsc.NewClockHz(1e9)})
	if err == nil || !strings.Contains(err.Error(), "consumer") {
		t.Fatalf("err %v, want the stages it measures", err)
	}
}
