package tsc

import (
	"errors"
	"fmt"
	"math"
)

// Network relates the TSCs of several nodes pairwise (Links[from][to] maps
// from's ticks into to's domain). Translating a value through other nodes
// is as strict as the direct relation, and sometimes much tighter (a node
// with a poor link to the reference but a good one to a well-connected
// node): Tighten intersects every path's interval.
type Network struct {
	Links map[string]map[string]*LinearRelation
}

// ErrInconsistent says the pairwise relations contradict each other: some
// node's intervals from different paths do not overlap (a broken link, or a
// clock step seen by some probes only).
var ErrInconsistent = errors.New("the pairwise relations contradict each other: no consistent bound")

// Tighten bounds a value v of node from in node to's domain using every
// path (Bellman-Ford over intervals: each round relaxes every link, and the
// intervals only shrink, so |nodes| rounds reach the fixed point).
func (n *Network) Tighten(from string, v uint64, to string) (Bound, error) {
	type interval struct{ lo, hi float64 }
	best := map[string]interval{from: {float64(v), float64(v)}}
	nodes := len(n.Links) + 1
	for round := 0; round < nodes; round++ {
		changed := false
		for y, links := range n.Links {
			iy, ok := best[y]
			if !ok {
				continue
			}
			for z, rel := range links {
				lo, hi, err := rel.Range(iy.lo, iy.hi)
				if err != nil {
					continue // y's interval is outside this link's probed window
				}
				iz, seen := best[z]
				if !seen {
					best[z], changed = interval{lo, hi}, true
					continue
				}
				nlo, nhi := math.Max(iz.lo, lo), math.Min(iz.hi, hi)
				if nlo > nhi+2*margin {
					return Bound{}, fmt.Errorf("%w (%s: [%.0f, %.0f] vs [%.0f, %.0f] via %s)", ErrInconsistent, z, iz.lo, iz.hi, lo, hi, y)
				}
				if nlo > iz.lo || nhi < iz.hi {
					best[z], changed = interval{nlo, math.Max(nhi, nlo)}, true
				}
			}
		}
		if !changed {
			break
		}
	}
	it, ok := best[to]
	if !ok {
		return Bound{}, fmt.Errorf("no relation path from %s to %s covers this value", from, to)
	}
	return Bound{Value: (it.lo + it.hi) / 2, Err: (it.hi - it.lo) / 2}, nil
}
