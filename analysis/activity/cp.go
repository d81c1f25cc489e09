package activity

import "math"

// traversable says whether the critical path may take e.
func traversable(e *Edge) bool { return !e.Waiting && !e.Ambiguous }

// logAdd is log(e^a + e^b).
func logAdd(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(b, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// criticalParticipation counts, for every traversable edge, the paths
// from the window's start to its source and from its destination to the
// window's end (a forward and a backward exploration, as SnailTrail's
// betweenness code does), in log space, and sets CP(e) = N(e)/N ×
// duration(e)/T. Waiting and ambiguous edges are not traversed (CP 0).
// The order is Kahn's topological order: every traversable edge goes
// forward in time or, a message received at the instant it was sent,
// stays at it; vertices on a cycle of such instants get no paths.
func (b *Builder) criticalParticipation(w *Window) {
	nv := len(b.vtime)
	b.logF, b.logB = resize(b.logF, nv), resize(b.logB, nv)
	b.indeg, b.outAt = resize32(b.indeg, nv), resize32(b.outAt, nv+1)
	// A path runs from the window's start to its end: the start reaches
	// every worker's vertex at the start, the vertices at the end reach
	// the end (a worker that begins or ends inside the window is reached
	// or left only by messages). Each path's edges then add up to T, and a
	// window's CP to 1.
	for v := range nv {
		b.logF[v], b.logB[v] = math.Inf(-1), math.Inf(-1)
		b.indeg[v], b.outAt[v] = 0, 0
	}
	b.outAt[nv] = 0
	for wk := range b.firstV {
		if f := b.firstV[wk]; f >= 0 && b.vtime[f] == w.StartNs {
			b.logF[f] = 0
		}
		if l := b.lastV[wk]; l >= 0 && b.vtime[l] == w.EndNs {
			b.logB[l] = 0
		}
	}
	direct := math.Inf(-1) // start -> end in one remote edge
	for i := range w.Edges {
		e := &w.Edges[i]
		if !traversable(e) {
			continue
		}
		switch {
		case e.from == source && e.to == sink:
			direct = logAdd(direct, 0)
		case e.from == source:
			b.logF[e.to] = logAdd(b.logF[e.to], 0)
		case e.to == sink:
			b.logB[e.from] = logAdd(b.logB[e.from], 0)
		default:
			b.outAt[e.from+1]++
			b.indeg[e.to]++
		}
	}
	b.explore(w)
	b.assign(w, direct)
}

// explore orders the vertices (Kahn) and counts the paths to and from each
// (logF, logB), over the traversable edges between vertices.
func (b *Builder) explore(w *Window) {
	nv := len(b.vtime)
	for v := range nv {
		b.outAt[v+1] += b.outAt[v]
	}
	b.outE = resize32(b.outE, int(b.outAt[nv]))
	fill := b.order[:0] // borrowed as the fill cursor, then the order
	fill = append(fill, b.outAt[:nv]...)
	for i := range w.Edges {
		if e := &w.Edges[i]; traversable(e) && e.from >= 0 && e.to >= 0 {
			b.outE[fill[e.from]] = int32(i)
			fill[e.from]++
		}
	}
	order := fill[:0]
	for v := range nv {
		if b.indeg[v] == 0 {
			order = append(order, int32(v))
		}
	}
	for k := 0; k < len(order); k++ {
		v := order[k]
		for _, ei := range b.outE[b.outAt[v]:b.outAt[v+1]] {
			to := w.Edges[ei].to
			b.logF[to] = logAdd(b.logF[to], b.logF[v])
			if b.indeg[to]--; b.indeg[to] == 0 {
				order = append(order, to)
			}
		}
	}
	b.order = order
	if len(order) < nv { // a cycle of same-instant messages: no paths through it
		for v := range nv {
			if b.indeg[v] > 0 {
				b.logF[v] = math.Inf(-1)
			}
		}
	}
	for k := len(order) - 1; k >= 0; k-- {
		v := order[k]
		for _, ei := range b.outE[b.outAt[v]:b.outAt[v+1]] {
			b.logB[v] = logAdd(b.logB[v], b.logB[w.Edges[ei].to])
		}
	}
}

// assign sets every traversable edge's CP from the path counts.
func (b *Builder) assign(w *Window, direct float64) {
	total := direct
	for wk := range b.firstV {
		if l := b.lastV[wk]; l >= 0 && b.vtime[l] == w.EndNs {
			total = logAdd(total, b.logF[l])
		}
	}
	for i := range w.Edges {
		e := &w.Edges[i]
		if e.to == sink && e.from >= 0 && traversable(e) {
			total = logAdd(total, b.logF[e.from])
		}
	}
	w.Paths = total
	if math.IsInf(total, -1) {
		return
	}
	T := float64(w.EndNs - w.StartNs)
	for i := range w.Edges {
		e := &w.Edges[i]
		if !traversable(e) {
			continue
		}
		f, bk := 0.0, 0.0
		if e.from >= 0 {
			f = b.logF[e.from]
		}
		if e.to >= 0 {
			bk = b.logB[e.to]
		}
		if !math.IsInf(f, -1) && !math.IsInf(bk, -1) {
			e.CP = math.Exp(f+bk-total) * float64(e.Duration()) / T
		}
	}
}
