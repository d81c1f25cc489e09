package diagnose

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cloudprofiler-go/cp/stage"
)

// threadFull says whether the thread that operators on run on limits: its
// operators' busy times, which add up on it, make it busy at least the
// Saturated share, or the Busy share while work waits for one of them
// from outside the thread (each operator of a chain blocks the one before
// it on the same thread while it works: that is the thread's own order,
// not pressure). busy is the thread's busy share.
func (b *Bottlenecks) threadFull(on []int32, act []Activity) (busy float64, ok bool) {
	for _, x := range on {
		busy += act[x].Busy
	}
	busy = min(busy, 1)
	if busy >= b.th.Saturated {
		return busy, true
	}
	if busy < b.th.Busy {
		return busy, false
	}
	for _, x := range on {
		if b.pressedFromOutside(int(x), on, act) {
			return busy, true
		}
	}
	return busy, false
}

// pressedFromOutside is pressed with only the stages off m's thread
// counted as blocked for it.
func (b *Bottlenecks) pressedFromOutside(m int, on []int32, act []Activity) bool {
	a := &act[m]
	if b.grows(a) || full(a) {
		return true
	}
	for _, x := range b.box[m] {
		if b.grows(&act[x]) {
			return true
		}
	}
	outside := 0
	for _, u := range b.up[m] {
		if slices.Contains(on, u) {
			continue
		}
		outside++
		if act[u].Blocked >= b.th.Blocked {
			return true
		}
	}
	return len(b.g.parents[m]) == 0 && outside == 0 // a root: its work is its schedule
}

// busiest is the operator of on that was busy longest.
func (b *Bottlenecks) busiest(on []int32, act []Activity) int {
	best := on[0]
	for _, x := range on[1:] {
		if act[x].Busy > act[best].Busy {
			best = x
		}
	}
	return int(best)
}

// threadEvidence names a full shared thread, or its operator m when m
// was most of it, with each operator's busy share and the most blocked
// stage before the thread: "ysb/pipeline thread 0: ysb/filter 47%,
// ysb/join 50% (busy 97%), ysb/input blocked 96%", "ysb/join: busy 88%,
// on ysb/pipeline thread 0 with ysb/filter 6%, ysb/input blocked 90%".
// The operators before m on its thread are blocked while it works: that
// is the thread's order, not pressure, and is not said.
func (b *Bottlenecks) threadEvidence(m int, on []int32, act []Activity) (name, evidence string) {
	g := b.g
	thread := g.Modules[m].Thread
	var total float64
	var shares, others []string
	for _, x := range on {
		total += act[x].Busy
		share := g.Modules[x].Name + " " + pct(act[x].Busy)
		shares = append(shares, share)
		if int(x) != m {
			others = append(others, share)
		}
	}
	name, evidence = thread, fmt.Sprintf("%s: %s (busy %s)", thread, strings.Join(shares, ", "), pct(min(total, 1)))
	if act[m].Busy >= stage.SoleShare*total {
		name = g.Modules[m].Name
		evidence = fmt.Sprintf("%s: busy %s, on %s with %s", name, pct(act[m].Busy), thread, strings.Join(others, ", "))
	}
	best := int32(-1)
	for _, x := range on {
		for _, u := range b.up[x] {
			if !slices.Contains(on, u) && (best < 0 || act[u].Blocked > act[best].Blocked) {
				best = u
			}
		}
	}
	if best >= 0 && act[best].Blocked >= 0.005 {
		evidence += ", " + g.Modules[best].Name + " blocked " + pct(act[best].Blocked)
	}
	return name, evidence
}
