package stage

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/tsc"
)

func TestAccountAddsTimePerState(t *testing.T) {
	a := &Account{name: "lane0", kind: Lane}
	a.Start(Waiting, 1000)
	a.Enter(Decoding, 1300) // 300 waiting
	a.Enter(Decoding, 1400) // same state: nothing changes
	a.Enter(Starved, 1500)  // 200 decoding
	a.Enter(Waiting, 2500)  // 1000 blocked
	a.Add(3, 300)
	r := a.Read(2600) // 100 more waiting, up to now
	want := [MaxStates]uint64{Waiting: 400, Decoding: 200, Starved: 1000}
	if r.Ticks != want || r.Items != 3 || r.State != Waiting {
		t.Fatalf("reading %+v, want ticks %v, 3 items, waiting", r, want)
	}
	var nilAcct *Account // accounting off: every call is a no-op
	nilAcct.Start(Waiting, 1)
	nilAcct.Enter(Decoding, 2)
	nilAcct.Add(1, 1)
	nilAcct.SetAux(5)
}

func TestAccountingDoesNotAllocate(t *testing.T) {
	a := &Account{name: "thread0", kind: Sender}
	a.live.Store(newLive(64)) // watched: the ring's writes too
	a.EnablePeriods(5, 40)    // a period closes every bucket or few: the pushes too
	now := uint64(1)
	if n := testing.AllocsPerRun(1000, func() {
		now += 10
		a.Enter(Sending, now)
		a.Close(now)
		a.Add(1, 100)
		a.SetAux(now)
		a.Enter(Pacing, now+5)
	}); n != 0 {
		t.Fatalf("%v allocations per bucket, want 0", n)
	}
}

// A sampler reading while the writer changes state: every state's total
// only grows, and at the end they add up to the time accounted.
func TestConcurrentSamplingIsMonotonic(t *testing.T) {
	clock := tsc.NewClockHz(1e9)
	set := NewSet(clock, MinPeriod)
	a := set.Add("lane0", Lane, func() int64 { return 1 })
	var wg sync.WaitGroup
	wg.Add(1)
	start := tsc.ReadFast()
	go func() {
		defer wg.Done()
		a.Start(Waiting, tsc.ReadFast())
		for i := 0; i < 200000; i++ {
			a.Enter(i%3, tsc.ReadFast())
			a.Add(1, 100)
		}
	}()
	var prev [MaxStates]uint64
	for done := false; !done; {
		set.Sample()
		_, rs := set.Readings()
		for j, v := range rs[0].Ticks {
			if v < prev[j] {
				t.Fatalf("state %d went back: %d after %d", j, v, prev[j])
			}
			prev[j] = v
		}
		ch := make(chan struct{})
		go func() { wg.Wait(); close(ch) }()
		select {
		case <-ch:
			done = true
		case <-time.After(time.Millisecond):
		}
	}
	set.Stop()
	end := tsc.ReadFast()
	// The account's own totals are exact: the time between its first and
	// its last change, and the current state up to now. (The sampler's
	// readings may exceed them: a writer preempted between stamping a
	// change and publishing it leaves a sample counting the old state up
	// to the sample's instant, and readings never go back; 0.8 ms of
	// excess was seen under CI load. The loop above checks that they never
	// go back.) 1% of slack for the vCPUs' TSCs.
	r := a.Read(end)
	var sum uint64
	for _, v := range r.Ticks {
		sum += v
	}
	if el := end - start; r.Items != 200000 || sum == 0 || sum > el+el/100 {
		t.Fatalf("items %d, accounted %d ticks of %d", r.Items, sum, end-start)
	}
	if _, rs := set.Readings(); rs[0].Items != 200000 {
		t.Fatalf("the last sample has %d items", rs[0].Items)
	}
}

func TestSeriesTotalsThinAndResample(t *testing.T) {
	clock := tsc.NewClockHz(1e9)
	set := NewSet(clock, MinPeriod)
	a := set.Add("consumer", Consumer, func() int64 { return 7 })
	set.SetCapacity(a, 256)
	now := tsc.ReadFast()
	a.Start(Idling, now)
	set.Sample()
	a.Enter(Working, tsc.ReadFast())
	a.Add(10, 1000)
	set.Sample()
	late := set.Add("stream3", Network, nil) // joins later
	late.Add(4, 400)
	set.Sample()
	set.Stop()
	set.Sample() // after Stop: ignored
	s := set.Series()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(s.TSC) != 4 || s.Stages[1].From != 2 || s.Stages[0].QueueCap != 256 || !s.Stages[1].NoQueue {
		t.Fatalf("series: %d samples, stream from %d, cap %d", len(s.TSC), s.Stages[1].From, s.Stages[0].QueueCap)
	}
	tot := s.Totals(0, 0)
	if tot[0].Items != 10 || tot[1].Items != 4 || *tot[0].QueueMax != 7 || tot[1].QueueMax != nil {
		t.Fatalf("totals %+v", tot)
	}
	if f := tot[0].Fraction(Busy) + tot[0].Fraction(Idle); f < 0.999 || f > 1.001 {
		t.Fatalf("consumer fractions add to %v", f)
	}
	// Thinning keeps even global samples: 0 and 2 (the stream's first).
	c := s.clone()
	c.thin()
	if err := c.Validate(); err != nil || len(c.TSC) != 2 || c.Stages[1].From != 1 || len(c.Stages[1].Items) != 1 {
		t.Fatalf("thinned: %v, %d samples, stream from %d", err, len(c.TSC), c.Stages[1].From)
	}
	// Resampling at twice the period keeps 0, 2 and the last.
	r := s.clone()
	if err := r.Resample(2 * s.PeriodNs); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(); err != nil || len(r.TSC) != 3 || r.Stages[0].Items[2] != 10 || r.Stages[1].From != 1 {
		t.Fatalf("resampled: %v %+v", err, r)
	}
	if err := s.clone().Resample(s.PeriodNs * 3 / 2); err == nil {
		t.Fatal("resampling to 1.5 periods was accepted")
	}
}

func TestValidateRefusesBrokenSeries(t *testing.T) {
	good := func() *Series {
		return &Series{PeriodNs: 1e8, Hz: 1e9, TSC: []uint64{1, 2}, UnixNs: []int64{1, 2},
			Stages: []StageSeries{{Name: "consumer", Kind: Consumer, States: []string{"idle", "working"},
				StateNs: [][]int64{{0, 5}, {0, 5}}, Items: []uint64{0, 3}, Queue: []int64{0, 1}}}}
	}
	cases := map[string]func(*Series){
		"time goes back":   func(s *Series) { s.TSC[1] = 0 },
		"unknown kind":     func(s *Series) { s.Stages[0].Kind = "gpu" },
		"short items":      func(s *Series) { s.Stages[0].Items = s.Stages[0].Items[:1] },
		"items decrease":   func(s *Series) { s.Stages[0].Items[0] = 9 },
		"state decreases":  func(s *Series) { s.Stages[0].StateNs[1][1] = -1 },
		"queue missing":    func(s *Series) { s.Stages[0].Queue = nil },
		"duplicate stage":  func(s *Series) { s.Stages = append(s.Stages, s.Stages[0]) },
		"zero period":      func(s *Series) { s.PeriodNs = 0 },
		"wrong state list": func(s *Series) { s.Stages[0].States = []string{"idle"} },
	}
	if err := good().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, breakIt := range cases {
		s := good()
		breakIt(s)
		if err := s.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestCheckPeriod(t *testing.T) {
	for d, ok := range map[time.Duration]bool{5 * time.Millisecond: false, MinPeriod: true, time.Second: true, MaxPeriod: true, time.Minute: false} {
		if err := CheckPeriod(d); (err == nil) != ok {
			t.Errorf("CheckPeriod(%v) = %v", d, err)
		}
	}
}

// TestMarkBoundsARecolour: a stage waiting across several timed-out
// receive calls, whose last call finds a message waiting, recolours only
// that call as decoding, not every wait since it began waiting.
func TestMarkBoundsARecolour(t *testing.T) {
	a := &Account{name: "lane0", kind: Lane}
	a.Start(Waiting, 1000)
	a.Mark(1100) // a receive call timed out at 1100
	a.Mark(1200) // and another at 1200
	a.Recolour(Decoding)
	a.Enter(Waiting, 1210) // the message was there: 10 ticks of decoding
	if w, d := a.c.ticks[Waiting], a.c.ticks[Decoding]; w != 200 || d != 10 {
		t.Fatalf("waiting %d, decoding %d ticks; want 200 and 10", w, d)
	}
}

// TestCutKeepsAWindowsDeltas: a trial's part of a long series has the
// window's samples and the one before, every stage (one that joined
// inside or after the window too) valid, with the window's totals.
func TestCutKeepsAWindowsDeltas(t *testing.T) {
	s := &Series{PeriodNs: 100, Hz: 1e9}
	for i := 0; i < 10; i++ {
		s.TSC = append(s.TSC, uint64(1000+100*i))
		s.UnixNs = append(s.UnixNs, int64(1000+100*i))
	}
	mk := func(name string, from int) StageSeries {
		st := StageSeries{Name: name, Kind: Operator, States: []string{"waiting", "busy", "blocked"}, From: from, StateNs: make([][]int64, 3), NoQueue: from%2 == 1}
		for k := from; k < 10; k++ {
			st.StateNs[0] = append(st.StateNs[0], int64(10*k))
			st.StateNs[1] = append(st.StateNs[1], int64(90*k))
			st.StateNs[2] = append(st.StateNs[2], 0)
			st.Items = append(st.Items, uint64(7*k))
			if !st.NoQueue {
				st.Queue = append(st.Queue, int64(k))
			}
		}
		return st
	}
	s.Stages = []StageSeries{mk("always", 0), mk("inside", 5), mk("after", 9)}
	s.Stages[0].Thread = "pipeline thread 0"
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		from, to int64
		samples  int // kept
		froms    [3]int
	}{
		{"middle", 1350, 1750, 5, [3]int{0, 2, 5}},      // samples 3..7: 1300 (before) to 1700
		{"from the start", 0, 1250, 3, [3]int{0, 3, 3}}, // 0..2
		{"to the end", 1800, 9999, 3, [3]int{0, 0, 2}},  // 7..9
		{"empty", 5000, 6000, 1, [3]int{0, 0, 0}},       // the last sample only
	} {
		c := s.Cut(tc.from, tc.to)
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if c.Stages[0].Thread != "pipeline thread 0" {
			t.Errorf("%s: the cut lost the stage's thread (%q)", tc.name, c.Stages[0].Thread)
		}
		if len(c.TSC) != tc.samples || [3]int{c.Stages[0].From, c.Stages[1].From, c.Stages[2].From} != tc.froms {
			t.Errorf("%s: %d samples, froms %d %d %d; want %d, %v", tc.name, len(c.TSC), c.Stages[0].From, c.Stages[1].From, c.Stages[2].From, tc.samples, tc.froms)
		}
		if want, got := s.Totals(c.UnixNs[0], c.UnixNs[len(c.UnixNs)-1]), c.Totals(c.UnixNs[0], c.UnixNs[len(c.UnixNs)-1]); got[0].Items != want[0].Items || got[0].Seconds["busy"] != want[0].Seconds["busy"] {
			t.Errorf("%s: totals %+v, want %+v", tc.name, got[0], want[0])
		}
	}
}

// TestSetThread: a stage's shared thread is in its account and its
// series; a name out of bounds, or a stage of another set, is refused,
// and a series read back with a bad name does not validate.
func TestSetThread(t *testing.T) {
	clock := tsc.NewClockHz(1e9)
	set, other := NewSet(clock, DefaultPeriod), NewSet(clock, DefaultPeriod)
	a := set.Add("filter", Operator, nil)
	for _, bad := range []string{"", strings.Repeat("x", MaxThreadName+1), "tab\there"} {
		if err := set.SetThread(a, bad); err == nil {
			t.Errorf("thread %q accepted", bad)
		}
	}
	if err := other.SetThread(a, "t"); err == nil {
		t.Error("a stage of another set accepted")
	}
	if err := set.SetThread(a, "pipeline thread 0"); err != nil {
		t.Fatal(err)
	}
	s := set.Series()
	if a.Thread() != "pipeline thread 0" || s.Stages[0].Thread != "pipeline thread 0" {
		t.Fatalf("account on %q, series on %q", a.Thread(), s.Stages[0].Thread)
	}
	s.Stages[0].Thread = "new\nline"
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "thread name") {
		t.Errorf("a bad thread name validated: %v", err)
	}
}
