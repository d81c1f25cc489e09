package activity

import (
	"cmp"
	"math"
	"reflect"
	"slices"
	"testing"
)

// feed streams a whole trace into s the way the run-directory reader
// does: transfers in order of receipt (the join's order), the floor at
// the earliest send still to come, each worker's activities up to the
// latest receipt, progress as it comes. It returns the most activities
// and transfers the builder held at once.
func feed(t *testing.T, s *Stream, tr *Trace) (maxActs, maxXfers int) {
	t.Helper()
	xs := slices.Clone(tr.Transfers)
	slices.SortStableFunc(xs, func(a, b Transfer) int { return cmp.Compare(a.RecvNs, b.RecvNs) })
	floor := make([]int64, len(xs)+1) // the earliest send from i on
	floor[len(xs)] = math.MaxInt64
	for i := len(xs) - 1; i >= 0; i-- {
		floor[i] = min(floor[i+1], xs[i].SentNs)
	}
	next := make([]int, len(tr.Workers))
	extend := func(to int64) {
		for wk, acts := range tr.Activities {
			for next[wk] < len(acts) && s.LastEnd(wk) < to {
				if err := s.Activity(wk, acts[next[wk]]); err != nil {
					t.Fatal(err)
				}
				next[wk]++
			}
		}
	}
	var pi int
	for i, x := range xs {
		extend(x.RecvNs)
		if err := s.Transfer(x); err != nil {
			t.Fatal(err)
		}
		for pw := s.check.l.ProgressWorker; pw >= 0 && pw < len(tr.Progress) && pi < len(tr.Progress[pw]) && tr.Progress[pw][pi] <= x.RecvNs; pi++ {
			s.Progress(pw, tr.Progress[pw][pi])
		}
		s.Floor(floor[i+1], floor[i+1])
		held := 0
		for _, a := range s.b.acts {
			held += len(a)
		}
		maxActs, maxXfers = max(maxActs, held), max(maxXfers, s.b.queue.Len()+len(s.b.open))
	}
	extend(math.MaxInt64)
	for wk := range tr.Workers {
		s.Finish(wk)
	}
	if pw := s.check.l.ProgressWorker; pw >= 0 && pw < len(tr.Progress) {
		for ; pi < len(tr.Progress[pw]); pi++ {
			s.Progress(pw, tr.Progress[pw][pi])
		}
	}
	return maxActs, maxXfers
}

// A streamed trace gets exactly the report of the whole one, in memory
// that does not grow with the trace.
func TestStreamEqualsWholeTrace(t *testing.T) {
	opt := Options{WindowNs: 100_000, WaitNs: DefaultWaitNs, MessageDelayNs: 1_500}
	lim := Limits{ProgressWorker: 2, ProgressMaxNs: 2_000, MessageMaxNs: 2_000, OperatorMaxNs: 700, EveryWindow: true}
	held := map[int][2]int{}
	for _, n := range []int{2_000, 20_000} {
		tr := pipelineTrace(n, 3)
		// Progress from the consumer's items, a stall, and ambiguous messages.
		tr.Progress = [][]int64{nil, nil, nil}
		for _, a := range tr.Activities[2] {
			if a.Kind == Consume {
				tr.Progress[2] = append(tr.Progress[2], a.EndNs)
			}
		}
		for i := range tr.Transfers {
			if i%97 == 0 {
				tr.Transfers[i].ErrNs = tr.Transfers[i].RecvNs - tr.Transfers[i].SentNs + 1
			}
		}
		whole, err := analyzeWhole(tr, opt, DefaultHops, lim)
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewStream(tr.Workers, opt, DefaultHops, lim)
		if err != nil {
			t.Fatal(err)
		}
		a, x := feed(t, s, tr)
		held[n] = [2]int{a, x}
		streamed := s.Close()
		for _, r := range []*Report{whole, streamed} {
			r.Elapsed, r.EventsPerSec, r.GraphSeconds = 0, 0, 0
		}
		if len(whole.Windows) < 10 || len(whole.Violations) == 0 || whole.Ambiguous == 0 {
			t.Fatalf("the trace tests too little: %d windows, %d violations, %d ambiguous", len(whole.Windows), len(whole.Violations), whole.Ambiguous)
		}
		if streamed.Late != 0 {
			t.Fatalf("%d transfers late", streamed.Late)
		}
		if !reflect.DeepEqual(whole, streamed) {
			for i := range min(len(whole.Windows), len(streamed.Windows)) {
				if !reflect.DeepEqual(whole.Windows[i], streamed.Windows[i]) {
					t.Fatalf("window %d differs:\nwhole    %+v\nstreamed %+v", i, whole.Windows[i], streamed.Windows[i])
				}
			}
			for i := range min(len(whole.Violations), len(streamed.Violations)) {
				if whole.Violations[i] != streamed.Violations[i] {
					t.Fatalf("violation %d of %d/%d differs:\nwhole    %+v\nstreamed %+v", i, len(whole.Violations), len(streamed.Violations), whole.Violations[i], streamed.Violations[i])
				}
			}
			whole.Windows, streamed.Windows, whole.Violations, streamed.Violations = nil, nil, nil, nil
			t.Fatalf("reports differ: %d/%d violations\nwhole    %+v\nstreamed %+v", len(whole.Violations), len(streamed.Violations), whole, streamed)
		}
	}
	// Ten times the trace, the same memory: what a window and the messages
	// in flight need (here a few hundred activities and transfers).
	if small, big := held[2_000], held[20_000]; big[0] > 2*small[0]+64 || big[1] > 2*small[1]+64 {
		t.Errorf("held %v for 2 k buckets, %v for 20 k: memory grows with the trace", small, big)
	}
	t.Logf("held at most (activities, transfers): %v for 2 k buckets, %v for 20 k", held[2_000], held[20_000])
}

// A trace without messages (a --drain run): progress is the consumer's
// busy activities, and the streamed report is the whole trace's.
func TestStreamWithoutMessages(t *testing.T) {
	tr := pipelineTrace(5_000, 5)
	tr.Transfers = nil
	opt := Options{WindowNs: 50_000, WaitNs: DefaultWaitNs}
	lim := Limits{ProgressWorker: 2, ProgressMaxNs: 1_500, EveryWindow: true}
	whole, err := analyzeWhole(tr, opt, 0, lim)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewStream(tr.Workers, opt, 0, lim)
	if err != nil {
		t.Fatal(err)
	}
	s.Floor(math.MaxInt64, math.MaxInt64) // no message will come
	feed(t, s, tr)
	streamed := s.Close()
	whole.Elapsed, whole.EventsPerSec, streamed.Elapsed, streamed.EventsPerSec = 0, 0, 0, 0
	whole.GraphSeconds, streamed.GraphSeconds = 0, 0
	if len(whole.Violations) == 0 || !reflect.DeepEqual(whole, streamed) {
		t.Fatalf("violations: whole %d, streamed %d; reports equal: %v", len(whole.Violations), len(streamed.Violations), reflect.DeepEqual(whole, streamed))
	}
}

// A transfer that comes after its window was built is counted, never
// placed in a later window.
func TestLateTransferCounted(t *testing.T) {
	s, err := NewStream([]string{"s", "c"}, Options{WindowNs: 100, WaitNs: DefaultWaitNs}, 0, Limits{ProgressWorker: -1})
	if err != nil {
		t.Fatal(err)
	}
	for wk, k := range []Kind{Send, Consume} {
		if err := s.Activity(wk, Activity{k, 0, 500, 1}); err != nil {
			t.Fatal(err)
		}
	}
	s.Floor(300, 300) // windows [0,100), [100,200), [200,300) are built
	if err := s.Transfer(Transfer{From: 0, To: 1, SentNs: 150, RecvNs: 160}); err != nil {
		t.Fatal(err)
	}
	if err := s.Transfer(Transfer{From: 0, To: 1, SentNs: 350, RecvNs: 360}); err != nil {
		t.Fatal(err)
	}
	if err := s.Transfer(Transfer{From: 0, To: 5}); err == nil {
		t.Error("a transfer to no worker accepted")
	}
	rep := s.Close()
	if rep.Late != 1 || len(rep.Windows) != 5 {
		t.Fatalf("late %d, windows %d: want 1 and 5", rep.Late, len(rep.Windows))
	}
	if m := rep.Windows[1].Metrics; slices.ContainsFunc(m, func(x Metric) bool { return x.Kind == "message" }) {
		t.Errorf("the late transfer is in window 1: %+v", m)
	}
	if m := rep.Windows[3].Metrics; !slices.ContainsFunc(m, func(x Metric) bool { return x.Kind == "message" }) {
		t.Errorf("the transfer in time is not in window 3: %+v", m)
	}
}

// analyzeWhole analyses a whole trace at once (the reference the
// streaming analysis is checked against): every window's graph, its critical
// participation, metrics, k-hops (k > 0) and the invariants in l.
func analyzeWhole(tr *Trace, opt Options, k int, l Limits) (*Report, error) {
	b, err := NewBuilder(tr, opt)
	if err != nil {
		return nil, err
	}
	s := newStream(tr.Workers, b, opt, k, l)
	for _, x := range tr.Transfers {
		s.check.transfer(x)
	}
	for wk, acts := range tr.Activities {
		for _, a := range acts {
			s.check.activity(wk, a)
		}
		s.rep.Events += len(acts)
	}
	s.rep.Events += len(tr.Transfers)
	if l.ProgressWorker >= 0 && l.ProgressWorker < len(tr.Progress) {
		for _, t := range tr.Progress[l.ProgressWorker] {
			s.check.points.add(t)
		}
	}
	return s.Close(), nil
}
