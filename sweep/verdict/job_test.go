package verdict

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/limits"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/scenarios"
	sendtally "github.com/cloudprofiler-go/cp/sender/tally"
	"github.com/cloudprofiler-go/cp/stage"
)

// TestJobDeliveryNamesTheExactDifference: through a job, the delivery rule
// compares what the declared filter kept (or every tuple emitted) with the
// tuples or the windows' counts that arrived, and names the difference:
// one tuple dropped, one duplicated, a window miscounted by one.
func TestJobDeliveryNamesTheExactDifference(t *testing.T) {
	for _, tc := range []struct {
		name    string
		job     string
		filter  string
		matched uint64
		got     uint64 // consumed tuples, or the windows' counts
		pass    bool
		detail  string
	}{
		{"a filter's output, exact", rundir.JobTuples, "event_type == view", 333_000, 333_000, true, "that \"event_type == view\" keeps; 333000 tuples consumed: exact"},
		{"a filter dropped one", rundir.JobTuples, "event_type == view", 333_000, 332_999, false, "1 missing"},
		{"a filter duplicated one", rundir.JobTuples, "event_type == view", 333_000, 333_001, false, "1 more than owed"},
		{"windows, exact", rundir.JobWindows, "event_type == view", 333_000, 333_000, true, "counted in the windows consumed: exact"},
		{"a window miscounted by one", rundir.JobWindows, "event_type == view", 333_000, 333_001, false, "1 more than owed"},
		{"a map owes every tuple", rundir.JobTuples, "", 0, 1_000_000, true, "every one of the 1000000 emitted"},
		{"a map lost 10", rundir.JobTuples, "", 0, 999_990, false, "10 missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := passing()
			o.Job = tc.job
			o.Senders[0].Expect, o.Senders[0].Matched = tc.filter, tc.matched
			if tc.job == rundir.JobWindows {
				o.Receivers[0].Consumed, o.Receivers[0].WindowCount = 4_000, tc.got
			} else {
				o.Receivers[0].Consumed = tc.got
			}
			v := Judge(o, Rules{})
			for _, c := range v.Checks {
				if c.Rule != RuleDelivery {
					if !c.Pass {
						t.Errorf("rule %s failed too: %s", c.Rule, c.Detail)
					}
					continue
				}
				if c.Pass != tc.pass || !strings.Contains(c.Detail, tc.detail) {
					t.Errorf("delivery: pass %v %q; want pass %v and %q", c.Pass, c.Detail, tc.pass, tc.detail)
				}
			}
			if v.Pass != tc.pass {
				t.Errorf("verdict pass %v, want %v", v.Pass, tc.pass)
			}
		})
	}
}

// TestJobRateIsTheInputTheJobKeptUpWith: through a job the achieved rate
// is the senders' emitted rate less the growth of the job's lag on its
// input (in buckets), not the rate of its output (a window per key).
func TestJobRateIsTheInputTheJobKeptUpWith(t *testing.T) {
	for _, tc := range []struct {
		name string
		lags []int64 // the job's lag, one sample per 100 ms of a 1 s window
		want float64
	}{
		{"kept up", []int64{3, 0, 2, 1, 0, 3, 1, 0, 2, 1, 0}, 100_000},
		{"fell 100 buckets behind in 1 s", []int64{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 90_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := passing()
			o.Job = rundir.JobWindows
			o.Window = [2]int64{0, 1e9}
			o.Senders[0].Emitted, o.Senders[0].DurationS = 1_000_000, 10
			o.Receivers[0].Backlog = nil
			for i, l := range tc.lags {
				o.Receivers[0].Backlog = append(o.Receivers[0].Backlog, tally.BacklogSample{UnixNs: int64(i) * 1e8, JobLag: &l})
			}
			got := WindowRate(o)
			if tc.want == 100_000 && (got < 99_000 || got > 100_000) || tc.want == 90_000 && math.Abs(got-90_000) > 100 {
				t.Errorf("achieved %.0f tuples/s, want %.0f", got, tc.want)
			}
		})
	}
}

// inputSeries is a job's stage series over 1 s, sampled every 100 ms,
// whose input operator (and a copy) took in perSample buckets a sample
// each, beside an operator that is no input.
func inputSeries(perSample uint64) *stage.Series {
	s := &stage.Series{PeriodNs: 1e8}
	in, copy, join := stage.StageSeries{Name: stage.InputOperator}, stage.StageSeries{Name: stage.InputOperator + ".1"}, stage.StageSeries{Name: "join"}
	for i := range 11 {
		s.UnixNs = append(s.UnixNs, int64(i)*1e8)
		s.TSC = append(s.TSC, uint64(i))
		in.Items = append(in.Items, uint64(i)*(perSample/2))
		copy.Items = append(copy.Items, uint64(i)*(perSample-perSample/2))
		join.Items = append(join.Items, uint64(i)*1000)
	}
	s.Stages = []stage.StageSeries{in, copy, join}
	return s
}

// TestTheRateTheJobKept: a job whose lag on its input did not grow but
// whose input operators took in less than offered (its client fetched
// the rest and holds it) achieved what its input took in, and fails the
// system-backlog rule by name once that is short of the offered rate by
// more than the search's precision; one that took in what was offered
// passes, and a job without an input operator is judged by its lag alone.
func TestTheRateTheJobKept(t *testing.T) {
	zero := int64(0)
	for _, tc := range []struct {
		name      string
		perSample uint64 // buckets of 100 tuples an input sample: 100 is the offered 100 k/s
		jobs      int
		achieved  float64
		pass      bool
		records   bool // the series' items are records (a job's metrics)
	}{
		{"took in what was offered", 100, 1, 100_000, true, false},
		{"within the search's precision", 99, 1, 99_000, true, false},
		{"took in 60% of it", 60, 1, 60_000, false, false},
		{"two jobs: the input is not the senders'", 60, 2, 100_000, true, false},
		// a job's metrics count records (tuples), not batches of 100
		{"its metrics: took in 60% of it", 6000, 1, 60_000, false, true},
		{"its metrics: took in what was offered", 10000, 1, 100_000, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := passing()
			o.Job = rundir.JobTuples
			o.Window = [2]int64{0, 1e9}
			o.Senders[0].Emitted, o.Senders[0].DurationS, o.Senders[0].BucketSize = 1_000_000, 10, 100
			o.Receivers[0].Backlog = nil
			for i := range 11 {
				o.Receivers[0].Backlog = append(o.Receivers[0].Backlog, tally.BacklogSample{UnixNs: int64(i) * 1e8, JobLag: &zero})
			}
			for range tc.jobs {
				o.Jobs = append(o.Jobs, &protocol.JobResult{Name: "ysb", StageSeries: inputSeries(tc.perSample), ItemsAreRecords: tc.records})
			}
			if got := WindowRate(o); math.Abs(got-tc.achieved) > 1 {
				t.Errorf("achieved %.0f tuples/s, want %.0f", got, tc.achieved)
			}
			var kept *rundir.Check
			v := Judge(o, Rules{})
			for i, c := range v.Checks {
				if c.Rule == RuleSystemBacklog && strings.Contains(c.Detail, "the job's input took in") {
					kept = &v.Checks[i]
				}
			}
			switch {
			case tc.jobs != 1 && kept != nil:
				t.Errorf("judged by an input that is not the senders': %+v", kept)
			case tc.jobs == 1 && (kept == nil || kept.Pass != tc.pass):
				t.Errorf("kept check %+v, want pass %v", kept, tc.pass)
			case tc.jobs == 1 && !tc.pass && !strings.Contains(kept.Detail, "took in 60.00 k/s of the 100.0 k/s offered"):
				t.Errorf("the detail does not say what was kept: %s", kept.Detail)
			}
		})
	}
}

// TestForgedIdentitiesFailDelivery: a job's output that forged identities
// fails delivery even when the counts add up, and the detail says how
// many.
func TestForgedIdentitiesFailDelivery(t *testing.T) {
	o := passing()
	o.Job = rundir.JobTuples
	o.Receivers[0].Forged = 3
	for _, c := range Judge(o, Rules{}).Checks {
		if c.Rule == RuleDelivery && (c.Pass || !strings.Contains(c.Detail, "3 tuple(s) with an identity never sent")) {
			t.Errorf("delivery: pass %v %q", c.Pass, c.Detail)
		}
	}
}

// TestJobWindowsAreComparedPerKeyAndWindow: with a declared window, each
// campaign's window must hold exactly what it owes; a count moved to the
// next window, or to another key, fails delivery though the sums agree,
// and the detail names the windows; a window written and never owed is a
// difference too; windows the receivers could not tally leave nothing
// compared, and fail.
func TestJobWindowsAreComparedPerKeyAndWindow(t *testing.T) {
	w := func(key string, end int64, n uint64) scenarios.WindowCount {
		return scenarios.WindowCount{WindowKey: scenarios.WindowKey{Key: key, EndMs: end}, Count: n}
	}
	owed := []scenarios.WindowCount{w("campaign-0000", 1000, 5), w("campaign-0001", 1000, 3), w("campaign-0000", 2000, 4)}
	for _, tc := range []struct {
		name       string
		got        []scenarios.WindowCount
		notTallied uint64
		pass       bool
		detail     string
	}{
		{"exact", []scenarios.WindowCount{w("campaign-0001", 1000, 3), w("campaign-0000", 2000, 4), w("campaign-0000", 1000, 5)}, 0, true, "per key and window: all 3 exact"},
		{"one moved to the next window", []scenarios.WindowCount{w("campaign-0000", 1000, 4), w("campaign-0001", 1000, 3), w("campaign-0000", 2000, 5)}, 0, false,
			"per key and window: 2 of 3 differ (campaign-0000's window ending 00:00:01.000 counted 4, owes 5; campaign-0000's window ending 00:00:02.000 counted 5, owes 4)"},
		{"one given to another key", []scenarios.WindowCount{w("campaign-0000", 1000, 4), w("campaign-0001", 1000, 3), w("campaign-0000", 2000, 4), w("campaign-0002", 1000, 1)}, 0, false,
			"2 of 4 differ (campaign-0000's window ending 00:00:01.000 counted 4, owes 5; campaign-0002's window ending 00:00:01.000 counted 1, owes 0)"},
		{"not tallied", owed, 7, false, "not compared, the receivers could tally no more than 65536 windows (7 count(s) beyond)"},
		// keyed by another field: every window differs, and the detail
		// says why (it said "3 of 5 differ" and nothing more)
		{"keyed by another field", []scenarios.WindowCount{w("ad-17", 1000, 8), w("ad-42", 2000, 4)}, 0, false,
			`none of the job's 2 keys is a key the senders sent (the job's: "ad-17", ...; the senders': "campaign-0000", ...): is its output keyed by another field`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := passing()
			o.Job = rundir.JobWindows
			o.Senders[0].Expect, o.Senders[0].Matched = "event_type == view", 12
			o.Senders[0].ExpectWindowMs, o.Senders[0].ExpectedWindows = 1000, owed
			o.Receivers[0].Consumed, o.Receivers[0].WindowCount = 3, 12
			o.Receivers[0].Windows, o.Receivers[0].WindowsNotTallied = tc.got, tc.notTallied
			v := Judge(o, Rules{})
			for _, c := range v.Checks {
				if c.Rule == RuleDelivery && (c.Pass != tc.pass || !strings.Contains(c.Detail, tc.detail)) {
					t.Errorf("delivery: pass %v %q; want pass %v and %q", c.Pass, c.Detail, tc.pass, tc.detail)
				}
				if foreign := strings.Contains(c.Detail, "none of the job's"); c.Rule == RuleDelivery && foreign != strings.Contains(tc.detail, "none of the job's") {
					t.Errorf("delivery %q: says the keys are foreign: %v", c.Detail, foreign)
				}
			}
		})
	}
}

// TestAWindowedJobFallingBehindFails: a windowed job whose windows come
// out later and later (it counts slower than its input, the events
// waiting in its windows, read and acknowledged: its lag stays 0) fails
// the backlog rule once their latency grew by more than a window; a
// latency that moves within a window is the windows' own jitter.
func TestAWindowedJobFallingBehindFails(t *testing.T) {
	for _, tc := range []struct {
		name    string
		perStep time.Duration // the latency's growth per 100 ms sample
		pass    bool
	}{
		{"jitter within a window", 0, true},
		{"800 ms over the window", 40 * time.Millisecond, true},
		{"3 s over the window", 150 * time.Millisecond, false},
	} {
		o := passing()
		o.Job = rundir.JobWindows
		o.Window = [2]int64{0, 2e9}
		o.Senders[0].ExpectWindowMs = 1000
		o.Receivers[0].Backlog = nil
		zero := int64(0)
		for i := 0; i <= 20; i++ {
			lat := 600*time.Millisecond + time.Duration(i)*tc.perStep + time.Duration(i%3)*300*time.Millisecond // a flush's jitter
			o.Receivers[0].Backlog = append(o.Receivers[0].Backlog, tally.BacklogSample{UnixNs: int64(i) * 1e8, LatencyNs: lat.Nanoseconds(), JobLag: &zero})
		}
		for _, c := range Judge(o, Rules{}).Checks {
			if c.Rule == RuleBacklog && (c.Pass != tc.pass || !strings.Contains(c.Detail, "the windows' delay after their end grew")) {
				t.Errorf("%s: backlog pass %v, %q; want pass %v", tc.name, c.Pass, c.Detail, tc.pass)
			}
		}
	}
}

// TestAWindowedJobsLateWindowsCount: the measured window's own windows
// come out after it (a window and a lateness later), in the quiet period;
// a job that counts too slowly shows there, each later than the last.
func TestAWindowedJobsLateWindowsCount(t *testing.T) {
	for _, tc := range []struct {
		name string
		lats []int64 // ms, each window's latency as it came out, 2.5 s apart, after the window
		pass bool
	}{
		{"falling behind", []int64{1861, 3307, 4747}, false},
		{"keeping up", []int64{640, 610, 655, 630}, true},
	} {
		o := passing()
		o.Job = rundir.JobWindows
		o.Window = [2]int64{0, 2e9}
		o.Senders[0].ExpectWindowMs = 1000
		zero := int64(0)
		o.Receivers[0].Backlog = []tally.BacklogSample{{UnixNs: 0, JobLag: &zero}, {UnixNs: 1e9, JobLag: &zero}}
		for i, l := range tc.lats {
			for k := int64(0); k < 5; k++ { // sampled every 100 ms until the next window
				o.Receivers[0].Backlog = append(o.Receivers[0].Backlog, tally.BacklogSample{UnixNs: 2e9 + int64(i)*2500e6 + k*1e8, LatencyNs: l * 1e6, JobLag: &zero})
			}
		}
		for _, c := range Judge(o, Rules{}).Checks {
			if c.Rule == RuleBacklog && c.Pass != tc.pass {
				t.Errorf("%s: backlog pass %v, %q", tc.name, c.Pass, c.Detail)
			}
		}
	}
}

// TestATrialsLastWindowIsNotABacklog: the senders stop mid-window, so a
// trial's last window holds a late latest event and comes out at its end
// and a lateness like the others: its latency from that event (YSB's) is
// up to a window longer, its delay after its end is not. The rule judges
// the delay; a result without it (older runs) falls back on the latency.
func TestATrialsLastWindowIsNotABacklog(t *testing.T) {
	for _, tc := range []struct {
		name       string
		latencies  []int64 // ms, per window as it came out, 1 s apart (a 2 s trial's three)
		delays     []int64 // ms after the window's end; nil: not in the result
		pass       bool
		growthText string
	}{
		{"keeping up, the last window cut short", []int64{560, 550, 1690}, []int64{560, 550, 560}, true, "grew 0 ns"},
		{"the same without the delay", []int64{560, 550, 1690}, nil, false, "grew 1.130 s"},
		{"falling behind", []int64{560, 1250, 1930}, []int64{560, 1250, 1930}, false, "grew 1.370 s"},
	} {
		o := passing()
		o.Job = rundir.JobWindows
		o.Window = [2]int64{0, 2e9}
		o.Senders[0].ExpectWindowMs = 1000
		zero := int64(0)
		o.Receivers[0].Backlog = nil
		for i, l := range tc.latencies {
			for k := int64(0); k < 10; k++ { // sampled every 100 ms until the next window
				s := tally.BacklogSample{UnixNs: 1e9 + int64(i)*1e9 + k*1e8, LatencyNs: l * 1e6, JobLag: &zero}
				if tc.delays != nil {
					d := tc.delays[i] * 1e6
					s.WindowDelayNs = &d
				}
				o.Receivers[0].Backlog = append(o.Receivers[0].Backlog, s)
			}
		}
		for _, c := range Judge(o, Rules{}).Checks {
			if c.Rule == RuleBacklog && (c.Pass != tc.pass || !strings.Contains(c.Detail, tc.growthText)) {
				t.Errorf("%s: backlog pass %v, %q; want pass %v and %q", tc.name, c.Pass, c.Detail, tc.pass, tc.growthText)
			}
		}
	}
}

// TestJobDeliveryJudgesEachIdentity: a map's output whose counts add up
// but whose identities do not fails, naming each difference: one tuple
// dropped and another repeated, ids moved far ahead within a real stream,
// a tuple the declared filter drops, identities beyond the receiver's
// budget. A correct output passes and says that it was checked per
// identity.
func TestJobDeliveryJudgesEachIdentity(t *testing.T) {
	const sent = 50_000
	moved := make([]uint64, 0, 64) // 50 moved 10^8 ahead, then the stream's own highest
	for i := range 50 {
		moved = append(moved, 100_000_000+uint64(49-i)*1000)
	}
	for i := range 14 {
		moved = append(moved, sent-1-uint64(i))
	}
	for _, tc := range []struct {
		name     string
		consumed uint64
		ids      tally.Identities
		pass     bool
		want     []string
	}{
		{"exact", sent, tally.Identities{Distinct: sent, Next: sent, Highest: []uint64{sent - 1}}, true,
			[]string{"50000 tuples consumed: exact", "per identity: each owed tuple once, none invented"}},
		{"one dropped, another repeated", sent - 1, tally.Identities{Distinct: sent - 1, Duplicates: 1, Next: sent, Highest: []uint64{sent - 1}}, false,
			[]string{"1 missing", "1 duplicated (not consumed)"}},
		{"1 in 1,000 moved 10^8 ahead", sent, tally.Identities{Distinct: sent, Next: moved[0] + 1, Highest: moved}, false,
			[]string{"50 missing", "50 with an identity beyond what its sender sent"}},
		{"more moved than the result lists", sent, tally.Identities{Distinct: sent, Next: moved[0] + 1, Highest: moved[:50]}, false,
			[]string{"at least 50 with an identity beyond"}},
		{"a tuple the filter drops", sent, tally.Identities{Distinct: sent, Unowed: 1, Next: sent, Highest: []uint64{sent - 1}}, false,
			[]string{"1 that the declared filter drops"}},
		{"beyond the budget", sent, tally.Identities{Distinct: sent - 7, Unchecked: 7, Next: sent, Highest: []uint64{sent - 1}}, false,
			[]string{"7 not checked", "identity budget of 512 M"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := passing()
			o.Job = rundir.JobTuples
			o.Senders[0].Emitted = sent
			o.Senders[0].Streams = []sendtally.StreamEnd{{Stream: 0, Tuples: sent}}
			o.Receivers[0].Consumed = tc.consumed
			o.Receivers[0].Identities = []tally.Identities{tc.ids}
			for _, c := range Judge(o, Rules{}).Checks {
				if c.Rule != RuleDelivery {
					continue
				}
				if c.Pass != tc.pass {
					t.Errorf("delivery pass %v, want %v: %s", c.Pass, tc.pass, c.Detail)
				}
				for _, w := range tc.want {
					if !strings.Contains(c.Detail, w) {
						t.Errorf("delivery %q lacks %q", c.Detail, w)
					}
				}
			}
		})
	}
}

// TestMalformedOutputFailsDelivery: a windowed job whose counts add up
// but that also wrote windows the receivers could not take (a negative
// count, one no int64 holds) fails delivery, with the reasons named.
func TestMalformedOutputFailsDelivery(t *testing.T) {
	o := passing()
	o.Job = rundir.JobWindows
	o.Receivers[0].WindowCount = o.Senders[0].Emitted
	o.Receivers[0].Malformed, o.Receivers[0].MalformedBy = 5, map[string]uint64{"tuple": 4, "length": 1, "magic": 0}
	for _, c := range Judge(o, Rules{}).Checks {
		if c.Rule == RuleDelivery && (c.Pass || !strings.Contains(c.Detail, "exact; 0 receiver(s) incomplete; 5 malformed message(s) in the job's output, not counted (1 length, 4 tuple)")) {
			t.Errorf("delivery: pass %v %q", c.Pass, c.Detail)
		}
	}
}

// A failed job trial that no operator limited, whose Go runtime's
// collector took a third of the job's CPU, is limited by the collector,
// in the trial and its diagnosis alike (issue 58: GOGC=5 named nothing).
func TestTheGoRuntimesCollectorLimits(t *testing.T) {
	tr := rundir.Trial{Verdict: rundir.Verdict{Pass: false}, Outcome: &rundir.Outcome{Job: "ysb",
		Jobs: []*protocol.JobResult{{Name: "ysb", GoRuntime: &protocol.GoRuntime{CPUSeconds: 3, GCCPUSeconds: 1, GCCycles: 90, GOGC: 5}}}}}
	d := &diagnose.Diagnosis{Limiting: "none"}
	Limit(&tr, d)
	if tr.LimitingStage != limits.GoGC || d.Limiting != limits.GoGC || !strings.Contains(tr.LimitingEvidence, "33% of ysb's CPU") {
		t.Fatalf("limited by %q (%s); diagnosis %q", tr.LimitingStage, tr.LimitingEvidence, d.Limiting)
	}
	// The collector's CPU filled the host: it is still the cause named,
	// the host beside it; without it, the host.
	tr.Hosts = []cpustat.AgentHost{agentHost("sender0", "vm", 0.97, 0, 0.9, cpustat.ThreadShare{Name: "thread0", Cores: 0.4, Runqueue: 0.3})}
	Limit(&tr, &diagnose.Diagnosis{Limiting: "none"})
	if tr.LimitingStage != limits.GoGC || !strings.Contains(tr.LimitingEvidence, "the host's CPUs were full too") {
		t.Fatalf("with a full host: limited by %q (%s)", tr.LimitingStage, tr.LimitingEvidence)
	}
	tr.Outcome.Jobs[0].GoRuntime.GCCPUSeconds = 0.3
	Limit(&tr, &diagnose.Diagnosis{Limiting: "none"})
	if tr.LimitingStage != diagnose.HostCPU {
		t.Fatalf("a collector at 10%% on a full host: limited by %q (%s)", tr.LimitingStage, tr.LimitingEvidence)
	}
}

// TestWrongOutputIsToldFromASlowJob: a trial of a job that failed on its
// output alone, with the job caught up, is wrong output; one whose job had
// not caught up, or with another rule failing, or that passed, is not.
func TestWrongOutputIsToldFromASlowJob(t *testing.T) {
	caught := []*tally.Result{{Reason: tally.ReasonJobCaughtUp + " (lag 0 on its input) and its output was quiet for 1s"}}
	late := []*tally.Result{{Reason: "the job did not catch up within 6s of the senders' end"}}
	check := func(rule string, pass bool) rundir.Check {
		return rundir.Check{Rule: rule, Pass: pass, Detail: rule + " detail"}
	}
	for _, tc := range []struct {
		name      string
		job       string
		receivers []*tally.Result
		checks    []rundir.Check
		wrong     bool
	}{
		{"delivery alone, caught up, nothing arrived", rundir.JobTuples, caught, []rundir.Check{check(RuleSchedule, true), check(RuleDelivery, false), check(RuleSystemBacklog, true)}, true},
		{"delivery alone, caught up, a tuple twice", rundir.JobTuples, []*tally.Result{{Reason: caught[0].Reason, Consumed: 9, Identities: []tally.Identities{{Duplicates: 1}}}}, []rundir.Check{check(RuleDelivery, false)}, true},
		{"delivery alone, caught up, a time rewritten", rundir.JobTuples, []*tally.Result{{Reason: caught[0].Reason, Consumed: 9, Rewritten: 3}}, []rundir.Check{check(RuleDelivery, false)}, true},
		{"delivery alone, caught up, only short (late events dropped)", rundir.JobTuples, []*tally.Result{{Reason: caught[0].Reason, Consumed: 9}}, []rundir.Check{check(RuleDelivery, false)}, false},
		{"delivery and the job's backlog", rundir.JobTuples, caught, []rundir.Check{check(RuleDelivery, false), check(RuleSystemBacklog, false)}, false},
		{"delivery and the senders' lateness", rundir.JobWindows, caught, []rundir.Check{check(RuleDelivery, false), check(RuleLateness, false)}, false},
		{"delivery alone, not caught up", rundir.JobTuples, late, []rundir.Check{check(RuleDelivery, false)}, false},
		{"no job", "", caught, []rundir.Check{check(RuleDelivery, false)}, false},
		{"passed", rundir.JobTuples, caught, []rundir.Check{check(RuleDelivery, true)}, false},
	} {
		o := &rundir.Outcome{Job: tc.job, Receivers: tc.receivers}
		v := rundir.Verdict{Checks: tc.checks, Pass: true}
		for _, c := range tc.checks {
			v.Pass = v.Pass && c.Pass
		}
		if got := WrongOutput(o, v); (got != "") != tc.wrong || tc.wrong && got != "delivery detail" {
			t.Errorf("%s: %q, want wrong %v", tc.name, got, tc.wrong)
		}
	}
}
