package activity

import (
	"math"
	"reflect"
	"testing"
)

// threeStages is a hand-built trace of a sender, a lane and a consumer
// over [0, 100) ns:
//
//	sender   send 0-10 | pacing 10-50 | send 50-60 | pacing 60-100
//	lane     recv-wait 0-20 | decode 20-30 | recv-wait 30-70 | decode 70-80 | recv-wait 80-100
//	consumer consume 0-5 | idle 5-35 | consume 35-55 | idle 55-85 | consume 85-100
//
// with buckets sender→lane 10→20 and 60→70, lane→consumer 30→35 and 80→85.
func threeStages(err int64) *Trace {
	return &Trace{
		Workers: []string{"s", "l", "c"},
		Activities: [][]Activity{
			{{Send, 0, 10, 1}, {Pacing, 10, 50, 0}, {Send, 50, 60, 1}, {Pacing, 60, 100, 0}},
			{{RecvWait, 0, 20, 0}, {Decode, 20, 30, 1}, {RecvWait, 30, 70, 0}, {Decode, 70, 80, 1}, {RecvWait, 80, 100, 0}},
			{{Consume, 0, 5, 10}, {Idle, 5, 35, 0}, {Consume, 35, 55, 10}, {Idle, 55, 85, 0}, {Consume, 85, 100, 10}},
		},
		Transfers: []Transfer{
			{From: 0, To: 1, SentNs: 10, RecvNs: 20, ErrNs: err, Tuples: 10},
			{From: 0, To: 1, SentNs: 60, RecvNs: 70, ErrNs: err, Tuples: 10},
			{From: 1, To: 2, SentNs: 30, RecvNs: 35, Tuples: 10},
			{From: 1, To: 2, SentNs: 80, RecvNs: 85, Tuples: 10},
		},
	}
}

func windows(t *testing.T, tr *Trace, opt Options) []Window {
	t.Helper()
	b, err := NewBuilder(tr, opt)
	if err != nil {
		t.Fatal(err)
	}
	var out []Window
	for {
		var w Window
		if !b.Next(&w) {
			return out
		}
		out = append(out, w)
	}
}

func cpOf(w Window, src int, kind Kind, start int64) float64 {
	for _, e := range w.Edges {
		if e.Src == src && e.Kind == kind && e.StartNs == start {
			return e.CP
		}
	}
	return math.NaN()
}

// TestClipOnlyWhereTheReceiverWasBusy: a message longer than the message
// delay is clipped when its receiver was busy at the clip point (it sat
// in a queue behind the receiver's work), and not when the receiver
// waited for input at least half of the time from there until it came (it
// was on its way behind others, in a relay, a broker or the transport,
// which held the receiver up). A receiver that waited at the clip point
// but worked most of the way had it queued behind its own work.
func TestClipOnlyWhereTheReceiverWasBusy(t *testing.T) {
	b, err := NewBuilder(threeStages(0), Options{WindowNs: 100, WaitNs: DefaultWaitNs, MessageDelayNs: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		x    Transfer
		want int64
	}{
		{"the lane waited for it (recv-wait 0-20)", Transfer{From: 0, To: 1, SentNs: 10, RecvNs: 20}, 20},
		{"the lane was decoding (20-30)", Transfer{From: 0, To: 1, SentNs: 15, RecvNs: 28}, 20},
		{"the consumer waited until it came (idle 5-35)", Transfer{From: 1, To: 2, SentNs: 0, RecvNs: 35}, 35},
		{"the consumer waited most of the way (idle 5-35 of 5-40)", Transfer{From: 1, To: 2, SentNs: 0, RecvNs: 40}, 40},
		{"the consumer waited at the clip point, then mostly worked (idle 30-35, consume 35-55)", Transfer{From: 1, To: 2, SentNs: 25, RecvNs: 55}, 30},
		{"the lane waited at the clip point, then decoded others (recv-wait 19-20, decode 20-30)", Transfer{From: 0, To: 1, SentNs: 14, RecvNs: 30}, 19},
		{"the lane waited half the way (recv-wait 15-20 and 30-35, decode 20-30)", Transfer{From: 0, To: 1, SentNs: 10, RecvNs: 35}, 35},
		{"between two operators of a job, always", Transfer{From: 1, To: 2, SentNs: 0, RecvNs: 35, Internal: true}, 5},
		{"the consumer was consuming (35-55)", Transfer{From: 1, To: 2, SentNs: 32, RecvNs: 50}, 37},
		{"shorter than the delay", Transfer{From: 0, To: 1, SentNs: 60, RecvNs: 64}, 64},
	} {
		if got := b.clip(tc.x).RecvNs; got != tc.want {
			t.Errorf("%s: received at %d, want %d", tc.name, got, tc.want)
		}
	}
}

// The critical participation of every edge, computed by hand. Paths from
// the window's start to its end avoid waiting edges: (1) along the sender
// (send, pacing, send, pacing) and (2) the sender to 60, its bucket to the
// lane (60→70), decode, the bucket to the consumer (80→85), consume to the
// end. The first buckets lead only to the consumer's idle 55-85: a dead
// end. N = 2. CP(e) = F(src)·B(dst)/N × duration/T: send 0-10 is on both
// paths, 1 × 10/100; pacing 60-100 on one, ½ × 40/100; and so on.
func TestCriticalParticipationByHand(t *testing.T) {
	ws := windows(t, threeStages(0), Options{WindowNs: 100, WaitNs: DefaultWaitNs})
	if len(ws) != 1 {
		t.Fatalf("%d windows, want 1", len(ws))
	}
	w := ws[0]
	if got := math.Exp(w.Paths); math.Abs(got-2) > 1e-9 {
		t.Fatalf("%.6f paths, want 2", got)
	}
	for _, c := range []struct {
		src   int
		kind  Kind
		start int64
		want  float64
	}{
		{0, Send, 0, 0.10}, {0, Pacing, 10, 0.40}, {0, Send, 50, 0.10}, {0, Pacing, 60, 0.20},
		{0, Message, 60, 0.05}, {1, Decode, 70, 0.05}, {1, Message, 80, 0.025}, {2, Consume, 85, 0.075},
		{0, Message, 10, 0}, {1, Decode, 20, 0}, {1, Message, 30, 0}, {2, Consume, 35, 0}, {2, Consume, 0, 0},
		{1, RecvWait, 0, 0}, {2, Idle, 55, 0},
	} {
		if got := cpOf(w, c.src, c.kind, c.start); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("CP of %s %s at %d = %v, want %v", []string{"s", "l", "c"}[c.src], c.kind, c.start, got, c.want)
		}
	}
	r := Summarize(threeStages(0), &w)
	sum := 0.0
	for _, s := range r.CPByKind {
		sum += s.Value
	}
	wantByKind := []Share{{Kind: "pacing", Value: 0.6}, {Kind: "send", Value: 0.2}, {Kind: "consume", Value: 0.075},
		{Kind: "message", Value: 0.075}, {Kind: "decode", Value: 0.05}}
	if math.Abs(sum-1) > 1e-12 || len(r.CPByKind) != len(wantByKind) {
		t.Fatalf("CP by kind %+v (sum %v), want %+v adding up to 1", r.CPByKind, sum, wantByKind)
	}
	for i, s := range wantByKind { // largest first; equal shares in either order
		got := r.CPByKind[i]
		if math.Abs(got.Value-s.Value) > 1e-12 {
			t.Errorf("CP by kind %d = %+v, want %+v", i, got, s)
		}
		for _, g := range r.CPByKind {
			if g.Kind == s.Kind && math.Abs(g.Value-s.Value) > 1e-12 {
				t.Errorf("CP of %s = %v, want %v", s.Kind, g.Value, s.Value)
			}
		}
	}
	// Metrics: the lane waited three times, 20 + 40 + 20 ns, and decoded
	// two buckets in 20 ns.
	for _, m := range r.Metrics {
		if m.Worker == "l" && m.Kind == "recv-wait" && (m.Count != 3 || m.TotalNs != 80 || !m.Waiting) {
			t.Errorf("lane recv-wait %+v, want 3 in 80 ns, waiting", m)
		}
		if m.Worker == "l" && m.Kind == "decode" && (m.Count != 2 || m.TotalNs != 20 || m.Items != 2 || m.Waiting) {
			t.Errorf("lane decode %+v, want 2 in 20 ns, 2 items, busy", m)
		}
	}
}

// Two windows of 50: the consumer's consume 35-55 is split at 50, not
// dropped, and each window's CP still adds up to 1 (or 0 without a path).
func TestWindowsSplitEdges(t *testing.T) {
	tr := threeStages(0)
	ws := windows(t, tr, Options{WindowNs: 50, WaitNs: DefaultWaitNs})
	if len(ws) != 2 || ws[1].StartNs != 50 || ws[1].EndNs != 100 {
		t.Fatalf("windows %+v, want [0,50) and [50,100)", ws)
	}
	var pieces [][2]int64
	for _, w := range ws {
		for _, e := range w.Edges {
			if e.Src == 2 && e.Kind == Consume && e.StartNs < 55 && e.EndNs > 35 {
				pieces = append(pieces, [2]int64{e.StartNs, e.EndNs})
			}
		}
		r := Summarize(tr, &w)
		sum := 0.0
		for _, s := range r.CP {
			sum += s.Value
		}
		if r.HasPath && math.Abs(sum-1) > 1e-12 || !r.HasPath && sum != 0 {
			t.Errorf("window %d: CP adds up to %v (has a path: %v)", w.Index, sum, r.HasPath)
		}
	}
	if !reflect.DeepEqual(pieces, [][2]int64{{35, 50}, {50, 55}}) {
		t.Errorf("consume 35-55 in pieces %v, want 35-50 and 50-55", pieces)
	}
	// The second window: the sender's path 50-100 and, through the lane,
	// to the consumer's last consume: 2 paths again.
	if got := math.Exp(ws[1].Paths); math.Abs(got-2) > 1e-9 {
		t.Errorf("second window: %.6f paths, want 2", got)
	}
}

// A cross-node bucket whose receive may have come before its send within
// the clock's error bound is marked ambiguous and never traversed: the
// path through it is gone.
func TestAmbiguousMessagesAreMarked(t *testing.T) {
	tr := threeStages(11) // 10 ns apart, ±11: the receive may have come first
	w := windows(t, tr, Options{WindowNs: 100, WaitNs: DefaultWaitNs})[0]
	r := Summarize(tr, &w)
	if r.Ambiguous != 2 {
		t.Fatalf("%d ambiguous messages, want 2", r.Ambiguous)
	}
	for _, e := range w.Edges {
		if e.Kind == Message && e.Src == 0 && (!e.Ambiguous || e.CP != 0) {
			t.Errorf("sender's bucket %+v: want ambiguous, CP 0", e)
		}
	}
	if got := math.Exp(w.Paths); math.Abs(got-1) > 1e-9 { // only along the sender
		t.Errorf("%.6f paths, want 1", got)
	}
	tr10 := threeStages(10) // at worst simultaneous: never reversed
	w10 := windows(t, tr10, Options{WindowNs: 100, WaitNs: DefaultWaitNs})[0]
	if r10 := Summarize(tr10, &w10); r10.Ambiguous != 0 || math.Abs(math.Exp(w10.Paths)-2) > 1e-9 {
		t.Errorf("10 ns apart with ±10 ns: %d ambiguous, %.3f paths; want 0 and 2 (ordered)", r10.Ambiguous, math.Exp(w10.Paths))
	}
}

// A gap between two logged activities is waiting above the threshold and
// busy below it.
func TestGapsClassified(t *testing.T) {
	tr := &Trace{Workers: []string{"c"}, Activities: [][]Activity{{
		{Consume, 0, 10, 1}, {Consume, 20, 30, 1}, {Consume, 50, 100, 1}}}}
	w := windows(t, tr, Options{WindowNs: 100, WaitNs: 15})[0]
	var gaps []Edge
	for _, e := range w.Edges {
		if e.Kind == Gap {
			gaps = append(gaps, e)
		}
	}
	if len(gaps) != 2 || gaps[0].Waiting || !gaps[1].Waiting || gaps[0].Duration() != 10 || gaps[1].Duration() != 20 {
		t.Fatalf("gaps %+v: want 10 ns busy, then 20 ns waiting", gaps)
	}
	if !math.IsInf(w.Paths, -1) {
		t.Errorf("a waiting gap cuts the only worker's path: want no path, got %v", math.Exp(w.Paths))
	}
}

// k-hops from every waiting edge of the hand-built trace, counted by hand:
// hop 1 is the four buckets that ended a wait, hop 2 what produced them
// (two sends, two decodes), hop 3 what led to those (the pacing before
// the second send; the lane's waits and buckets before its decodes).
func TestKHopsByHand(t *testing.T) {
	tr := threeStages(0)
	w := windows(t, tr, Options{WindowNs: 100, WaitNs: DefaultWaitNs})[0]
	got := KHops(tr, &w, 3)
	want := []Hop{
		{1, "s", "message", 2, 20}, {1, "l", "message", 2, 10},
		{2, "l", "decode", 2, 20}, {2, "s", "send", 2, 20},
		{3, "l", "recv-wait", 2, 60}, {3, "s", "pacing", 1, 40}, {3, "s", "message", 2, 20},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("k-hops\n got %+v\nwant %+v", got, want)
	}
	if KHops(tr, &w, 0) != nil {
		t.Error("k = 0 walks nothing")
	}
}

func TestInvariants(t *testing.T) {
	for _, c := range []struct {
		name string
		err  int64
		lim  Limits
		want []Violation
	}{
		{"messages over 6 ns", 0, Limits{MessageMaxNs: 6, ProgressWorker: -1}, []Violation{
			{Invariant: "message-max", Worker: "s -> l", FromNs: 10, ToNs: 20, ValueNs: 10, LimitNs: 6},
			{Invariant: "message-max", Worker: "s -> l", FromNs: 60, ToNs: 70, ValueNs: 10, LimitNs: 6}}},
		// 10 ± 5 ns: the lower bound, 5, is within 6: no alarm from the clocks' error.
		{"the lower bound decides", 5, Limits{MessageMaxNs: 6, ProgressWorker: -1}, nil},
		{"one consume over 12 ns", 0, Limits{OperatorMaxNs: 12, ProgressWorker: -1}, []Violation{
			{Invariant: "operator-max", Worker: "c", FromNs: 35, ToNs: 55, ValueNs: 20, LimitNs: 12},
			{Invariant: "operator-max", Worker: "c", FromNs: 85, ToNs: 100, ValueNs: 15, LimitNs: 12}}},
		// From the first bucket sent (10), not the trace's start: the
		// consumer has nothing to progress on before it.
		{"progress every 25 ns", 0, Limits{ProgressMaxNs: 25, ProgressWorker: 2}, []Violation{
			{Invariant: "progress-max", Worker: "c", FromNs: 10, ToNs: 55, ValueNs: 45, LimitNs: 25},
			{Invariant: "progress-max", Worker: "c", FromNs: 55, ToNs: 100, ValueNs: 45, LimitNs: 25}}},
		{"progress in every window of 30 ns", 0, Limits{ProgressWorker: 2, EveryWindow: true, WindowNs: 30}, []Violation{
			{Invariant: "progress-per-window", Worker: "c", FromNs: 60, ToNs: 90, LimitNs: 30}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			win := c.lim.WindowNs
			if win == 0 {
				win = 100
			}
			rep, err := analyzeWhole(threeStages(c.err), Options{WindowNs: win, WaitNs: DefaultWaitNs}, 0, c.lim)
			if err != nil {
				t.Fatal(err)
			}
			got := rep.Violations
			if len(got) == 0 {
				got = nil
			}
			for i := range got {
				got[i].Detail = ""
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("violations\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestBadTracesRefused(t *testing.T) {
	for _, tr := range []*Trace{
		{Workers: []string{"a"}},
		{Workers: []string{"a"}, Activities: [][]Activity{{{Send, 10, 5, 0}}}},
		{Workers: []string{"a"}, Activities: [][]Activity{{{Send, 0, 10, 0}, {Send, 5, 20, 0}}}},
		{Workers: []string{"a"}, Activities: [][]Activity{{{Gap, 0, 10, 0}}}},
		{Workers: []string{"a"}, Activities: [][]Activity{{}}, Transfers: []Transfer{{From: 0, To: 3}}},
		{Workers: []string{"a"}, Activities: [][]Activity{{}}, Transfers: []Transfer{{From: 0, To: 0, ErrNs: -1}}},
	} {
		if _, err := NewBuilder(tr, Options{WindowNs: 10}); err == nil {
			t.Errorf("trace %+v accepted", tr)
		}
	}
	if _, err := NewBuilder(threeStages(0), Options{}); err == nil {
		t.Error("a window of 0 accepted")
	}
}

// A path runs from the window's start to its end: a worker that begins
// inside the window is no start, one that ends inside it no end (it is
// reached or left only by messages), so each path's edges add up to T.
func TestPathsSpanTheWindow(t *testing.T) {
	tr := &Trace{Workers: []string{"s", "c", "x"}, Activities: [][]Activity{
		{{Send, 0, 100, 1}},
		{{Consume, 50, 100, 1}}, // begins inside the window
		{{Consume, 0, 60, 1}},   // ends inside it
	}}
	w := windows(t, tr, Options{WindowNs: 100, WaitNs: DefaultWaitNs})[0]
	if got := math.Exp(w.Paths); math.Abs(got-1) > 1e-9 {
		t.Fatalf("%.6f paths, want 1 (along the sender only)", got)
	}
	if cp := cpOf(w, 0, Send, 0); math.Abs(cp-1) > 1e-12 {
		t.Errorf("the sender's CP %v, want 1", cp)
	}
}

// A bucket handed over within one process at the very instant it was sent
// (0 ns, no clock error) is ordered, and its receiver's vertex is counted
// after its sender's although both are at the same instant.
func TestSameInstantMessage(t *testing.T) {
	tr := &Trace{Workers: []string{"l", "c"},
		Activities: [][]Activity{{{Decode, 0, 100, 1}}, {{Idle, 0, 50, 0}, {Consume, 50, 100, 1}}},
		Transfers:  []Transfer{{From: 0, To: 1, SentNs: 50, RecvNs: 50}}}
	for i := 0; i < 20; i++ { // the order of same-instant vertices must not matter
		w := windows(t, tr, Options{WindowNs: 100, WaitNs: DefaultWaitNs})[0]
		if got := math.Exp(w.Paths); math.Abs(got-2) > 1e-9 {
			t.Fatalf("%.6f paths, want 2 (along the lane; the lane to 50, then the consumer)", got)
		}
		for _, c := range []struct {
			src   int
			kind  Kind
			start int64
			want  float64
		}{{0, Decode, 0, 0.5}, {0, Decode, 50, 0.25}, {1, Consume, 50, 0.25}, {0, Message, 50, 0}} {
			if got := cpOf(w, c.src, c.kind, c.start); math.Abs(got-c.want) > 1e-12 {
				t.Fatalf("CP of %d %s at %d = %v, want %v", c.src, c.kind, c.start, got, c.want)
			}
		}
	}
}
