package diagnose

import (
	"math/rand/v2"
	"testing"
)

// graphOf builds a graph from names and "A>B" edges; wait and queue list
// the modules with those counters.
func graphOf(t testing.TB, names string, edges []string, wait, queue string) *Graph {
	t.Helper()
	idx := map[byte]int{}
	var mods []Module
	for i := 0; i < len(names); i++ {
		idx[names[i]] = i
		mods = append(mods, Module{Name: names[i : i+1]})
	}
	for i := 0; i < len(wait); i++ {
		mods[idx[wait[i]]].HasWait = true
	}
	for i := 0; i < len(queue); i++ {
		mods[idx[queue[i]]].HasQueue = true
	}
	var es [][2]int
	for _, e := range edges {
		es = append(es, [2]int{idx[e[0]], idx[e[2]]})
	}
	g, err := NewGraph(mods, es)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// snapshot sets counters by module letter: active lists the modules with
// Δtotal > 0, waiting those with Δwait > 0, queued those with a queue > 0
// (every other queue is 0).
func snapshot(g *Graph, active, waiting, queued string) Counters {
	c := NewCounters(g.Len())
	for i, m := range g.Modules {
		for _, set := range []struct {
			s string
			f func()
		}{{active, func() { c.Total[i] = 5 }}, {waiting, func() { c.Wait[i] = 1000 }}, {queued, func() { c.Queue[i] = 3 }}} {
			for j := 0; j < len(set.s); j++ {
				if set.s[j] == m.Name[0] {
					set.f()
				}
			}
		}
	}
	return c
}

func labelsOf(g *Graph, out []Label) map[string]Label {
	m := map[string]Label{}
	for i, l := range out {
		m[g.Modules[i].Name] = l
	}
	return m
}

// The expected labels below are worked out by hand from Table 2.2 and
// Algorithms 3-5; each case says which criterion gives each label.
func TestLabelsOnTheDissertationsGraphs(t *testing.T) {
	fig22 := []string{"A>B", "B>C", "B>D", "C>E", "D>E", "D>F"}
	fig23a := []string{"A>B", "B>C", "B>D", "C>E", "D>E"}
	cases := []struct {
		name                    string
		names                   string
		edges                   []string
		wait, queue             string
		active, waiting, queued string
		want                    map[string]Label
	}{
		{
			// Fig. 2.3(a): traffic flows A->B->C->E, D is inactive with a
			// queue (its parent B is partly held up). D's only child E is
			// active, so D cannot pass the blame: STALLED (h). The rest
			// are active: HEALTHY (a).
			name: "fig 2.3(a)", names: "ABCDE", edges: fig23a, queue: "D",
			active: "ABCE", queued: "D",
			want: map[string]Label{"A": Healthy, "B": Healthy, "C": Healthy, "D": Stalled, "E": Healthy},
		},
		{
			// Fig. 2.3(b): D also depends on F, which is inactive. D's child
			// F is inactive and has no queue counter, so D passes the blame:
			// BLOCKED (e). F has work because its parent D is BLOCKED
			// (Alg. 4 line 11), no wait counter, no children: STALLED (h).
			name: "fig 2.3(b)", names: "ABCDEF", edges: fig22, queue: "D",
			active: "ABCE", queued: "D",
			want: map[string]Label{"A": Healthy, "B": Healthy, "C": Healthy, "D": Blocked, "E": Healthy, "F": Stalled},
		},
		{
			// Fig. 2.2 with wait counters everywhere and nothing moving: the
			// root A has work (Alg. 4 line 8) and waited: BLOCKED (d); B, D
			// waited too, and have work through their blocked parents;
			// C did not wait: STALLED (g). E's parents C (STALLED) and D
			// (BLOCKED): work through D, no wait: STALLED. F's parent D is
			// BLOCKED, F did not wait: STALLED.
			name: "fig 2.2 all waiting", names: "ABCDEF", edges: fig22, wait: "ABCDEF",
			waiting: "ABD",
			want:    map[string]Label{"A": Blocked, "B": Blocked, "C": Stalled, "D": Blocked, "E": Stalled, "F": Stalled},
		},
		{
			// Missing counters: A (root, nothing) -> B (nothing) -> C (queue
			// and wait). All inactive, C has a queue and did not wait:
			// STALLED (g). A has work as a root and its child B is inactive
			// without a queue counter: BLOCKED (e). B has work (parent
			// BLOCKED) and its child C is inactive with a queue: BLOCKED (e).
			name: "missing counters", names: "ABC", edges: []string{"A>B", "B>C"}, wait: "C", queue: "C",
			queued: "C",
			want:   map[string]Label{"A": Blocked, "B": Blocked, "C": Stalled},
		},
		{
			// Same chain, C's queue empty: C has no work, DONTCARE (b). A
			// (root: work) passes the blame to B, inactive without a queue
			// counter: BLOCKED (e). B has work (parent BLOCKED) but its only
			// child C is known to be empty (Alg. 5 line 5): the blame stops
			// at B, STALLED (h).
			name: "empty queue stops the blame", names: "ABC", edges: []string{"A>B", "B>C"}, wait: "C", queue: "C",
			want: map[string]Label{"A": Blocked, "B": Stalled, "C": DontCare},
		},
		{
			// A cycle B->C->D->B behind root A, all inactive without
			// queues. A passes the blame into the cycle: BLOCKED (e). The
			// cycle is merged into one module: it has work (parent A is
			// BLOCKED) and no child outside it: STALLED, for each member.
			name: "inactive cycle", names: "ABCD", edges: []string{"A>B", "B>C", "C>D", "D>B"},
			want: map[string]Label{"A": Blocked, "B": Stalled, "C": Stalled, "D": Stalled},
		},
		{
			// The same cycle with C active: Algorithm 2 removes C's
			// out-edge, the cycle is broken. A: BLOCKED (B inactive, no
			// queue). B has work (A BLOCKED), its child C is active: STALLED
			// (h). C: HEALTHY. D's only parent C is active, its edge gone:
			// no work, DONTCARE.
			name: "cycle broken by an active module", names: "ABCD", edges: []string{"A>B", "B>C", "C>D", "D>B"},
			active: "C",
			want:   map[string]Label{"A": Blocked, "B": Stalled, "C": Healthy, "D": DontCare},
		},
		{
			// Our addition to Alg. 4: a job's operators without queues
			// behind an active sender S. The input I waited on its output
			// (the filter F took nothing): it holds work, so it has work
			// though its parent is active, and waited: BLOCKED (d). F has
			// work through I, did not wait: STALLED (g). The join J's
			// parent is STALLED: no work, DONTCARE. By Alg. 4 alone I and
			// F were DONTCARE and the stalled filter went unseen.
			name: "a blocked module holds work", names: "SIFJ", edges: []string{"S>I", "I>F", "F>J"}, wait: "IFJ",
			active: "S", waiting: "I",
			want: map[string]Label{"S": Healthy, "I": Blocked, "F": Stalled, "J": DontCare},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := graphOf(t, tc.names, tc.edges, tc.wait, tc.queue)
			c := snapshot(g, tc.active, tc.waiting, tc.queued)
			out := make([]Label, g.Len())
			NewLabeler(g).Label(&c, out)
			got := labelsOf(g, out)
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("%s: %v, want %v (all: %v)", name, got[name], want, got)
				}
			}
		})
	}
}

func TestCyclesAreReported(t *testing.T) {
	g := graphOf(t, "ABCD", []string{"A>B", "B>C", "C>D", "D>B"}, "", "")
	c := snapshot(g, "", "", "")
	lb := NewLabeler(g)
	out := make([]Label, g.Len())
	lb.Label(&c, out)
	if cy := lb.cycles; len(cy) != 1 || len(cy[0]) != 3 {
		t.Fatalf("cycles %v, want one of B, C, D", cy)
	}
	c = snapshot(g, "C", "", "")
	lb.Label(&c, out)
	if cy := lb.cycles; len(cy) != 0 {
		t.Fatalf("cycles %v with C active, want none", cy)
	}
}

// On an acyclic graph the labeler skips Algorithm 2 and Tarjan; the
// general algorithm must agree on every random graph and snapshot.
func TestFastPathMatchesGeneral(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 500; trial++ {
		n := 2 + rng.IntN(12)
		mods := make([]Module, n)
		for i := range mods {
			mods[i] = Module{Name: string(rune('a' + i)), HasWait: rng.IntN(2) == 0, HasQueue: rng.IntN(2) == 0}
		}
		var edges [][2]int
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if rng.IntN(3) == 0 {
					edges = append(edges, [2]int{i, j})
				}
			}
		}
		g, err := NewGraph(mods, edges)
		if err != nil || g.topo == nil {
			t.Fatal("want an acyclic graph", err)
		}
		lb := NewLabeler(g)
		for snap := 0; snap < 20; snap++ {
			c := NewCounters(n)
			for i := 0; i < n; i++ {
				if rng.IntN(2) == 0 {
					c.Total[i] = uint64(rng.IntN(3))
				}
				c.Wait[i] = uint64(rng.IntN(2))
				c.Queue[i] = int64(rng.IntN(3) - 1)
			}
			fast, general := make([]Label, n), make([]Label, n)
			lb.Label(&c, fast)
			lb.general(&c, general)
			for i := range fast {
				if fast[i] != general[i] {
					t.Fatalf("graph %v, counters %+v: module %d fast %v, general %v", edges, c, i, fast[i], general[i])
				}
			}
		}
	}
}

// StreamsDiagnoser's carry-over: a negative queue (the downstream's count
// read after the upstream's had moved on) is added to the next Δtotal, so
// the downstream is not blamed for work it had already done.
func TestNegativeQueueCarriesOver(t *testing.T) {
	// net (computed queue) -> lane (wait, queue)
	g, _ := NewGraph([]Module{{Name: "net", HasQueue: true}, {Name: "lane", HasWait: true, HasQueue: true}}, [][2]int{{0, 1}})
	d := NewDiagnoser(g)
	out := make([]Label, 2)
	steps := []struct {
		total    []uint64
		queue    []int64
		wantNet  Label
		labelled bool
	}{
		{total: []uint64{0, 0}, queue: []int64{0, 0}},
		{total: []uint64{100, 100}, queue: []int64{-5, 1}, wantNet: Healthy, labelled: true},
		// No new arrivals, queue 5 (the 5 counted early are now sent): the
		// carry-over of 5 makes net active, not STALLED.
		{total: []uint64{100, 100}, queue: []int64{5, 1}, wantNet: Healthy, labelled: true},
		// Without a carry-over the same counters are a stall.
		{total: []uint64{100, 100}, queue: []int64{5, 1}, wantNet: Blocked, labelled: true},
	}
	for i, s := range steps {
		got := d.Step(s.total, []uint64{0, 0}, s.queue, out)
		if got != s.labelled {
			t.Fatalf("step %d labelled %v", i, got)
		}
		if got && out[0] != s.wantNet {
			t.Errorf("step %d: net %v, want %v (lane %v)", i, out[0], s.wantNet, out[1])
		}
	}
}

func TestStallRunsAndLiveConfirm(t *testing.T) {
	H, S := Healthy, Stalled
	seq := []Label{H, S, H, S, S, S, H, S, S}
	labels := make([][]Label, len(seq))
	for i, l := range seq {
		labels[i] = []Label{l}
	}
	runs := StallRuns(labels, 1, 2)
	if len(runs) != 2 || runs[0].From != 3 || runs[0].To != 5 || runs[1].From != 7 || runs[1].To != 8 {
		t.Fatalf("runs %+v, want [3,5] and [7,8]", runs)
	}
	live := NewLive(1, 2)
	var started, ended []int
	for i, l := range seq {
		for _, e := range live.Step([]Label{l}, nil) {
			if e.Started {
				started = append(started, i)
			} else {
				ended = append(ended, i)
			}
		}
	}
	if len(started) != 2 || started[0] != 4 || started[1] != 8 || len(ended) != 1 || ended[0] != 6 {
		t.Fatalf("live: started %v ended %v, want [4 8] and [6]", started, ended)
	}
}
