package diagnose

// Labeler runs the FlowDiagnoser algorithm on one graph, snapshot after
// snapshot, reusing its buffers (no allocation per snapshot on an acyclic
// graph).
type Labeler struct {
	g *Graph
	// General algorithm's working state (cyclic graphs).
	wchildren [][]int32
	comp      []int32   // module -> strongly connected component
	members   [][]int32 // component -> modules
	cycles    [][]int   // components of more than one module, last snapshot
	tarjan    tarjanState
}

// NewLabeler returns a labeler for g.
func NewLabeler(g *Graph) *Labeler {
	return &Labeler{g: g}
}

// Label labels every module for one snapshot (Algorithm 1). On an acyclic
// graph the cycle-breaking of Algorithm 2 removes only out-edges of
// modules that are HEALTHY or have an empty queue, which neither pass
// blame nor are BLOCKED, so the analysis runs on the graph as it is in
// its fixed topological order; TestFastPathMatchesGeneral checks this.
func (lb *Labeler) Label(c *Counters, out []Label) {
	g := lb.g
	lb.cycles = lb.cycles[:0]
	if g.topo == nil {
		lb.general(c, out)
		return
	}
	for _, m := range g.topo {
		out[m] = lb.labelOne(int(m), c, out)
	}
}

// inactiveWithWork is Algorithm 5's test of a child: inactive and not
// known to have an empty queue.
func inactiveWithWork(g *Graph, c *Counters, m int) bool {
	return c.Total[m] == 0 && (!g.Modules[m].HasQueue || c.Queue[m] > 0)
}

// labelOne is Algorithm 3's body for module m on the acyclic graph.
func (lb *Labeler) labelOne(m int, c *Counters, out []Label) Label {
	g := lb.g
	if c.Total[m] > 0 {
		return Healthy // (a)
	}
	if !lb.hasWork(m, c, out) {
		return DontCare // (b)
	}
	if g.Modules[m].HasWait {
		if c.Wait[m] > 0 {
			return Blocked // (d)
		}
		return Stalled // (g)
	}
	for _, ch := range g.children[m] { // CanPassBlame
		if inactiveWithWork(g, c, int(ch)) {
			return Blocked // (e)
		}
	}
	return Stalled // (h)
}

// hasWork is Algorithm 4 on the acyclic graph, with one addition: a
// module without a queue that was blocked on its output in the period
// holds work it could not pass on, so it has work. Without it, a job's
// input operator, whose queue is its client's prefetch (the broker's lag
// does not count it), read as having nothing to do while the operator
// after it stalled, and so did that operator: a stalled filter was
// DONTCARE, not STALLED (BENCHMARKS.md, 2026-11-27).
func (lb *Labeler) hasWork(m int, c *Counters, out []Label) bool {
	g := lb.g
	if g.Modules[m].HasQueue {
		return c.Queue[m] > 0
	}
	if g.root[m] || (g.Modules[m].HasWait && c.Wait[m] > 0) {
		return true
	}
	for _, p := range g.parents[m] {
		if out[p] == Blocked {
			return true
		}
	}
	return false
}
