package probing

import (
	"fmt"

	"github.com/cloudprofiler-go/cp/tsc"
)

// Points is the one rule by which a node's TSC value becomes the reference
// node's ticks, with a strict bound: exact on the reference and on every
// node that reads its clock (agents on one machine read one TSC: the same
// boot id, both the TSC or both the monotonic fallback); elsewhere the
// narrower of the tighter relation (all probes) and the paper's (MinRTT).
// The analyses' join and the diagnosis's alignment both translate by it.
// Nodes are indices of the list it was made for, so that a hot path does
// no map lookups.
type Points struct {
	Reference string
	Names     []string
	// IsRef marks the reference and every node on its clock.
	IsRef []bool
	// Clock numbers the nodes' clocks: equal for nodes on one machine.
	Clock    []int
	Lin      []*tsc.LinearRelation // node -> reference (nil: none)
	Paper    []*tsc.PaperRelation  // node -> reference (nil: none)
	Problems []string              // relations that could not be made
	index    map[string]int
}

// PointsFor prepares the translation of nodes' values.
func (rf *RelationFile) PointsFor(nodes []string) *Points {
	p := &Points{Reference: rf.Reference, Names: nodes, IsRef: make([]bool, len(nodes)), Clock: clocks(rf, nodes),
		Lin: make([]*tsc.LinearRelation, len(nodes)), Paper: make([]*tsc.PaperRelation, len(nodes)), index: map[string]int{}}
	ref := -1
	for i, n := range nodes {
		p.index[n] = i
		if n == rf.Reference {
			ref = i
		}
	}
	for i, n := range nodes {
		if n == rf.Reference || (ref >= 0 && p.Clock[i] == p.Clock[ref]) {
			p.IsRef[i] = true
			continue
		}
		lin, err := rf.Linear(n, rf.Reference)
		if err != nil {
			p.Problems = append(p.Problems, fmt.Sprintf("%s -> %s: no tighter relation: %v", n, rf.Reference, err))
		} else {
			p.Lin[i] = lin
		}
		if pr, err := rf.Paper(n); err == nil {
			p.Paper[i] = pr
		}
	}
	return p
}

// Index is a node's index (false: not one of the nodes).
func (p *Points) Index(name string) (int, bool) {
	i, ok := p.index[name]
	return i, ok
}

// At translates node i's TSC value into the reference's ticks: the
// narrower of the two bounds. ok is false when there is none.
func (p *Points) At(i int, v uint64) (tsc.Bound, bool) {
	if p.IsRef[i] {
		return tsc.Bound{Value: float64(v)}, true
	}
	best, ok := tsc.Bound{}, false
	if lin := p.Lin[i]; lin != nil {
		if b, err := lin.Translate(v); err == nil {
			best, ok = b, true
		}
	}
	if pr := p.Paper[i]; pr != nil {
		if a, e, err := pr.Translate(v); err == nil && (!ok || e < best.Err) {
			best, ok = tsc.Bound{Value: a, Err: e}, true
		}
	}
	return best, ok
}

// clocks numbers each node's clock (Info.Clock): nodes on one machine
// reading the same kind of counter share one; any other node, and one
// whose clock is unknown, has its own.
func clocks(rf *RelationFile, nodes []string) []int {
	byName := map[string]string{}
	for _, n := range rf.Nodes {
		if c := n.Info.Clock(); c != "" {
			byName[n.Name] = c
		}
	}
	ids := map[string]int{}
	out := make([]int, len(nodes))
	for i, n := range nodes {
		c, ok := byName[n]
		if !ok {
			out[i] = -1 - i // a clock of its own
			continue
		}
		if _, seen := ids[c]; !seen {
			ids[c] = i
		}
		out[i] = ids[c]
	}
	return out
}
