package diagnose

import (
	"sort"
)

// work is one stage's work in one snapshot's period: the share of its
// accounted time it was busy, and the items it finished (busy < 0: the
// stage accounts no time, a black box).
type work struct {
	busy  float32
	items uint64
}

// stalledShare is how much of a period next to a run of STALLED snapshots
// the stage spent stalled: its busy time that the items it finished do not
// explain, at its own typical cost per item. A stall seldom starts or ends
// on a period's boundary; its edges fall in periods in which the stage
// also worked (so they are not STALLED), and counting whole snapshots
// alone reports a 650 ms stall as 500 ms and confirms a 250 ms one only
// when it happens to cover two periods. Work catching up a backlog after
// the stall is explained by its items, so it is not counted.
func stalledShare(w work, perItem float64) float64 {
	if w.busy < 0 {
		return 0
	}
	return min(max(float64(w.busy)-float64(w.items)*perItem, 0), 1)
}

// perItemCost is a stage's typical busy share of a period per item: the
// median over the periods it worked and was not stalled (0: none).
func perItemCost(works [][]work, labels [][]Label, m int) float64 {
	var v []float64
	for s := range works {
		w := works[s][m]
		if w.busy >= 0 && w.items > 0 && labels[s][m] != Stalled {
			v = append(v, float64(w.busy)/float64(w.items))
		}
	}
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	return v[len(v)/2]
}

// stallLength is a run's estimated length in periods: its STALLED
// snapshots and the stalled shares of the periods on either side.
func stallLength(r Stretch, works [][]work, labels [][]Label, perItem float64) (length, before, after float64) {
	edge := func(s int) float64 {
		if s < 0 || s >= len(works) || labels[s][r.Module] == Stalled {
			return 0
		}
		return stalledShare(works[s][r.Module], perItem)
	}
	before, after = edge(r.From-1), edge(r.To+1)
	return float64(r.Len()) + before + after, before, after
}
