package sweep

import (
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/internal/histo"
	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/sender"
)

// passing is a trial outcome in which every rule holds: 1 M tuples/s from
// one thread in buckets of 100 (a 100 us slot), everything consumed, a flat
// backlog.
func passing() *Outcome {
	s := &sender.Result{TargetRate: 1e6, Threads: 1, BucketSize: 100, ScheduledTups: 1_000_000, Emitted: 1_000_000,
		Lateness: histo.Summary{P99: int64(200 * time.Microsecond)}}
	r := &receiver.Result{Complete: true, Consumed: 1_000_000, RingCapacity: 256, Latency: histo.Summary{P99: int64(2 * time.Millisecond)}}
	for i := 0; i < 10; i++ {
		r.Backlog = append(r.Backlog, receiver.BacklogSample{UnixNs: int64(i) * 1e8, Buckets: 3 + i%2,
			Consumed: uint64(i) * 100_000, LatencyNs: int64(time.Millisecond) + int64(i%3)*int64(time.Millisecond)})
	}
	return &Outcome{Rate: 1e6, Senders: []*sender.Result{s}, Receivers: []*receiver.Result{r}, Window: [2]int64{0, 1e9}}
}

func TestJudgeEachRuleFailsOnItsOwn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Outcome)
		rules  Rules
		fails  string // the only rule that must fail ("" = pass)
		detail string
	}{
		{"all hold", func(*Outcome) {}, Rules{}, "", ""},
		{"fell behind schedule", func(o *Outcome) {
			o.Senders[0].Shortfall = 500
			o.Senders[0].Emitted -= 500
			o.Receivers[0].Consumed -= 500
		}, Rules{}, RuleSchedule, "500 behind schedule"},
		{"dropped in drop mode", func(o *Outcome) {
			o.Senders[0].DroppedTups = 100
			o.Senders[0].Emitted -= 100
			o.Receivers[0].Consumed -= 100
		}, Rules{}, RuleSchedule, "100 dropped"},
		{"lost in transit", func(o *Outcome) { o.Receivers[0].Consumed -= 1; o.Receivers[0].Complete = false }, Rules{}, RuleDelivery, "nr_emit > nr_recv"},
		{"late beyond budget and floor", func(o *Outcome) { o.Senders[0].Lateness.P99 = int64(20 * time.Millisecond) }, Rules{}, RuleLateness, "bound 5.000 ms"},
		{"late beyond a tight budget", func(o *Outcome) { o.Senders[0].Lateness.P99 = int64(600 * time.Microsecond) },
			Rules{LatenessBudgets: 5, LatenessFloor: time.Microsecond}, RuleLateness, "bound 500.0 µs"},
		{"ring backlog grows", func(o *Outcome) {
			for i := range o.Receivers[0].Backlog {
				o.Receivers[0].Backlog[i].Buckets = 10 + 20*i
			}
		}, Rules{}, RuleBacklog, "occupancy 200.0 buckets"},
		{"queueing delay grows (a full ring hides it)", func(o *Outcome) {
			for i := range o.Receivers[0].Backlog {
				o.Receivers[0].Backlog[i].Buckets = 256
				o.Receivers[0].Backlog[i].LatencyNs = int64(time.Millisecond) + int64(i)*int64(10*time.Millisecond)
			}
		}, Rules{}, RuleBacklog, "delay grew 100.0 ms (limit 5.000 ms)"},
		{"latency objective", func(*Outcome) {}, Rules{LatencyP99: time.Millisecond}, RuleLatency, "objective 1.000 ms"},
		{"an agent failed", func(o *Outcome) { o.Errors = []string{"sender 10.0.0.2:9101: connection refused"} }, Rules{}, RuleAgents, "connection refused"},
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

// The summary says what the profiled trial's verdict means: a pass points
// to the logs; a failure below the answer says that the answer had less
// headroom than the profile costs (never silently a FAIL in the table); a
// failure above the answer (--profile-rate) is what was asked for.
func TestProfiledLineSaysWhatTheVerdictMeans(t *testing.T) {
	fail := Verdict{Checks: []Check{{Rule: RuleLateness, Detail: "p99 lateness 7.1ms > bound 5ms"}}}
	pass := Verdict{Pass: true}
	cases := []struct {
		name   string
		trials []Trial
		want   []string
	}{
		{"no profiled trial", []Trial{{Purpose: "confirm", Rate: 1e6, Verdict: pass}}, nil},
		{"passed", []Trial{{Purpose: "profile", Rate: 9e5, Verdict: pass}},
			[]string{"profiled trial at 900.0 k/s (90% of the answer) passed", "profiles/"}},
		{"failed below the answer", []Trial{{Purpose: "profile", Rate: 9e5, Verdict: fail}},
			[]string{"FAILED (lateness: p99 lateness 7.1ms > bound 5ms)", "the answer stands", "queueing", "headroom", "run the sweep again"}},
		{"failed above the answer", []Trial{{Purpose: "profile", Rate: 2e6, Verdict: fail}},
			[]string{"(200% of the answer) failed, as a trial above the answer may", "overloaded"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := profiledLine(&Result{LastPass: 1e6, FirstFail: 1.01e6, Trials: c.trials})
			if c.want == nil && got != "" {
				t.Fatalf("got %q, want nothing", got)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
		})
	}
}
