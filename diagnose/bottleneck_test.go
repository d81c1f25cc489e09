package diagnose

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/stage"
)

// chain is the harness's pipeline for one stream: thread0 -> stream0 ->
// lane0 -> consumer.
func chain(t testing.TB) (*Graph, []bool) {
	g, err := NewGraph([]Module{
		{Name: "thread0", Kind: stage.Sender, HasWait: true, HasQueue: true},
		{Name: "stream0", Kind: stage.Network, HasQueue: true},
		{Name: "lane0", Kind: stage.Lane, HasWait: true, HasQueue: true},
		{Name: "consumer", Kind: stage.Consumer, HasQueue: true},
	}, [][2]int{{0, 1}, {1, 2}, {2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	return g, []bool{true, false, true, true}
}

func timed(busy, blocked float64) Activity {
	return Activity{Timed: true, Busy: busy, Blocked: blocked, Idle: 1 - busy - blocked}
}

func TestBottleneckRule(t *testing.T) {
	g, tm := chain(t)
	b := NewBottlenecks(g, tm, DefaultThresholds)
	cases := []struct {
		name     string
		act      []Activity
		want     string
		evidence string
	}{
		{"consumer-bound", []Activity{timed(0.2, 0.75), {QueueFrom: 900, QueueTo: 1000}, timed(0.35, 0.63),
			{Timed: true, Busy: 0.99, Idle: 0.01, QueueFrom: 256, QueueTo: 256, QueueMax: 256, QueueCap: 256}},
			"consumer", "consumer: busy 99%, lane0 blocked 63%, ring 100%"},
		{"sender-bound", []Activity{timed(0.98, 0), {QueueFrom: 3, QueueTo: 2}, timed(0.55, 0), timed(0.05, 0)},
			"thread0", "thread0: busy 98%"},
		{"decode-bound", []Activity{timed(0.3, 0.6), {QueueFrom: 100, QueueTo: 4000}, timed(0.97, 0), timed(0.1, 0)},
			"lane0", "lane0: busy 97%, thread0 blocked 60%"},
		{"half load", []Activity{timed(0.1, 0), {}, timed(0.3, 0), timed(0.45, 0)}, "", ""},
		{"network-bound", []Activity{timed(0.3, 0.5), {QueueFrom: 10, QueueTo: 5000}, timed(0.05, 0), timed(0.02, 0)},
			"stream0", "stream0: queue 10 -> 5000, lane0 idle 95%, thread0 blocked 50%"},
		// A full socket upstream and an empty one downstream: the
		// transport in between (its queue bounded by the high-water mark).
		{"transport-bound", []Activity{timed(0.1, 0.9), {QueueFrom: 1000, QueueTo: 1000}, timed(0.13, 0), timed(0.01, 0)},
			"stream0", "stream0: lane0 idle 87%, thread0 blocked 90%"},
		// Busy but nothing waits for it: keeping up, not limiting.
		{"busy lane keeping up", []Activity{timed(0.5, 0), {QueueFrom: 5, QueueTo: 5}, timed(0.9, 0), timed(0.2, 0)}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r Ranking
			b.Rank(tc.act, &r)
			got := ""
			if r.Limiting >= 0 {
				got = g.Modules[r.Limiting].Name
			}
			if got != tc.want || r.Evidence != tc.evidence {
				t.Fatalf("limiting %q (%q), want %q (%q); ranks %v", got, r.Evidence, tc.want, tc.evidence, r.Rank)
			}
		})
	}
}

// TestOverloadedBoxGrowth: a relay 1% slower than the offered rate (its
// queue grew 66 buckets while it passed 6000, the lane idle) is growth in
// a window known to be overloaded, and not in one that may have kept up,
// where that much is the transport's in-flight noise.
func TestOverloadedBoxGrowth(t *testing.T) {
	g, tm := chain(t)
	act := []Activity{timed(0.2, 0), {QueueFrom: 40, QueueTo: 106, Items: 6000}, timed(0.1, 0), timed(0.05, 0)}
	for _, tc := range []struct {
		name string
		th   Thresholds
		want string
	}{
		{"may have kept up", DefaultThresholds, ""},
		{"overloaded", func() Thresholds { th := DefaultThresholds; th.BoxGrowth = OverloadedBoxGrowth; return th }(), "stream0"},
	} {
		var r Ranking
		NewBottlenecks(g, tm, tc.th).Rank(act, &r)
		got := ""
		if r.Limiting >= 0 {
			got = g.Modules[r.Limiting].Name
		}
		if got != tc.want {
			t.Fatalf("%s: limiting %q (%s), want %q", tc.name, got, r.Evidence, tc.want)
		}
	}
}

// wide is a pipeline of n threads, streams and lanes into one consumer.
func wide(t testing.TB, n int) (*Graph, []bool) {
	var mods []Module
	var edges [][2]int
	var tm []bool
	for i := 0; i < n; i++ {
		mods = append(mods, Module{Name: fmt.Sprintf("thread%d", i), Kind: stage.Sender, HasWait: true, HasQueue: true},
			Module{Name: fmt.Sprintf("stream%d", i), Kind: stage.Network, HasQueue: true},
			Module{Name: fmt.Sprintf("lane%d", i), Kind: stage.Lane, HasWait: true, HasQueue: true})
		tm = append(tm, true, false, true)
		edges = append(edges, [2]int{3 * i, 3*i + 1}, [2]int{3*i + 1, 3*i + 2}, [2]int{3*i + 2, 3 * n})
	}
	mods = append(mods, Module{Name: "consumer", Kind: stage.Consumer, HasQueue: true})
	tm = append(tm, true)
	g, err := NewGraph(mods, edges)
	if err != nil {
		t.Fatal(err)
	}
	return g, tm
}

// syntheticTimeline is a wide pipeline over snaps snapshots in which lane
// 0 stalls for a while and the consumer is busy throughout.
func syntheticTimeline(t testing.TB, lanes, snaps int) *Timeline {
	g, tm := wide(t, lanes)
	M := g.Len()
	tl := &Timeline{Graph: g, Timed: tm, QueueCap: make([]int64, M), PeriodNs: 10e6, Aligned: "one process",
		UnixNs: make([]int64, snaps), Total: make([]uint64, snaps*M), Wait: make([]uint64, snaps*M), Queue: make([]int64, snaps*M),
		Busy: make([]uint64, snaps*M), Blocked: make([]uint64, snaps*M), Idle: make([]uint64, snaps*M)}
	for s := 1; s < snaps; s++ {
		tl.UnixNs[s] = int64(s) * 10e6
		stall := s%100 >= 40 && s%100 < 60
		for m := 0; m < M; m++ {
			i, p := s*M+m, (s-1)*M+m
			step := uint64(50)
			if stall && m == 2 {
				step = 0 // lane0 holds a bucket
				tl.Queue[i] = 1
			}
			if stall && m == 1 {
				tl.Queue[i] = int64(s % 100)
			}
			tl.Total[i] = tl.Total[p] + step
			tl.Busy[i] = tl.Busy[p] + 5e6
			tl.Idle[i] = tl.Idle[p] + 5e6
		}
	}
	return tl
}

func TestAnalyzeFindsTheSyntheticStall(t *testing.T) {
	tl := syntheticTimeline(t, 3, 300)
	d := Analyze(tl, Options{Confirm: 2})
	if len(d.Stalls) != 3 {
		t.Fatalf("%d stalls, want 3: %+v", len(d.Stalls), d.Stalls)
	}
	for _, s := range d.Stalls {
		if s.Stage != "lane0" || s.Snapshots != 20 {
			t.Errorf("stall %+v, want lane0 for 20 snapshots", s)
		}
	}
	sum := d.Summary[indexOf(tl.Graph, "lane0")]
	if sum.Stalls != 3 || sum.MaxStall < 0.19 || sum.MaxStall > 0.21 || sum.Labels["STALLED"] != 60 {
		t.Errorf("lane0 summary %+v", sum)
	}
	if d.Limiting != "none" || !strings.Contains(d.Aligned, "one process") {
		t.Errorf("limiting %q, aligned %q", d.Limiting, d.Aligned)
	}
}

// The speed target: 1 M stage-snapshots/s on one core (a day of 10 ms
// snapshots over 100 stages in under a minute needs 14.4 M/s).
func BenchmarkAnalyze(b *testing.B) {
	tl := syntheticTimeline(b, 33, 2000) // 100 stages
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Analyze(tl, Options{})
	}
	b.ReportMetric(float64(b.N)*float64(tl.Snapshots()*tl.Graph.Len())/b.Elapsed().Seconds(), "stage-snapshots/s")
}

func BenchmarkLabel(b *testing.B) {
	tl := syntheticTimeline(b, 33, 200)
	g := tl.Graph
	M := g.Len()
	d := NewDiagnoser(g)
	out := make([]Label, M)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := i % 200
		d.Step(tl.Total[s*M:(s+1)*M], tl.Wait[s*M:(s+1)*M], tl.Queue[s*M:(s+1)*M], out)
	}
	b.ReportMetric(float64(b.N)*float64(M)/b.Elapsed().Seconds(), "stage-snapshots/s")
}
