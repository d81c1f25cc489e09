package verdict

import (
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/rundir"
	sendtally "github.com/cloudprofiler-go/cp/sender/tally"
)

// TestBrokerLagGrowthAddsEveryConsumer: the system-backlog rule adds the
// lag trend of every receiver (one growing and one flat is growth), fails
// when a receiver could not read its lag, and is absent over ZeroMQ.
func TestBrokerLagGrowthAddsEveryConsumer(t *testing.T) {
	lagged := func(per100ms int64) []tally.BacklogSample {
		var s []tally.BacklogSample
		for i := int64(0); i <= 20; i++ {
			v := i * per100ms
			s = append(s, tally.BacklogSample{UnixNs: i * 1e8, BrokerLag: &v})
		}
		return s
	}
	unreadable := func() []tally.BacklogSample {
		v := int64(-1)
		return []tally.BacklogSample{{UnixNs: 1e8, BrokerLag: &v}}
	}
	out := func(backlogs ...[]tally.BacklogSample) *rundir.Outcome {
		o := &rundir.Outcome{Rate: 1e6, Window: [2]int64{0, 2e9}, Senders: []*sendtally.Result{{BucketSize: 100}}}
		for _, b := range backlogs {
			o.Receivers = append(o.Receivers, &tally.Result{Backlog: b})
		}
		return o
	}
	for _, tc := range []struct {
		name             string
		o                *rundir.Outcome
		present, pass    bool
		minGrew, maxGrew float64
	}{
		{"flat", out(lagged(0), lagged(0)), true, true, -1, 1},
		{"one of two grows", out(lagged(0), lagged(100)), true, false, 1900, 2100},
		{"small growth within 10% of a second's 10k messages", out(lagged(40)), true, true, 700, 900},
		{"unreadable", out(lagged(0), unreadable()), true, false, -1, 1},
		{"zeromq", out(nil, nil), false, true, 0, 0},
	} {
		v := Judge(tc.o, DefaultRules)
		var c *rundir.Check
		for i := range v.Checks {
			if v.Checks[i].Rule == RuleSystemBacklog {
				c = &v.Checks[i]
			}
		}
		if (c != nil) != tc.present {
			t.Errorf("%s: rule present %v, want %v", tc.name, c != nil, tc.present)
			continue
		}
		grew, _, _, _, _ := brokerLagGrowth(tc.o, DefaultRules)
		if c != nil && (c.Pass != tc.pass || grew < tc.minGrew || grew > tc.maxGrew) {
			t.Errorf("%s: pass %v grew %.0f (%s), want pass %v and %.0f..%.0f", tc.name, c.Pass, grew, c.Detail, tc.pass, tc.minGrew, tc.maxGrew)
		}
	}
}

// TestJobLagIsTheSystemsBacklog: a job's lag on its input (a stream
// processor between two topics) is judged by the system-backlog rule as
// the broker's is: growing fails, flat passes, unreadable fails, and with
// both series the rule fails when either grows.
func TestJobLagIsTheSystemsBacklog(t *testing.T) {
	series := func(per100ms int64, job bool) []tally.BacklogSample {
		var s []tally.BacklogSample
		for i := int64(0); i <= 20; i++ {
			v, flat := i*per100ms, int64(0)
			p := tally.BacklogSample{UnixNs: i * 1e8}
			if job {
				p.JobLag, p.BrokerLag = &v, &flat
			} else {
				p.BrokerLag = &v
			}
			s = append(s, p)
		}
		return s
	}
	onlyJob := func(v int64) []tally.BacklogSample {
		return []tally.BacklogSample{{UnixNs: 1e8, JobLag: &v}, {UnixNs: 2e8, JobLag: &v}}
	}
	for _, tc := range []struct {
		name       string
		backlog    []tally.BacklogSample
		pass       bool
		wantDetail string
	}{
		{"the job keeps up", series(0, true), true, "the job's lag on its input grew 0"},
		{"the job falls behind", series(100, true), false, "the job's lag on its input grew 2000"},
		{"the output's backlog grows, the job keeps up", series(100, false), false, "broker's backlog grew 2000"},
		{"only the job's lag, unreadable", onlyJob(-1), false, "1 receiver(s) could not read it"},
		{"only the job's lag, flat", onlyJob(5), true, "the job's lag on its input grew 0"},
	} {
		o := &rundir.Outcome{Rate: 1e6, Window: [2]int64{0, 2e9}, Senders: []*sendtally.Result{{BucketSize: 100}}, Receivers: []*tally.Result{{Backlog: tc.backlog}}}
		v := Judge(o, DefaultRules)
		var c *rundir.Check
		for i := range v.Checks {
			if v.Checks[i].Rule == RuleSystemBacklog {
				c = &v.Checks[i]
			}
		}
		if c == nil || c.Pass != tc.pass || !strings.Contains(c.Detail, tc.wantDetail) {
			t.Errorf("%s: %+v, want pass %v and %q", tc.name, c, tc.pass, tc.wantDetail)
		}
	}
}
