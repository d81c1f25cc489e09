package diagnose

import (
	"math"
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/stage"
)

// cumulative is a per-period share of 100 ms periods as a cumulative
// state series (ns); share(i) is period i's (i >= 1).
func cumulative(n int, share func(i int) float64) []int64 {
	v := make([]int64, n)
	for i := 1; i < n; i++ {
		v[i] = v[i-1] + int64(share(i)*1e8)
	}
	return v
}

func constant(f float64) func(int) float64 { return func(int) float64 { return f } }

// A black box's service rate is what it delivered while backlogged: the
// stages after it idled while the stage before it was blocked on it, or
// its queue grew over the window. Nowhere else does its output say what
// it could do.
func TestBoxRateFromBackloggedPeriods(t *testing.T) {
	const n = 21 // 20 periods of 100 ms
	for _, tc := range []struct {
		name          string
		sent, arrived uint64            // items per period
		sendBlocked   func(int) float64 // the sender thread's blocked share per period
		laneIdle      float64           // the lane's waiting share
		overloaded    bool              // the trial failed
		want          float64           // items/s (0: none)
		periods       int               // backlogged periods
		why           string            // in Why when none
	}{
		{name: "a relay 1% slower than the offered rate", sent: 303, arrived: 300, sendBlocked: constant(0), laneIdle: 0.98, overloaded: true, want: 3000, periods: 20},
		{name: "a transport that held its sender back", sent: 300, arrived: 300, sendBlocked: constant(0.3), laneIdle: 0.7, want: 3000, periods: 20},
		{name: "everything keeps up", sent: 300, arrived: 300, sendBlocked: constant(0), laneIdle: 0.9, why: "never backlogged"},
		{name: "the lane is the limit, not the box", sent: 303, arrived: 300, sendBlocked: constant(0.3), laneIdle: 0, overloaded: true, why: "never backlogged"},
		{name: "backlogged in two periods only", sent: 300, arrived: 300, sendBlocked: func(i int) float64 {
			if i == 5 || i == 6 {
				return 0.5
			}
			return 0
		}, laneIdle: 0.7, periods: 2, why: "too few"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lane := stage.StageSeries{Name: "lane0", Kind: stage.Lane, States: []string{"waiting", "decoding", "blocked"},
				StateNs: [][]int64{cumulative(n, constant(tc.laneIdle)), cumulative(n, constant(1-tc.laneIdle)), zeros(n)}, Items: ramp(n, tc.arrived), Queue: zeros(n)}
			stream := stage.StageSeries{Name: "stream0", Kind: stage.Network, Items: ramp(n, tc.arrived), NoQueue: true, StateNs: [][]int64{}, States: []string{}}
			thread := stage.StageSeries{Name: "thread0", Kind: stage.Sender, States: []string{"pacing", "sending", "blocked"},
				StateNs: [][]int64{zeros(n), cumulative(n, func(i int) float64 { return 1 - tc.sendBlocked(i) }), cumulative(n, tc.sendBlocked)},
				Items:   ramp(n, tc.sent), Queue: zeros(n)}
			for i := range thread.Items {
				thread.Items[i] += 20 // in flight
			}
			tl, err := BuildTimeline(Input{Processes: []Process{
				{Node: "receiver0", Role: "receiver", Series: seriesOf(n, 1000, 5e9, lane, stream), Lanes: map[uint32]int{0: 0}},
				{Node: "sender0", Role: "sender", Series: seriesOf(n, 1000, 5e9, thread), Streams: map[string]uint32{"thread0": 0}},
			}})
			if err != nil {
				t.Fatal(err)
			}
			d := Analyze(tl, Options{Overloaded: tc.overloaded})
			if len(d.BoxRates) != 1 || d.BoxRates[0].Stage != "stream0" {
				t.Fatalf("box rates %+v, want stream0's", d.BoxRates)
			}
			r := d.BoxRates[0]
			if math.Abs(r.PerS-tc.want) > 1e-6*max(tc.want, 1) || (tc.want > 0 && r.Periods != tc.periods) {
				t.Fatalf("%.1f items/s over %d periods (%s), want %.1f over %d", r.PerS, r.Periods, r.Why, tc.want, tc.periods)
			}
			if tc.want == 0 && (!strings.Contains(r.Why, tc.why) || r.Periods != tc.periods) {
				t.Fatalf("why %q over %d periods, want %q over %d", r.Why, r.Periods, tc.why, tc.periods)
			}
		})
	}
}
