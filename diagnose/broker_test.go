package diagnose

import (
	"slices"
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/stage"
)

func TestBrokerNames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		named bool
	}{{"jetstream ysb.in", true}, {"receiver0/kafka events", true}, {"host CPU", false}, {"ysb/pipeline thread 0", false}, {"sut/stream0", false}} {
		if IsBroker(tc.name) != tc.named {
			t.Errorf("%q: broker %v", tc.name, !tc.named)
		}
	}
	if Broker("jetstream:ysb.in") != "jetstream ysb.in" || Broker("ysb.in") != "" {
		t.Error(Broker("jetstream:ysb.in"), Broker("ysb.in"))
	}
}

// TestABrokerHeldBackIsNamed: in a job sweep the broker is one stage,
// named by the topic the job reads: the senders feed it (blocked 60% on
// its acknowledgements) and the job's input drains it (waiting 90%), so
// the black-box rule names it (issue 58: the sender had no edge into it,
// and it was called by the job's output stream, jetstream/stream65280).
func TestABrokerHeldBackIsNamed(t *testing.T) {
	const n = 20
	states := func(name string, kind stage.Kind, names []string, shares ...int64) stage.StageSeries {
		st := stage.StageSeries{Name: name, Kind: kind, States: names, Items: ramp(n, 100), NoQueue: kind != stage.Sender && kind != stage.Lane}
		for _, share := range shares {
			v := make([]int64, n)
			for k := range v {
				v[k] = int64(k) * share * 1e6
			}
			st.StateNs = append(st.StateNs, v)
		}
		if !st.NoQueue {
			st.Queue = zeros(n)
		}
		return st
	}
	thread := states("thread0", stage.Sender, []string{"pacing", "sending", "blocked"}, 20, 20, 60)
	lane := states("lane0", stage.Lane, []string{"waiting", "decoding", "blocked"}, 98, 2, 0)
	input := states("input", stage.Operator, []string{"waiting", "busy", "blocked"}, 90, 10, 0)
	out := stage.StageSeries{Name: "stream65280", Kind: stage.Network, Items: ramp(n, 1), NoQueue: true, StateNs: [][]int64{}, States: []string{}}
	var lag [][2]int64
	for k := 0; k < n; k += 5 {
		lag = append(lag, [2]int64{5e9 + int64(k)*1e8, 40})
	}
	tl, err := BuildTimeline(Input{Relay: true, SUTName: "jetstream", Processes: []Process{
		{Node: "receiver0", Role: "receiver", Series: seriesOf(n, 1000, 5e9, lane, out), Lanes: map[uint32]int{65280: 0}, InputLag: lag},
		{Node: "sender0", Role: "sender", Series: seriesOf(n, 1000, 5e9, thread), Streams: map[string]uint32{"thread0": 0}},
		{Node: "job0", Role: "job", Job: "ysb", Series: seriesOf(n, 1000, 5e9, input), Reads: []string{"jetstream:ysb.in"}, Writes: []string{"jetstream:ysb.out"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	d := Analyze(tl, Options{Overloaded: true})
	if d.Limiting != "jetstream ysb.in" || !strings.Contains(d.Evidence, "thread0 blocked 60%") || !strings.Contains(d.Evidence, "ysb/input idle 90%") {
		t.Fatalf("limiting %q (%s); want the broker, its senders blocked and the job's input idle", d.Limiting, d.Evidence)
	}
	if !slices.Contains(d.Edges, [2]string{"thread0", "jetstream ysb.in"}) || !slices.Contains(d.Edges, [2]string{"jetstream ysb.in", "ysb/input"}) {
		t.Errorf("edges %v: want the sender feeding the broker and the broker the job's input", d.Edges)
	}
}

// A job's output pauses between its windows while its lag on its input
// is not zero: the broker stage's items stop with its queue full, which
// its own counters do not confirm as a stall (issue 58: unloaded trials
// showed 0.2-0.7 s "stalls" of the broker).
func TestNoBrokerStallFromAWindowsPause(t *testing.T) {
	const n = 40
	out := stage.StageSeries{Name: "stream65280", Kind: stage.Network, NoQueue: true, StateNs: [][]int64{}, States: []string{}}
	for k := 0; k < n; k++ {
		out.Items = append(out.Items, uint64(10*(k/10))) // a window's output every second
	}
	lane := stage.StageSeries{Name: "lane0", Kind: stage.Lane, States: []string{"waiting", "decoding", "blocked"},
		StateNs: [][]int64{ramp64(n, 1e8), zeros(n), zeros(n)}, Items: out.Items, Queue: zeros(n)}
	input := stage.StageSeries{Name: "input", Kind: stage.Operator, States: []string{"waiting", "busy", "blocked"},
		StateNs: [][]int64{ramp64(n, 9e7), ramp64(n, 1e7), zeros(n)}, Items: ramp(n, 100), NoQueue: true}
	var lag [][2]int64
	for k := 0; k < n; k += 5 {
		lag = append(lag, [2]int64{5e9 + int64(k)*1e8, 30})
	}
	tl, err := BuildTimeline(Input{Relay: true, SUTName: "jetstream", Processes: []Process{
		{Node: "receiver0", Role: "receiver", Series: seriesOf(n, 1000, 5e9, lane, out), Lanes: map[uint32]int{65280: 0}, InputLag: lag},
		{Node: "job0", Role: "job", Job: "ysb", Series: seriesOf(n, 1000, 5e9, input), Reads: []string{"jetstream:ysb.in"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	d := Analyze(tl, Options{})
	for _, st := range d.Stalls {
		if IsBroker(st.Stage) {
			t.Fatalf("a stall of the broker confirmed from the job's output pausing: %+v", st)
		}
	}
	stalled := 0
	for _, s := range d.Snapshots {
		for m, l := range s.Labels {
			if IsBroker(d.Modules[m].Name) && l == Stalled {
				stalled++
			}
		}
	}
	if stalled == 0 {
		t.Fatal("no period labelled STALLED: the test does not make the pause it is about")
	}
}

func ramp64(n int, per int64) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = per * int64(i)
	}
	return v
}
