package limits

import (
	"math"
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/servicerate"
	"github.com/cloudprofiler-go/cp/stage"
)

func rate(stageName string, kind stage.Kind, method string, v float64, tuples uint64) servicerate.Rate {
	r := servicerate.Rate{Stage: stageName, Kind: kind, Method: method, Tuples: tuples, Status: servicerate.NotConverged}
	if v > 0 {
		r.TuplesPerS, r.Status, r.Converged = &v, servicerate.Converged, true
	}
	return r
}

// The next limit is the smallest pipeline limit: a stage's estimate over
// its share of its kind's traffic; estimates that did not converge never
// count.
func TestNextLimitWeighsShares(t *testing.T) {
	rates := []servicerate.Rate{
		rate("receiver0/lane0", stage.Lane, servicerate.MethodRaftLib, 0, 500),
		rate("receiver0/lane0", stage.Lane, servicerate.MethodBusyTime, 60e3, 500), // half the traffic: limits at 120k
		rate("receiver0/lane1", stage.Lane, servicerate.MethodBusyTime, 70e3, 500),
		rate("receiver0/consumer", stage.Consumer, servicerate.MethodRaftLib, 100e3, 1000),
		rate("receiver0/consumer", stage.Consumer, servicerate.MethodBusyTime, 90e3, 1000),
	}
	n := Next(rates, 80e3, true, Passes{}, 0)
	if n == nil || n.Stage != "receiver0/consumer" || n.Method != servicerate.MethodBusyTime || n.TuplesPerS != 90e3 || n.Other != 100e3 {
		t.Fatalf("next limit %+v, want the consumer's busy_time 90k (raftlib 100k)", n)
	}
	if math.Abs(n.Headroom-0.125) > 1e-9 {
		t.Fatalf("headroom %v, want 0.125 over 80k", n.Headroom)
	}
	if got := NextLine(rundir.Trial{NextLimit: n}); got == "" {
		t.Fatal("no progress line")
	}
	none := []servicerate.Rate{rate("receiver0/consumer", stage.Consumer, servicerate.MethodRaftLib, 0, 10)}
	if n := Next(none, 1e3, true, Passes{}, 0); n != nil {
		t.Fatalf("a limit %+v from estimates that did not converge", n)
	}
	if l := NextLine(rundir.Trial{ServiceRates: none}); l == "" {
		t.Fatal("no line saying nothing converged")
	}
}

// A limit that the trials contradict is never printed as a limit: below a
// rate that passed (busy time once said a lane would limit at 522.8 k/s
// right after a trial passed at 6.875 M/s), or with headroom the failing
// trial itself disproves. It says "inconsistent" with both numbers.
func TestNextLimitContradictedByTheTrials(t *testing.T) {
	rates := []servicerate.Rate{
		rate("receiver0/lane0", stage.Lane, servicerate.MethodBusyTime, 522.8e3, 1000),
		rate("receiver0/lane0", stage.Lane, servicerate.MethodRaftLib, 9.8e6, 1000),
	}
	for _, c := range []struct {
		name        string
		rate        float64
		passed      bool
		highestPass float64
		want        string
	}{
		{"below the passing trial itself", 6.875e6, true, 6.875e6, "passed"},
		{"below an earlier pass", 7e6, false, 6.875e6, "passed"},
		{"at the pass, within the margin", 540e3, true, 540e3, ""},
	} {
		n := Next(rates, c.rate, c.passed, Passes{Repeated: c.highestPass}, 0)
		if (n.Inconsistent == "") != (c.want == "") || !strings.Contains(n.Inconsistent, c.want) {
			t.Errorf("%s: %+v", c.name, n)
		}
		line := NextLine(rundir.Trial{NextLimit: n})
		if c.want != "" && (!strings.Contains(line, "inconsistent") || !strings.Contains(line, "raftlib 9.800 M/s") || strings.Contains(line, "headroom")) {
			t.Errorf("%s: %q", c.name, line)
		}
	}
	up := []servicerate.Rate{rate("receiver0/consumer", stage.Consumer, servicerate.MethodBusyTime, 2e6, 1000)}
	if n := Next(up, 1e6, false, Passes{}, 0); n == nil || !strings.Contains(n.Inconsistent, "failed") {
		t.Errorf("headroom of +100%% in a failing trial: %+v", n)
	}
	// A passing trial's limit far above a rate the pipeline already failed
	// at (the demo: the consumer "at 661.9 M/s" after a failure at 8 M/s)
	// is not the pipeline's next limit; one within the margin of it is.
	fast := []servicerate.Rate{rate("receiver0/consumer", stage.Consumer, servicerate.MethodRaftLib, 661.9e6, 1000),
		rate("receiver0/consumer", stage.Consumer, servicerate.MethodBusyTime, 0, 1000)}
	if n := Next(fast, 7.3e6, true, Passes{Repeated: 7.3e6}, 8e6); n == nil || !strings.Contains(n.Inconsistent, "the pipeline failed at 8.000 M/s") {
		t.Errorf("a limit 80x above a failure: %+v", n)
	}
	near := []servicerate.Rate{rate("receiver0/consumer", stage.Consumer, servicerate.MethodRaftLib, 8.2e6, 1000),
		rate("receiver0/consumer", stage.Consumer, servicerate.MethodBusyTime, 0, 1000)}
	if n := Next(near, 7.3e6, true, Passes{Repeated: 7.3e6}, 8e6); n == nil || n.Inconsistent != "" {
		t.Errorf("a limit within 5%% of the failure: %+v", n)
	}
}

// A failing trial whose host's CPUs were saturated, or whose hot threads
// waited runnable, is limited by the host CPU, not by the thread that was
// late (the demo once said "thread0 late on its own" while the harness's
// threads and libzmq's filled both cores); a saturated consumer with its
// own CPU stays the limit.
func TestHostCPULimit(t *testing.T) {
	host := func(node string, busy float64, threads ...cpustat.ThreadShare) cpustat.AgentHost {
		return cpustat.AgentHost{Node: node, Summary: cpustat.Summary{CPUs: 2, HostBusy: busy, Process: 0.8, Threads: threads}}
	}
	fail := rundir.Verdict{Pass: false}
	for _, c := range []struct {
		name string
		t    rundir.Trial
		want bool
	}{
		{"a victim thread on saturated CPUs", rundir.Trial{Verdict: fail, LimitingStage: "thread0", LimitingEvidence: "late on its own: p99 lateness 5.5ms",
			Hosts: []cpustat.AgentHost{host("sender0", 0.97, cpustat.ThreadShare{Name: "zmq-io", Cores: 0.4}, cpustat.ThreadShare{Name: "thread0", Cores: 0.34, Runqueue: 0.1})}}, true},
		{"no stage, a hot thread held back", rundir.Trial{Verdict: fail, LimitingStage: "none",
			Hosts: []cpustat.AgentHost{host("receiver0", 0.7, cpustat.ThreadShare{Name: "consumer", Cores: 0.2, Runqueue: 0.4})}}, true},
		{"a saturated consumer on a quiet host", rundir.Trial{Verdict: fail, LimitingStage: "consumer", LimitingEvidence: "busy 95%",
			Hosts: []cpustat.AgentHost{host("receiver0", 0.6, cpustat.ThreadShare{Name: "consumer", Cores: 0.95, Runqueue: 0.02})}}, false},
		// The demo's limit: the transport named (the lane idle, the sender
		// blocked), the host 72% busy, libzmq's I/O threads waiting to run
		// a third of the time: the transport did not get the CPU.
		{"a transport whose I/O threads waited to run", rundir.Trial{Verdict: fail, LimitingStage: "stream0", LimitingEvidence: "stream0: lane0 idle 68%, thread0 blocked 8%",
			Hosts: []cpustat.AgentHost{host("receiver0", 0.72, cpustat.ThreadShare{Name: "zmq-io", Cores: 0.23, Runqueue: 0.34}, cpustat.ThreadShare{Name: "lane0", Cores: 0.2, Runqueue: 0.2})}}, true},
		// Which hot thread waited longest is noise when several waited a
		// third of the time: the sender's thread led by a point, its
		// I/O threads waited as long (a demo beside a spinning process).
		{"a transport whose I/O threads waited, another thread a point longer", rundir.Trial{Verdict: fail, LimitingStage: "stream0", LimitingEvidence: "stream0: lane0 idle 57%, thread0 blocked 9%",
			Hosts: []cpustat.AgentHost{host("sender0", 0.86, cpustat.ThreadShare{Name: "thread0", Cores: 0.32, Runqueue: 0.355}, cpustat.ThreadShare{Name: "zmq-io", Cores: 0.18, Runqueue: 0.35})}}, true},
		{"a transport with CPU to spare (a full network)", rundir.Trial{Verdict: fail, LimitingStage: "stream0", LimitingEvidence: "stream0: lane0 idle 90%, thread0 blocked 80%",
			Hosts: []cpustat.AgentHost{host("receiver0", 0.3, cpustat.ThreadShare{Name: "zmq-io", Cores: 0.2, Runqueue: 0.03})}}, false},
		{"a relay, whatever the I/O threads did", rundir.Trial{Verdict: fail, LimitingStage: "sut/stream0", LimitingEvidence: "sut/stream0: queue 24 -> 88, lane0 idle 98%",
			Hosts: []cpustat.AgentHost{host("receiver0", 0.5, cpustat.ThreadShare{Name: "zmq-io", Cores: 0.2, Runqueue: 0.3})}}, false},
		{"a pass", rundir.Trial{Verdict: rundir.Verdict{Pass: true}, Hosts: []cpustat.AgentHost{host("sender0", 0.99)}}, false},
		{"no accounting", rundir.Trial{Verdict: fail, LimitingStage: "none"}, false},
	} {
		why := ""
		if !c.t.Verdict.Pass {
			why = TrialHostCPU(&c.t)
		}
		if (why != "") != c.want {
			t.Errorf("%s: %q", c.name, why)
		}
	}
}

// A rate that passed once and failed when the boundary repeated it was not
// sustained: the highest sustained rate is below it (a consumer-bound
// sweep printed its estimate 47.1 k/s as contradicted by 49.79 k/s, which
// had passed once and failed twice).
func TestHighestPassIsSustained(t *testing.T) {
	pass, fail := rundir.Verdict{Pass: true}, rundir.Verdict{}
	trials := []rundir.Trial{
		{Rate: 45076, Purpose: "candidate", Verdict: pass},
		{Rate: 49791, Purpose: "close", Verdict: pass},
		{Rate: 50687, Purpose: "close", Verdict: fail},
		{Rate: 49791, Purpose: "repeat", Verdict: fail},
		{Rate: 45076, Purpose: "repeat", Verdict: pass},
	}
	if got := HighestPasses(trials); got != (Passes{Repeated: 45076}) {
		t.Fatalf("highest sustained %+v, want 45076 repeated, none once above it", got)
	}
	if got := LowestFail(trials); got != 49791 {
		t.Fatalf("lowest failure %.0f, want 49791", got)
	}
	// The profiled trial ran with the profiler on: its failure below the
	// answer is not the search's evidence.
	trials = append(trials, rundir.Trial{Rate: 40568, Purpose: "profile", Verdict: fail})
	if got := LowestFail(trials); got != 49791 {
		t.Fatalf("lowest failure %.0f with a failed profiled trial, want 49791", got)
	}
}

// A limit printed during the ramp that later trials disprove is marked in
// the results: below a rate that passed later (a lane "at 428.0 k/s" in a
// sweep that answered 479.7 k/s), or above one that failed later.
func TestRecheckLimitsMarksWhatLaterTrialsDisproved(t *testing.T) {
	pass, fail := rundir.Verdict{Pass: true}, rundir.Verdict{}
	limit := func(v float64) *rundir.NextLimit {
		return &rundir.NextLimit{Limit: servicerate.Limit{Stage: "receiver0/lane0", Method: servicerate.MethodBusyTime, TuplesPerS: v}}
	}
	trials := []rundir.Trial{
		{Rate: 400e3, Purpose: "ramp", Verdict: pass, NextLimit: limit(428e3)},
		{Rate: 450e3, Purpose: "ramp", Verdict: pass, NextLimit: limit(2e6)},
		{Rate: 470e3, Purpose: "bisect", Verdict: pass, NextLimit: limit(475e3)},
		{Rate: 479.7e3, Purpose: "close", Verdict: pass, NextLimit: limit(490e3)},
		{Rate: 500e3, Purpose: "close", Verdict: fail},
		{Rate: 479.7e3, Purpose: "repeat", Verdict: pass},
	}
	Recheck(trials)
	for i, want := range []string{"but 479.7 k/s passed (a later trial)", "but the pipeline failed at 500.0 k/s (a later trial)", "", ""} {
		got := trials[i].NextLimit.Inconsistent
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("trial %d: %q, want %q", i, got, want)
		}
	}
}

// A limit under a rate that another trial passed once, and no trial
// repeated, is kept and said to sit under a noisy boundary (a join
// measured at 9.8 k views/s was marked inconsistent because 12 k/s passed
// once); a repeated pass, or the trial's own, contradicts it.
func TestOnePassAboveALimitIsANoisyBoundary(t *testing.T) {
	join := []servicerate.Rate{rate("ysb/join", stage.Operator, servicerate.MethodBusyTime, 9.8e3, 1000)}
	n := Next(join, 9e3, true, Passes{Repeated: 9e3, Once: 12e3}, 0)
	if n == nil || n.Inconsistent != "" || !strings.Contains(n.Noisy, "12.00 k/s passed once above it") {
		t.Fatalf("one pass at 12 k/s: %+v", n)
	}
	if line := NextLine(rundir.Trial{NextLimit: n}); !strings.Contains(line, "next limit: ysb/join at 9.800 k/s") || !strings.Contains(line, "the boundary is noisy") {
		t.Errorf("line %q", line)
	}
	if n := Next(join, 9e3, true, Passes{Repeated: 12e3}, 0); n == nil || !strings.Contains(n.Inconsistent, "but 12.00 k/s passed") || n.Noisy != "" {
		t.Errorf("a repeated pass at 12 k/s: %+v", n)
	}
	if n := Next(join, 12e3, true, Passes{}, 0); n == nil || !strings.Contains(n.Inconsistent, "but 12.00 k/s passed") {
		t.Errorf("the trial's own pass at 12 k/s: %+v", n)
	}
	pass := rundir.Verdict{Pass: true}
	trials := []rundir.Trial{
		{Rate: 9e3, Purpose: "ramp", Verdict: pass, NextLimit: &rundir.NextLimit{Limit: servicerate.Limit{Stage: "ysb/join", Method: servicerate.MethodBusyTime, TuplesPerS: 9.8e3}}},
		{Rate: 9e3, Purpose: "repeat", Verdict: pass},
		{Rate: 12e3, Purpose: "close", Verdict: pass},
	}
	Recheck(trials)
	if l := trials[0].NextLimit; l.Inconsistent != "" || !strings.Contains(l.Noisy, "12.00 k/s passed once") {
		t.Errorf("rechecked: %+v", l)
	}
}

// A failing trial's next limit gives way to the host's CPUs by the rule
// its limiting stage follows: at the demo's limit the transport's backlog
// rate is what libzmq's I/O threads delivered while they waited to run a
// third of the time, not what the transport could do.
func TestHostCPUNextLimit(t *testing.T) {
	starved := []cpustat.AgentHost{{Node: "sender0", Summary: cpustat.Summary{CPUs: 2, HostBusy: 0.72, Process: 0.85,
		Threads: []cpustat.ThreadShare{{Name: "thread0", Cores: 0.47, Runqueue: 0.17}, {Name: "zmq-io", Cores: 0.33, Runqueue: 0.35}}}}}
	quiet := []cpustat.AgentHost{{Node: "receiver0", Summary: cpustat.Summary{CPUs: 2, HostBusy: 0.5, Process: 0.9,
		Threads: []cpustat.ThreadShare{{Name: "lane0", Cores: 0.9, Runqueue: 0.03}}}}}
	for _, c := range []struct {
		name    string
		stage   string
		pass    bool
		hosts   []cpustat.AgentHost
		want    string
		through string
	}{
		{"the transport, its I/O threads waiting to run", "stream0", false, starved, diagnose.HostCPU, "stream0"},
		{"the same at a passing trial", "stream0", true, starved, diagnose.HostCPU, "stream0"},
		{"a relay stays the system under test", "sut/stream0", false, starved, "sut/stream0", ""},
		{"a saturated lane on a quiet host", "receiver0/lane0", false, quiet, "receiver0/lane0", ""},
		{"a lane that waited to run", "sender0/thread0", false, []cpustat.AgentHost{{Node: "sender0", Summary: cpustat.Summary{CPUs: 2, HostBusy: 0.7,
			Threads: []cpustat.ThreadShare{{Name: "thread0", Cores: 0.5, Runqueue: 0.4}}}}}, diagnose.HostCPU, "sender0/thread0"},
	} {
		tr := rundir.Trial{Verdict: rundir.Verdict{Pass: c.pass}, Hosts: c.hosts, NextLimit: &rundir.NextLimit{Limit: servicerate.Limit{Stage: c.stage, Method: servicerate.MethodBacklog, TuplesPerS: 7.6e6}}}
		NextHostCPU(&tr)
		if n := tr.NextLimit; n.Stage != c.want || n.Through != c.through || (c.through != "") != (n.HostEvidence != "" && n.HeldBy != "") {
			t.Errorf("%s: next limit %q through %q (%s), want %q through %q", c.name, n.Stage, n.Through, n.HostEvidence, c.want, c.through)
		}
		if c.through == "stream0" && !c.pass {
			tr.Rate = 7.8e6
			tr.NextLimit.Headroom = -0.03
			const want = "next limit: host CPU at 7.600 M/s (backlog of stream0, held back by the host's CPUs: sender0/zmq-io waited runnable 35% of the time), headroom -3% over this trial's rate"
			if got := NextLine(tr); got != want {
				t.Errorf("line:\n got %s\nwant %s", got, want)
			}
		}
	}
}

// A black box's backlog rate is said in tuples, by the tuples per bucket
// its stream carried, under the diagnosis's name; one that was never
// backlogged says why and gives no number.
func TestBoxServiceRates(t *testing.T) {
	o := &rundir.Outcome{Receivers: []*tally.Result{{Streams: []tally.StreamResult{{Stream: 0, ReceivedTuples: 600000, Buckets: 6000}}}}}
	d := &diagnose.Diagnosis{PeriodNs: 1e8, BoxRates: []diagnose.BoxRate{
		{Stage: "sut/stream0", PerS: 3000, Periods: 20, Total: 20, Share: 1},
		{Stage: "stream1", Why: "never backlogged", Total: 20},
	}}
	rates := boxServiceRates(d, o)
	if len(rates) != 2 {
		t.Fatalf("rates %+v", rates)
	}
	if v, ok := rates[0].Value(); !ok || v != 300000 || rates[0].Kind != stage.SUT || rates[0].Method != servicerate.MethodBacklog {
		t.Fatalf("relay: %+v", rates[0])
	}
	if _, ok := rates[1].Value(); ok || rates[1].Status != servicerate.NotConverged || rates[1].Why == "" {
		t.Fatalf("a box never backlogged: %+v", rates[1])
	}
	if l := servicerate.Limits(rates); len(l) != 1 || l[0].Stage != "sut/stream0" || l[0].TuplesPerS != 300000 {
		t.Fatalf("limits %+v", l)
	}
}

// The answer's limit is the search's trial at the first failing rate, not
// the profiled trial that ran there afterwards with the profiler on (a
// sweep said "limited by: stream0" from its profiled trial while its own
// trials at that rate said host CPU).
func TestAnswerLimitIsTheSearchs(t *testing.T) {
	fail := rundir.Verdict{}
	trials := []rundir.Trial{
		{Rate: 8.144e6, Purpose: "close", Verdict: fail, LimitingStage: diagnose.HostCPU, LimitingEvidence: "host busy 86%"},
		{Rate: 6.24e6, Purpose: "repeat", Verdict: rundir.Verdict{Pass: true}},
		{Rate: 8.144e6, Purpose: "profile", Verdict: fail, LimitingStage: "stream0", LimitingEvidence: "stream0: lane0 idle 57%"},
	}
	if stage, why := Answer(trials, 8.144e6); stage != diagnose.HostCPU || why != "host busy 86%" {
		t.Fatalf("answer limited by %q (%s), want the search's host CPU", stage, why)
	}
}

// TestOperatorsLimitTheJobsInput: a job's operators are in series, so an
// operator's limit is its rate over its share of the job's input (a join
// after a filter that keeps a third limits the input at three times its
// own rate), not over its share of all operators' tuples; copies side by
// side share the input.
func TestOperatorsLimitTheJobsInput(t *testing.T) {
	rate := func(name string, tuples uint64, perS float64) servicerate.Rate {
		return servicerate.Rate{Stage: name, Kind: stage.Operator, Method: servicerate.MethodBusyTime, Tuples: tuples, TuplesPerS: &perS, Status: servicerate.Converged, Converged: true}
	}
	job := &protocol.JobResult{Name: "ysb", Edges: [][2]string{{"filter", "join"}, {"filter.1", "join.1"}, {"join", "window"}, {"join.1", "window"}},
		ServiceRates: []servicerate.Rate{rate("filter", 150, 90e3), rate("filter.1", 150, 90e3), rate("join", 50, 4e3), rate("join.1", 50, 5e3), rate("window", 100, 30e3)}}
	got := map[string]float64{}
	for _, l := range servicerate.Limits(agentRates(&rundir.Outcome{Jobs: []*protocol.JobResult{job}})) {
		got[l.Stage] = l.TuplesPerS
	}
	// input 300: each filter half of it, each join a sixth, the window a third
	want := map[string]float64{"ysb/filter": 180e3, "ysb/filter.1": 180e3, "ysb/join": 24e3, "ysb/join.1": 30e3, "ysb/window": 90e3}
	for s, w := range want {
		if g := got[s]; g < w*0.999 || g > w*1.001 {
			t.Errorf("%s limits the input at %.0f, want %.0f (all: %v)", s, g, w, got)
		}
	}
}

// A thread that two operators share is the next limit, named with them,
// below either operator's own (issue 58).
func TestASharedThreadIsTheNextLimit(t *testing.T) {
	on := func(r servicerate.Rate, share float64) servicerate.Rate {
		r.Thread, r.InputShare = "ysb/pipeline thread 0", share
		return r
	}
	rates := []servicerate.Rate{
		on(rate("ysb/filter", stage.Operator, servicerate.MethodBusyTime, 25e3, 3000), 1),
		on(rate("ysb/join", stage.Operator, servicerate.MethodBusyTime, 8.3e3, 1000), 1.0/3),
	}
	n := Next(rates, 10e3, true, Passes{}, 0)
	want := 1 / (1/25e3 + 1/24.9e3) // 12.47 k events/s
	if n == nil || n.Stage != "ysb/pipeline thread 0" || n.TuplesPerS < want-1 || n.TuplesPerS > want+1 {
		t.Fatalf("next limit %+v; want the thread at %.0f", n, want)
	}
	if line := NextLine(rundir.Trial{NextLimit: n}); !strings.Contains(line, "next limit: ysb/pipeline thread 0 (ysb/filter, ysb/join) at 12.47 k/s") {
		t.Errorf("line %q", line)
	}
}

// Two operators of equal capacity measure a few percent apart: within
// their estimates' own spreads they are a tie, named together (issue 58:
// the window at 3.12 k and the join at 3.29 k views/s, and nothing said
// tie); estimates that know their spreads to be narrower are not.
func TestATieWithinTheEstimatesSpreads(t *testing.T) {
	withErr := func(r servicerate.Rate, e float64) servicerate.Rate { r.Error = e; return r }
	for _, tc := range []struct {
		name     string
		err      float64
		wantTies int
	}{{"±4% each", 0.04, 1}, {"±1% each", 0.01, 0}, {"no spread known", 0, 0}} {
		rates := []servicerate.Rate{
			withErr(rate("ysb/join", stage.Operator, servicerate.MethodBusyTime, 3.29e3, 1000), tc.err),
			withErr(rate("ysb/window", stage.Operator, servicerate.MethodBusyTime, 3.12e3, 1000), tc.err),
		}
		n := Next(rates, 3e3, true, Passes{}, 0)
		if n == nil || n.Stage != "ysb/window" || len(n.Tie) != tc.wantTies {
			t.Fatalf("%s: %+v; want the window with %d tie(s)", tc.name, n, tc.wantTies)
		}
		line := NextLine(rundir.Trial{NextLimit: n})
		if tc.wantTies > 0 && !strings.Contains(line, "next limit: a tie: ysb/window at 6.240 k/s ±4%, ysb/join at 6.580 k/s ±4%") {
			t.Errorf("%s: line %q", tc.name, line)
		}
	}
	a := Agree([]Explanation{{Analysis: "diagnosis", Stage: "ysb/join"}, {Analysis: "service rates", Stage: "ysb/window", Tied: []string{"ysb/join"}}})
	if !a.Agree || !strings.Contains(a.Statement, "agree: join, tied with window by the service rates") {
		t.Errorf("a tie against one of its stages: %s", a.Statement)
	}
}

// A trial's saturated window read a smaller share of the input than
// reached it: it takes the share it had in the latest passing trial
// (issue 58: 0.19 instead of 0.33); an operator whose share did not fall
// keeps its own, as does every operator when no trial passed before.
func TestAFailedTrialKeepsTheSharesOfAPass(t *testing.T) {
	share := func(name string, s float64) servicerate.Rate {
		r := rate(name, stage.Operator, servicerate.MethodBusyTime, 3e3, 1000)
		r.InputShare = s
		return r
	}
	earlier := []rundir.Trial{
		{N: 1, Verdict: rundir.Verdict{Pass: true}, ServiceRates: []servicerate.Rate{share("ysb/join", 0.33), share("ysb/window", 0.33)}},
		{N: 2, Verdict: rundir.Verdict{Pass: false}, ServiceRates: []servicerate.Rate{share("ysb/join", 0.33), share("ysb/window", 0.12)}},
	}
	got := KeptShares([]servicerate.Rate{share("ysb/join", 0.33), share("ysb/window", 0.19)}, earlier)
	if got[0].InputShare != 0.33 || got[0].InputShareTrial != 0 || got[1].InputShare != 0.33 || got[1].InputShareTrial != 1 {
		t.Fatalf("%+v", got)
	}
	if got := KeptShares([]servicerate.Rate{share("ysb/window", 0.19)}, earlier[1:]); got[0].InputShare != 0.19 {
		t.Fatalf("no passing trial before: %+v", got)
	}
}
