package activity

import (
	"math"
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/rundir"
)

// The loopback demo at its limit: the critical paths run along the
// sender's schedule, and its thread waited for a CPU a third of the
// windows' time. Held off its CPU past its slot, the sender was not
// waiting for the schedule: that part of its path is the host's.
func TestApportionCPUWait(t *testing.T) {
	const ms = int64(1e6)
	window := func(i int, cp ...Share) Result {
		return Result{Window: i, From: int64(i) * 100 * ms, To: int64(i+1) * 100 * ms, HasPath: len(cp) > 0, CP: cp}
	}
	sender, lane := "sender0/thread0", "receiver0/lane0"
	// The sender waited 40% of window 0, 10% of window 1; the samples end
	// 20 ms into window 2 (less than half of it: left as it is).
	waits := []ThreadWait{
		{Worker: sender, AtNs: []int64{0, 100 * ms, 200 * ms, 220 * ms}, WaitS: []float64{1, 1.04, 1.05, 1.06}},
		{Worker: lane, AtNs: []int64{0, 220 * ms}, WaitS: []float64{0, 0}},
	}
	r := &Report{Windows: []Result{
		window(0, Share{sender, "pacing", 0.8}, Share{sender, "send", 0.1}, Share{sender, "message", 0.1}),
		window(1, Share{sender, "pacing", 0.5}, Share{sender, "send", 0.3}, Share{lane, "decode", 0.2}),
		window(2, Share{sender, "send", 1}),
		window(3),
	}}
	r.ApportionCPUWait(waits, 100*ms)
	got := map[[2]string]float64{}
	for _, s := range r.CP {
		got[[2]string{s.Worker, s.Kind}] = s.Value
	}
	// Over the three windows with a path (weights equal): window 0 moves
	// 40% of pacing and send (0.36), window 1 10% (0.08); messages and
	// the lane (which did not wait) keep theirs.
	want := map[[2]string]float64{
		{sender, "cpu-wait"}: (0.36 + 0.08) / 3,
		{sender, "pacing"}:   (0.48 + 0.45) / 3,
		{sender, "send"}:     (0.06 + 0.27 + 1) / 3,
		{sender, "message"}:  0.1 / 3,
		{lane, "decode"}:     0.2 / 3,
	}
	for k, v := range want {
		if math.Abs(got[k]-v) > 1e-9 {
			t.Errorf("%v: %.4f, want %.4f (all: %v)", k, got[k], v, r.CP)
		}
	}
	if len(got) != len(want) {
		t.Errorf("shares %v, want %v", got, want)
	}
	c := r.CPUWait
	if c == nil || c.Windows != 2 || c.PathWindows != 3 || math.Abs(c.Share-0.44/3) > 1e-9 || strings.Join(c.Threads, ",") != lane+","+sender {
		t.Fatalf("note %+v", c)
	}
	// The input's schedule is what is left of pacing; the system's shares
	// are the rest, renormalised.
	if in := (0.48 + 0.45) / 3; math.Abs(r.InputShare-in) > 1e-9 {
		t.Errorf("input share %.4f, want %.4f", r.InputShare, in)
	}
	if top, ok := r.TopSystem(); !ok || top.Kind != "send" {
		t.Errorf("top %+v", top)
	}
	// The window's own shares still add up to one.
	sum := 0.0
	for _, s := range r.Windows[0].CPByKind {
		sum += s.Value
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("window 0 by kind adds up to %v: %v", sum, r.Windows[0].CPByKind)
	}
	before := append([]Share(nil), r.CP...)
	r.ApportionCPUWait(waits, 100*ms)
	for i := range before {
		if r.CP[i] != before[i] {
			t.Fatalf("a second call changed the shares: %v, then %v", before, r.CP)
		}
	}
}

// A sample's Unix time lands on the graph's time through the agent's
// clock pairs; an agent whose pairs are not its clock is refused, not
// misplaced.
func TestRunnableWaitsPlacesSamples(t *testing.T) {
	const hz = 2.5e9
	unix0 := int64(1_795_671_076_000_000_000)
	// The graph's time is the TSC at hz; the TSC read 1e12 at unix0.
	at := func(node string, tsc uint64) (int64, bool) { return int64(float64(tsc) * 1e9 / hz), true }
	pairs := func(n int) ([]uint64, []int64) {
		var tscs []uint64
		var unix []int64
		for i := range n {
			u := int64(i) * 100_000_000
			tscs = append(tscs, uint64(1e12+float64(u)*hz/1e9))
			unix = append(unix, unix0+u+3_000) // read 3 µs apart
		}
		return tscs, unix
	}
	sample := func(ms int64, wait float64) cpustat.Sample {
		return cpustat.Sample{UnixNs: unix0 + ms*1_000_000, Threads: map[string]cpustat.Times{"thread0": {Runqueue: wait}, "zmq-io": {Runqueue: 1}}}
	}
	tscs, unix := pairs(5)
	ok := rundir.AgentSeries{Node: "sender0", PeriodNs: 1e8, TSC: tscs, UnixNs: unix,
		Samples: []cpustat.Sample{sample(50, 0.1), sample(150, 0.12)}}
	bad := ok
	bad.Node = "receiver0"
	bad.TSC = []uint64{5, 5e12} // pairs that are not this clock
	bad.UnixNs = unix[:2]
	waits, period, problems := RunnableWaits([]rundir.AgentSeries{ok, bad}, at, []string{"receiver0/lane0", "sender0/thread0"})
	if len(waits) != 1 || waits[0].Worker != "sender0/thread0" || period != 1e8 {
		t.Fatalf("waits %+v, period %d", waits, period)
	}
	g0 := int64(1e12 * 1e9 / hz)
	for i, want := range []int64{g0 + 50e6 - 3_000, g0 + 150e6 - 3_000} {
		if d := waits[0].AtNs[i] - want; d < -2 || d > 2 {
			t.Errorf("sample %d at %d, want %d", i, waits[0].AtNs[i], want)
		}
	}
	if f, ok := waits[0].share(g0+60e6, g0+140e6); !ok || math.Abs(f-0.2) > 1e-6 {
		t.Errorf("share between the samples %v %v, want 0.2", f, ok)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "receiver0: its host samples cannot be placed") {
		t.Fatalf("problems %q", problems)
	}
}

// Samples from a run directory are untrusted: whatever times and waits
// they carry, placing and apportioning them never panics, keeps every
// share within [0, 1] and each window's shares adding up to what they
// did.
func FuzzApportionCPUWait(f *testing.F) {
	f.Add([]byte{0, 10, 1, 20, 2, 30, 3, 40}, uint8(3), int64(100))
	f.Add([]byte{255, 0, 0, 255, 7, 7}, uint8(1), int64(-5))
	f.Add([]byte{}, uint8(0), int64(0))
	f.Fuzz(func(t *testing.T, raw []byte, pairs uint8, skew int64) {
		const unix0 = int64(1_795_671_076_000_000_000)
		a := rundir.AgentSeries{Node: "sender0", PeriodNs: 1e8}
		for i := range int(pairs % 16) {
			a.TSC = append(a.TSC, uint64(i)*250_000_000+uint64(skew&0xffff))
			a.UnixNs = append(a.UnixNs, unix0+int64(i)*100_000_000+skew)
		}
		for i := 0; i+1 < len(raw); i += 2 {
			a.Samples = append(a.Samples, cpustat.Sample{UnixNs: unix0 + int64(raw[i])*5_000_000,
				Threads: map[string]cpustat.Times{"thread0": {Runqueue: float64(raw[i+1]) / 100}}})
		}
		at := func(node string, tsc uint64) (int64, bool) { return int64(tsc / 2), tsc < 1<<40 }
		waits, _, _ := RunnableWaits([]rundir.AgentSeries{a}, at, []string{"sender0/thread0"})
		r := &Report{}
		for i := range 5 {
			from := int64(i) * 100_000_000
			r.Windows = append(r.Windows, Result{Window: i, From: from, To: from + 100_000_000, HasPath: true,
				CP: []Share{{"sender0/thread0", "pacing", 0.5}, {"sender0/thread0", "send", 0.3}, {"sender0/thread0", "message", 0.2}}})
		}
		r.ApportionCPUWait(waits, 1e8)
		for _, w := range r.Windows {
			sum := 0.0
			for _, s := range w.CP {
				if s.Value < 0 || s.Value > 1 || math.IsNaN(s.Value) {
					t.Fatalf("window %d share %+v", w.Window, s)
				}
				sum += s.Value
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Fatalf("window %d adds up to %v: %+v", w.Window, sum, w.CP)
			}
		}
	})
}
