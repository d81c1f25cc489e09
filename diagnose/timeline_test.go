package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/stage"
)

// seriesOf builds a one-stage-kind series: n samples every 100 ms (Hz
// 1000: 100 ticks), TSC from tsc0, wall clock from unix0.
func seriesOf(n int, tsc0 uint64, unix0 int64, stages ...stage.StageSeries) *stage.Series {
	s := &stage.Series{PeriodNs: 1e8, Hz: 1000, Stages: stages}
	for i := 0; i < n; i++ {
		s.TSC = append(s.TSC, tsc0+uint64(100*i))
		s.UnixNs = append(s.UnixNs, unix0+int64(i)*1e8)
	}
	return s
}

func ramp(n int, per uint64) []uint64 {
	v := make([]uint64, n)
	for i := range v {
		v[i] = per * uint64(i)
	}
	return v
}

func zeros(n int) []int64 { return make([]int64, n) }

// The network stage's queue is emitted - received across hosts: with the
// TSC relation the sender's samples land at the right reference instants
// even though its wall clock is 94 s off; without it they do not.
func TestTimelineAlignsHostsThroughTheRelation(t *testing.T) {
	const n = 10
	lane := stage.StageSeries{Name: "lane0", Kind: stage.Lane, States: []string{"waiting", "decoding", "blocked"},
		StateNs: [][]int64{zeros(n), zeros(n), zeros(n)}, Items: ramp(n, 10), Queue: zeros(n)}
	stream := stage.StageSeries{Name: "stream0", Kind: stage.Network, Items: ramp(n, 10), NoQueue: true, StateNs: [][]int64{}, States: []string{}}
	// The sender ran 30 items ahead of the receiver's count at every instant.
	thread := stage.StageSeries{Name: "thread0", Kind: stage.Sender, States: []string{"pacing", "sending", "blocked"},
		StateNs: [][]int64{zeros(n), zeros(n), zeros(n)}, Items: ramp(n, 10), Queue: zeros(n)}
	for i := range thread.Items {
		thread.Items[i] += 30
	}
	recv := seriesOf(n, 1000, 5e9, lane, stream)
	send := seriesOf(n, 70000, 99e9, thread) // another TSC domain and a wrong wall clock
	in := Input{Processes: []Process{
		{Node: "receiver0", Role: "receiver", Series: recv, Lanes: map[uint32]int{0: 0}},
		{Node: "sender0", Role: "sender", Series: send, Streams: map[string]uint32{"thread0": 0}},
	}}
	in.Align = func(node string, v uint64) (float64, bool) { return float64(v) - 69000, node == "sender0" }
	tl, err := BuildTimeline(in)
	if err != nil {
		t.Fatal(err)
	}
	net := indexOf(tl.Graph, "stream0")
	M := tl.Graph.Len()
	if tl.Aligned != "TSC relation into receiver0" || net < 0 {
		t.Fatalf("aligned %q, network stage %d", tl.Aligned, net)
	}
	for s := 0; s < n; s++ {
		if q := tl.Queue[s*M+net]; q != 30 {
			t.Fatalf("snapshot %d: network queue %d, want 30", s, q)
		}
	}
	if p, c := tl.Graph.parents[net], tl.Graph.children[net]; len(p) != 1 || tl.Graph.Modules[p[0]].Name != "thread0" || len(c) != 1 || tl.Graph.Modules[c[0]].Name != "lane0" {
		t.Fatalf("network stage's edges: parents %v children %v", p, c)
	}
	in.Align = nil // the wall clocks: the sender seems not to have started yet
	tl, _ = BuildTimeline(in)
	if q := tl.Queue[5*M+net]; q >= 0 || tl.Aligned != "wall clocks (no TSC relation)" {
		t.Fatalf("by wall clock: queue %d (%s), want the misalignment to show", q, tl.Aligned)
	}
}

// Several receivers and senders: stages are prefixed with their node.
func TestTimelineNamesStagesOfSeveralProcesses(t *testing.T) {
	const n = 3
	mk := func() *stage.Series {
		return seriesOf(n, 1000, 5e9, stage.StageSeries{Name: "consumer", Kind: stage.Consumer, States: []string{"idle", "working"},
			StateNs: [][]int64{zeros(n), zeros(n)}, Items: ramp(n, 1), Queue: zeros(n)})
	}
	tl, err := BuildTimeline(Input{Processes: []Process{{Node: "receiver0", Role: "receiver", Series: mk()}, {Node: "receiver1", Role: "receiver", Series: mk()}}})
	if err != nil {
		t.Fatal(err)
	}
	if indexOf(tl.Graph, "receiver0/consumer") < 0 || indexOf(tl.Graph, "receiver1/consumer") < 0 {
		t.Fatalf("modules %+v", tl.Graph.Modules)
	}
	if _, err := BuildTimeline(Input{Processes: []Process{{Node: "receiver0", Role: "receiver"}}}); err == nil {
		t.Fatal("a process without a series was accepted")
	}
}

func TestBlackBox(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind stage.Kind
		ok   bool
	}{
		{"stream0", stage.Network, true},
		{"receiver1/stream12", stage.Network, true},
		{"sut/stream0", stage.SUT, true},
		{"nats/stream3", stage.SUT, true},
		{"receiver0/sut/stream0", stage.SUT, true},
		{"lane0", "", false},
		{"receiver0/lane0", "", false},
		{"streamx", "", false},
		{"a/b/c/stream0", "", false},
	} {
		if kind, ok := BlackBox(tc.name); kind != tc.kind || ok != tc.ok {
			t.Errorf("%s: %q %v, want %q %v", tc.name, kind, ok, tc.kind, tc.ok)
		}
	}
}

// TestAJobsOperatorsAreStages: a job agent's operators sit between the
// system's input (its black box) and the lanes, joined by the job's
// edges; a saturated operator is named the limit, with the job's name.
func TestAJobsOperatorsAreStages(t *testing.T) {
	const n = 20
	ops := func(busy ...int64) []stage.StageSeries { // per operator: busy ns per 100 ms period
		var out []stage.StageSeries
		for i, b := range busy {
			st := stage.StageSeries{Name: []string{"join", "window"}[i], Kind: stage.Operator, States: []string{"waiting", "busy", "blocked"},
				StateNs: [][]int64{make([]int64, n), make([]int64, n), zeros(n)}, Items: ramp(n, 50), NoQueue: true}
			for k := 0; k < n; k++ {
				st.StateNs[0][k], st.StateNs[1][k] = int64(k)*(1e8-b), int64(k)*b
			}
			out = append(out, st)
		}
		return out
	}
	thread := stage.StageSeries{Name: "thread0", Kind: stage.Sender, States: []string{"pacing", "sending", "blocked"},
		StateNs: [][]int64{zeros(n), zeros(n), zeros(n)}, Items: ramp(n, 100), Queue: zeros(n)}
	for k := 0; k < n; k++ { // the thread keeps its schedule: mostly pacing
		thread.StateNs[0][k], thread.StateNs[1][k] = int64(k)*9e7, int64(k)*1e7
	}
	lane := stage.StageSeries{Name: "lane0", Kind: stage.Lane, States: []string{"waiting", "decoding", "blocked"},
		StateNs: [][]int64{make([]int64, n), zeros(n), zeros(n)}, Items: ramp(n, 50), Queue: zeros(n)}
	for k := 0; k < n; k++ { // the lane waits for what the job writes
		lane.StateNs[0][k] = int64(k) * 1e8
	}
	stream := stage.StageSeries{Name: "stream0", Kind: stage.Network, Items: ramp(n, 50), NoQueue: true, StateNs: [][]int64{}, States: []string{}}
	for _, tc := range []struct {
		busy     []int64
		want, ev string
	}{
		{[]int64{3e7, 1e8}, "ysb/window", "ysb/window: busy 100%"},
		{[]int64{1e8, 3e7}, "ysb/join", "ysb/join: busy 100%, its input jetstream/stream0 growing 0 -> 950"},
	} {
		in := Input{Relay: true, SUTName: "jetstream", Processes: []Process{
			{Node: "receiver0", Role: "receiver", Series: seriesOf(n, 1000, 5e9, lane, stream), Lanes: map[uint32]int{0: 0}},
			{Node: "sender0", Role: "sender", Series: seriesOf(n, 1000, 5e9, thread), Streams: map[string]uint32{"thread0": 0}},
			{Node: "job0", Role: "job", Job: "ysb", Series: seriesOf(n, 1000, 5e9, ops(tc.busy...)...), Edges: [][2]string{{"join", "window"}}},
		}}
		tl, err := BuildTimeline(in)
		if err != nil {
			t.Fatal(err)
		}
		g := tl.Graph
		join, window, box, l := indexOf(g, "ysb/join"), indexOf(g, "ysb/window"), indexOf(g, "jetstream/stream0"), indexOf(g, "lane0")
		if join < 0 || window < 0 || box < 0 || l < 0 {
			t.Fatalf("modules %+v", g.Modules)
		}
		has := func(from, to int) bool { return slices.Contains(g.children[from], int32(to)) }
		if !has(box, join) || !has(join, window) || !has(window, l) || has(box, window) || has(join, l) {
			t.Fatalf("edges: box -> %v, join -> %v, window -> %v", g.children[box], g.children[join], g.children[window])
		}
		d := Analyze(tl, Options{})
		if d.Limiting != tc.want || d.Evidence != tc.ev {
			t.Errorf("busy %v: limiting %q (%s), want %s", tc.busy, d.Limiting, d.Evidence, tc.want)
		}
		// The same operators in two jobs chained by a topic (YSB in two
		// processes): the first job's operator feeds the second's, and
		// only the second writes what the lane reads.
		split := in
		all := ops(tc.busy...)
		split.Processes = append(slices.Clone(in.Processes[:2]),
			Process{Node: "job0", Role: "job", Job: "a", Series: seriesOf(n, 1000, 5e9, all[0]), Writes: []string{"jetstream:mid"}},
			Process{Node: "job1", Role: "job", Job: "b", Series: seriesOf(n, 1000, 5e9, all[1]), Reads: []string{"jetstream:mid"}})
		if tl, err = BuildTimeline(split); err != nil {
			t.Fatal(err)
		}
		g = tl.Graph
		join, window = indexOf(g, "a/join"), indexOf(g, "b/window")
		if join < 0 || window < 0 || !has(box, join) || !has(join, window) || !has(window, l) || has(box, window) || has(join, l) {
			t.Fatalf("two jobs: modules %+v; edges: box -> %v, a/join -> %v, b/window -> %v", g.Modules, g.children[box], g.children[join], g.children[window])
		}
		want := map[string]string{"ysb/join": "a/join", "ysb/window": "b/window"}[tc.want]
		if d := Analyze(tl, Options{}); d.Limiting != want {
			t.Errorf("two jobs, busy %v: limiting %q (%s), want %s", tc.busy, d.Limiting, d.Evidence, want)
		}
	}
}

// TestAJobsInputLagIsItsBacklog: a job's output streams are not the
// senders' (no emitted - arrived to count), so the system's backlog is
// the job's lag on its input as the receiver read it; an operator busy
// 88% (below saturation: its thread also reads and decodes) while that
// backlog grows is the limit, and without the lag nothing is named.
func TestAJobsInputLagIsItsBacklog(t *testing.T) {
	const n = 20
	filter := stage.StageSeries{Name: "filter", Kind: stage.Operator, States: []string{"waiting", "busy", "blocked"},
		StateNs: [][]int64{make([]int64, n), make([]int64, n), zeros(n)}, Items: ramp(n, 50), NoQueue: true}
	for k := 0; k < n; k++ {
		filter.StateNs[0][k], filter.StateNs[1][k] = int64(k)*12e6, int64(k)*88e6
	}
	lane := stage.StageSeries{Name: "lane0", Kind: stage.Lane, States: []string{"waiting", "decoding", "blocked"},
		StateNs: [][]int64{make([]int64, n), zeros(n), zeros(n)}, Items: ramp(n, 1), Queue: zeros(n)}
	for k := 0; k < n; k++ {
		lane.StateNs[0][k] = int64(k) * 1e8
	}
	out := stage.StageSeries{Name: "stream65280", Kind: stage.Network, Items: ramp(n, 1), NoQueue: true, StateNs: [][]int64{}, States: []string{}}
	var lag [][2]int64
	for k := 0; k < n; k += 5 { // read every 500 ms, growing
		lag = append(lag, [2]int64{5e9 + int64(k)*1e8, int64(100 * k)})
	}
	for _, tc := range []struct {
		lag  [][2]int64
		want string
	}{{lag, "ysb/filter"}, {nil, "none"}} {
		tl, err := BuildTimeline(Input{Relay: true, SUTName: "jetstream", Processes: []Process{
			{Node: "receiver0", Role: "receiver", Series: seriesOf(n, 1000, 5e9, lane, out), Lanes: map[uint32]int{65280: 0}, InputLag: tc.lag},
			{Node: "job0", Role: "job", Job: "ysb", Series: seriesOf(n, 1000, 5e9, filter), Reads: []string{"jetstream:ysb.in"}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		d := Analyze(tl, Options{})
		if d.Limiting != tc.want || (tc.lag != nil && !strings.Contains(d.Evidence, "its input jetstream ysb.in growing 0 -> 1500")) {
			t.Errorf("lag %v: limiting %q (%s), want %s", tc.lag != nil, d.Limiting, d.Evidence, tc.want)
		}
	}
}

// TestOperatorsSharingAThread: an engine runs an input copy's operators
// one after another on one thread (reading, filter, join); when the
// thread is full, the input is blocked 93% of the time and the filter,
// busy 77%, is most of it: the limit, though no operator reaches 80%.
// A filter busy 30% of a full thread is not.
func TestOperatorsSharingAThread(t *testing.T) {
	const n = 20
	op := func(name string, busy, blocked int64) stage.StageSeries {
		st := stage.StageSeries{Name: name, Kind: stage.Operator, States: []string{"waiting", "busy", "blocked"},
			StateNs: [][]int64{make([]int64, n), make([]int64, n), make([]int64, n)}, Items: ramp(n, 100), NoQueue: true}
		for k := 0; k < n; k++ {
			st.StateNs[0][k], st.StateNs[1][k], st.StateNs[2][k] = int64(k)*(1e8-busy-blocked), int64(k)*busy, int64(k)*blocked
		}
		return st
	}
	lane := stage.StageSeries{Name: "lane0", Kind: stage.Lane, States: []string{"waiting", "decoding", "blocked"},
		StateNs: [][]int64{make([]int64, n), zeros(n), zeros(n)}, Items: ramp(n, 1), Queue: zeros(n)}
	for k := 0; k < n; k++ {
		lane.StateNs[0][k] = int64(k) * 1e8
	}
	out := stage.StageSeries{Name: "stream65280", Kind: stage.Network, Items: ramp(n, 1), NoQueue: true, StateNs: [][]int64{}, States: []string{}}
	for _, tc := range []struct {
		filter int64 // busy ns per period
		want   string
	}{{77e6, "ysb/filter"}, {30e6, "none"}} {
		tl, err := BuildTimeline(Input{Relay: true, SUTName: "jetstream", Processes: []Process{
			{Node: "receiver0", Role: "receiver", Series: seriesOf(n, 1000, 5e9, lane, out), Lanes: map[uint32]int{65280: 0}},
			{Node: "job0", Role: "job", Job: "ysb", Series: seriesOf(n, 1000, 5e9, op("input", 5e6, 93e6), op("filter", tc.filter, 0), op("join", 11e6, 0)),
				Edges: [][2]string{{"input", "filter"}, {"filter", "join"}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if d := Analyze(tl, Options{}); d.Limiting != tc.want || (tc.want != "none" && !strings.Contains(d.Evidence, "ysb/input blocked 93%")) {
			t.Errorf("filter busy %v: limiting %q (%s), want %s", time.Duration(tc.filter), d.Limiting, d.Evidence, tc.want)
		}
	}
}

// indexOf is a module's index by name, or -1.
func indexOf(g *Graph, name string) int {
	for i, m := range g.Modules {
		if m.Name == name {
			return i
		}
	}
	return -1
}
