package diagnose

// The general algorithm, for graphs with cycles: BreakNonBlockedCycles
// (Algorithm 2), Tarjan's strongly connected components merged into
// super-modules whose counters are their members' maximum (§2.3.2.2),
// and the dependency analysis on the resulting DAG (Algorithms 3-5).

// general labels a snapshot on a graph that may have cycles.
func (lb *Labeler) general(c *Counters, out []Label) {
	g := lb.g
	n := g.Len()
	if lb.wchildren == nil {
		lb.wchildren = make([][]int32, n)
		lb.comp = make([]int32, n)
	}
	// Algorithm 2: a module that is active, or knows its queue is empty,
	// passes no blame: its out-edges go.
	for m := 0; m < n; m++ {
		if c.Total[m] > 0 || (g.Modules[m].HasQueue && c.Queue[m] <= 0) {
			lb.wchildren[m] = nil
		} else {
			lb.wchildren[m] = g.children[m]
		}
	}
	// Step 2: merge what is left of the cycles.
	lb.members = lb.tarjan.run(lb.wchildren, lb.comp, lb.members[:0])
	k := len(lb.members)
	sc := superCounters(g, c, lb.members)
	// Tarjan emits components sinks first: reversed, ancestors come first.
	compLabel := make([]Label, k)
	for ci := k - 1; ci >= 0; ci-- {
		compLabel[ci] = lb.labelComp(int32(ci), &sc, compLabel)
	}
	for ci, ms := range lb.members {
		for _, m := range ms {
			out[m] = compLabel[ci]
		}
		if len(ms) > 1 {
			cyc := make([]int, len(ms))
			for i, m := range ms {
				cyc[i] = int(m)
			}
			lb.cycles = append(lb.cycles, cyc)
		}
	}
}

// super is a component's merged module.
type super struct {
	total, wait       []uint64
	queue             []int64
	hasWait, hasQueue []bool
	root              []bool
}

func superCounters(g *Graph, c *Counters, members [][]int32) super {
	k := len(members)
	s := super{total: make([]uint64, k), wait: make([]uint64, k), queue: make([]int64, k),
		hasWait: make([]bool, k), hasQueue: make([]bool, k), root: make([]bool, k)}
	for ci, ms := range members {
		s.queue[ci] = -1 << 62
		for _, m := range ms {
			s.total[ci] = max(s.total[ci], c.Total[m])
			if g.Modules[m].HasWait {
				s.hasWait[ci] = true
				s.wait[ci] = max(s.wait[ci], c.Wait[m])
			}
			if g.Modules[m].HasQueue {
				s.hasQueue[ci] = true
				s.queue[ci] = max(s.queue[ci], c.Queue[m])
			}
		}
		s.root[ci] = len(ms) == 1 && g.root[ms[0]]
	}
	return s
}

// labelComp is Algorithm 3 for one component of the DAG.
func (lb *Labeler) labelComp(ci int32, s *super, compLabel []Label) Label {
	if s.total[ci] > 0 {
		return Healthy
	}
	if !lb.compHasWork(ci, s, compLabel) {
		return DontCare
	}
	if s.hasWait[ci] {
		if s.wait[ci] > 0 {
			return Blocked
		}
		return Stalled
	}
	// CanPassBlame over the DAG's children of the component.
	for _, m := range lb.members[ci] {
		for _, ch := range lb.wchildren[m] {
			cc := lb.comp[ch]
			if cc == ci {
				continue
			}
			if s.total[cc] == 0 && (!s.hasQueue[cc] || s.queue[cc] > 0) {
				return Blocked
			}
		}
	}
	return Stalled
}

// compHasWork is Algorithm 4 on the DAG: parents are the components with
// a remaining edge into this one.
func (lb *Labeler) compHasWork(ci int32, s *super, compLabel []Label) bool {
	if s.hasQueue[ci] {
		return s.queue[ci] > 0
	}
	if s.root[ci] || (s.hasWait[ci] && s.wait[ci] > 0) { // blocked: it holds work (label.go)
		return true
	}
	g := lb.g
	for _, m := range lb.members[ci] {
		for _, p := range g.parents[m] {
			pc := lb.comp[p]
			if pc == ci || !hasEdge(lb.wchildren[p], m) {
				continue
			}
			if compLabel[pc] == Blocked {
				return true
			}
		}
	}
	return false
}

func hasEdge(children []int32, m int32) bool {
	for _, c := range children {
		if c == m {
			return true
		}
	}
	return false
}

// tarjanState is the iterative Tarjan's algorithm's scratch space.
type tarjanState struct {
	index, low []int32
	onStack    []bool
	stack      []int32
	call       []frame
}

type frame struct{ v, next int32 }

// run finds the strongly connected components of the graph given by
// children, writes each module's component to comp and returns the
// components in Tarjan's order (every component after those it reaches).
func (t *tarjanState) run(children [][]int32, comp []int32, out [][]int32) [][]int32 {
	n := len(children)
	if len(t.index) != n {
		t.index, t.low, t.onStack = make([]int32, n), make([]int32, n), make([]bool, n)
	}
	for i := range t.index {
		t.index[i] = -1
	}
	next := int32(0)
	for s := 0; s < n; s++ {
		if t.index[s] >= 0 {
			continue
		}
		t.call = append(t.call[:0], frame{v: int32(s)})
		t.index[s], t.low[s] = next, next
		next++
		t.stack = append(t.stack, int32(s))
		t.onStack[s] = true
		for len(t.call) > 0 {
			f := &t.call[len(t.call)-1]
			v := f.v
			if int(f.next) < len(children[v]) {
				w := children[v][f.next]
				f.next++
				if t.index[w] < 0 {
					t.index[w], t.low[w] = next, next
					next++
					t.stack = append(t.stack, w)
					t.onStack[w] = true
					t.call = append(t.call, frame{v: w})
				} else if t.onStack[w] {
					t.low[v] = min(t.low[v], t.index[w])
				}
				continue
			}
			t.call = t.call[:len(t.call)-1]
			if len(t.call) > 0 {
				p := t.call[len(t.call)-1].v
				t.low[p] = min(t.low[p], t.low[v])
			}
			if t.low[v] == t.index[v] {
				var members []int32
				for {
					w := t.stack[len(t.stack)-1]
					t.stack = t.stack[:len(t.stack)-1]
					t.onStack[w] = false
					comp[w] = int32(len(out))
					members = append(members, w)
					if w == v {
						break
					}
				}
				out = append(out, members)
			}
		}
	}
	return out
}
