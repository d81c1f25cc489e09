package verdict

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/internal/histo"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/rundir"
	sendtally "github.com/cloudprofiler-go/cp/sender/tally"
)

// passing is a trial outcome in which every rule holds: 1 M tuples/s from
// one thread in buckets of 100 (a 100 us slot), everything consumed, a flat
// backlog.
func passing() *rundir.Outcome {
	s := &sendtally.Result{TargetRate: 1e6, Threads: 1, BucketSize: 100, ScheduledTups: 1_000_000, Emitted: 1_000_000,
		Lateness: histo.Summary{P99: int64(200 * time.Microsecond)}}
	r := &tally.Result{Complete: true, Consumed: 1_000_000, RingCapacity: 256, Latency: histo.Summary{P99: int64(2 * time.Millisecond)}}
	for i := 0; i < 10; i++ {
		r.Backlog = append(r.Backlog, tally.BacklogSample{UnixNs: int64(i) * 1e8, Buckets: 3 + i%2,
			Consumed: uint64(i) * 100_000, LatencyNs: int64(time.Millisecond) + int64(i%3)*int64(time.Millisecond)})
	}
	return &rundir.Outcome{Rate: 1e6, Senders: []*sendtally.Result{s}, Receivers: []*tally.Result{r}, Window: [2]int64{0, 1e9}}
}

func TestJudgeEachRuleFailsOnItsOwn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*rundir.Outcome)
		rules  Rules
		fails  string // the only rule that must fail ("" = pass)
		detail string
	}{
		{"all hold", func(*rundir.Outcome) {}, Rules{}, "", ""},
		{"fell behind schedule", func(o *rundir.Outcome) {
			o.Senders[0].Shortfall = 500
			o.Senders[0].Emitted -= 500
			o.Receivers[0].Consumed -= 500
		}, Rules{}, RuleSchedule, "500 behind schedule"},
		{"dropped in drop mode", func(o *rundir.Outcome) {
			o.Senders[0].DroppedTups = 100
			o.Senders[0].Emitted -= 100
			o.Receivers[0].Consumed -= 100
		}, Rules{}, RuleSchedule, "100 dropped"},
		{"lost in transit", func(o *rundir.Outcome) { o.Receivers[0].Consumed -= 1; o.Receivers[0].Complete = false }, Rules{}, RuleDelivery, "nr_emit > nr_recv"},
		{"late beyond budget and floor", func(o *rundir.Outcome) { o.Senders[0].Lateness.P99 = int64(20 * time.Millisecond) }, Rules{}, RuleLateness, "bound 5.000 ms"},
		{"late beyond a tight budget", func(o *rundir.Outcome) { o.Senders[0].Lateness.P99 = int64(600 * time.Microsecond) },
			Rules{LatenessBudgets: 5, LatenessFloor: time.Microsecond}, RuleLateness, "bound 500.0 µs"},
		{"ring backlog grows", func(o *rundir.Outcome) {
			for i := range o.Receivers[0].Backlog {
				o.Receivers[0].Backlog[i].Buckets = 10 + 20*i
			}
		}, Rules{}, RuleBacklog, "occupancy 200.0 buckets"},
		{"queueing delay grows (a full ring hides it)", func(o *rundir.Outcome) {
			for i := range o.Receivers[0].Backlog {
				o.Receivers[0].Backlog[i].Buckets = 256
				o.Receivers[0].Backlog[i].LatencyNs = int64(time.Millisecond) + int64(i)*int64(10*time.Millisecond)
			}
		}, Rules{}, RuleBacklog, "delay grew 100.0 ms (limit 5.000 ms)"},
		{"latency objective", func(*rundir.Outcome) {}, Rules{LatencyP99: time.Millisecond}, RuleLatency, "objective 1.000 ms"},
		{"an agent failed", func(o *rundir.Outcome) { o.Errors = []string{"sender 10.0.0.2:9101: connection refused"} }, Rules{}, RuleAgents, "connection refused"},
	} {
		o := passing()
		tc.mutate(o)
		v := Judge(o, tc.rules)
		var failed []string
		for _, c := range v.Checks {
			if !c.Pass {
				failed = append(failed, c.Rule)
				if !strings.Contains(c.Detail, tc.detail) {
					t.Errorf("%s: %s detail %q lacks %q", tc.name, c.Rule, c.Detail, tc.detail)
				}
			}
		}
		want := []string{}
		if tc.fails != "" {
			want = []string{tc.fails}
		}
		if strings.Join(failed, ",") != strings.Join(want, ",") || v.Pass != (tc.fails == "") {
			t.Errorf("%s: failed rules %v (pass=%v), want %v", tc.name, failed, v.Pass, want)
		}
	}
}

func TestJudgeNamesEveryFailingRule(t *testing.T) {
	o := passing()
	o.Senders[0].Shortfall = 10
	o.Senders[0].Lateness.P99 = int64(time.Second)
	o.Receivers[0].Consumed = 5
	v := Judge(o, Rules{})
	if v.Pass || len(v.Failed()) != 3 {
		t.Fatalf("want schedule, delivery and lateness to fail: %v", v.Failed())
	}
}

func TestWindowRateCountsOnlyTheWindow(t *testing.T) {
	o := passing()            // 100,000 tuples per 100 ms sample = 1 M/s
	o.Receivers[0].Rate = 123 // first-to-last rate, stretched by draining: not used
	if got := WindowRate(o); got < 0.999e6 || got > 1.001e6 {
		t.Fatalf("window rate %.0f, want 1e6", got)
	}
	o.Window = [2]int64{2e8, 5e8} // samples 2..5
	if got := WindowRate(o); got < 0.999e6 || got > 1.001e6 {
		t.Fatalf("sub-window rate %.0f", got)
	}
}

// The backlog rule's trend is Theil–Sen, not least squares. Samples are
// instants 100 ms apart in a ring that holds a few ms of tuples, so at
// high rates they are mostly 0 with a burst now and then. The first
// series is a real trial's (a demo sweep at 5.135 M tuples/s, 2026-11-25):
// its last sample caught a burst, a least-squares line read 47 buckets of
// growth and failed it, while its queueing delay grew 1.2 ms. A ring
// that fills over the window, or only over its last 40%, must still fail;
// one whose bursts come early and late in equal measure must not.
func TestBacklogTrendIgnoresBurstsAndSeesGrowth(t *testing.T) {
	burst := []int{42, 0, 78, 0, 0, 22, 147, 8, 0, 43, 0, 0, 0, 169, 0, 0, 0, 212}
	late := make([]int, 20)
	for i := 12; i < 20; i++ {
		late[i] = 25 * (i - 11) // 25 .. 200 over the last 40%
	}
	steady := make([]int, 20)
	for i := range steady {
		steady[i] = 5 + 12*i
	}
	cases := []struct {
		name     string
		buckets  []int
		fails    bool
		min, max float64 // the growth reported, in buckets
	}{
		{"a burst in the last sample", burst, false, -5, 5},
		{"steady growth", steady, true, 220, 240},
		{"growth over the last 40% only", late, true, 60, 400},
		{"bursts at both ends", []int{200, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 200}, false, -1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := passing()
			r := o.Receivers[0]
			r.Backlog = r.Backlog[:0]
			n := len(c.buckets)
			o.Window = [2]int64{0, int64(n-1) * 1e8}
			for i, b := range c.buckets {
				r.Backlog = append(r.Backlog, tally.BacklogSample{UnixNs: int64(i) * 1e8, Buckets: b,
					Consumed: uint64(i) * 100_000, LatencyNs: int64(time.Millisecond)})
			}
			growth, _, _ := backlogGrowth(o)
			if growth < c.min || growth > c.max {
				t.Errorf("growth %.1f buckets, want %.0f..%.0f", growth, c.min, c.max)
			}
			v := Judge(o, Rules{})
			if v.Pass == c.fails {
				t.Errorf("pass %v, want failed %v: %v", v.Pass, c.fails, v.Failed())
			}
		})
	}
}

// A long window's series is thinned to trendPoints before the pairs are
// taken: the slope of a line is still the line's, and the work bounded.
func TestTrendSlopeOfALongSeries(t *testing.T) {
	var tr trend
	for i := 0; i < 4096; i++ {
		y := 3*float64(i) + 7
		if i%10 == 0 {
			y += 500 // a burst in one sample of ten
		}
		tr = append(tr, point{float64(i), y})
	}
	if got := tr.slope(); math.Abs(got-3) > 1e-9 {
		t.Fatalf("slope %v, want 3", got)
	}
	if got := tr[:2].slope(); got != 0 {
		t.Fatalf("slope of two points %v, want 0 (too few)", got)
	}
	allocs := testing.AllocsPerRun(5, func() { _ = tr.slope() })
	if allocs > 2 {
		t.Fatalf("%v allocations a slope", allocs)
	}
}
