package diagnose

import "fmt"

// A black box (the transport between the harness's agents, a relay, a
// broker) accounts no time of its own, so neither service-rate method of
// package servicerate applies to it. What shows its capacity is its
// output while it was backlogged: in a period in which the stages after
// it waited for it (they idled) while work waited in front of it (the
// stage before it was blocked on it, or its queue grew over the window),
// it delivered as fast as it could, and what it delivered in such periods
// over their length is its service rate. Below its capacity a box is
// never backlogged for long, so the rate exists only in trials near or
// above it; elsewhere it says why not.

// Minimums before a black box's backlog rate is said: as for busy_time
// (docs/service-rate.md), a handful of periods holding a real share of
// what the box passed, not one period's noise.
const (
	BoxRateMinPeriods = 3
	BoxRateMinShare   = 0.10
	BoxRateMinNs      = 20e6
)

// BoxRate is a black box's service rate from its backlogged periods.
type BoxRate struct {
	Stage string `json:"stage"`
	// PerS is the items (buckets) it delivered per second of its
	// backlogged periods (0: none said; Why says why).
	PerS float64 `json:"items_per_s"`
	// Periods are its backlogged periods in the window, of Total.
	Periods int `json:"periods"`
	Total   int `json:"window_periods"`
	// Share is the share of the items it delivered in the window that
	// fell in those periods.
	Share float64 `json:"share"`
	Why   string  `json:"why,omitempty"`
}

// boxRates measures every black box's backlogged output over the
// snapshots lo..hi, with the thresholds that named the window's limit
// (bn); win is the window's activity (its queue growth). Each period's
// activity is computed once, for every box.
func (t *Timeline) boxRates(bn *Bottlenecks, lo, hi int, win []Activity) []BoxRate {
	g := t.Graph
	type tally struct {
		m          int
		grew       bool
		items, all uint64
		ns         int64
		periods    int
	}
	var boxes []tally
	for m := range g.Modules {
		if !t.Timed[m] {
			boxes = append(boxes, tally{m: m, grew: bn.grows(&win[m])})
		}
	}
	if len(boxes) == 0 {
		return nil
	}
	act := make([]Activity, g.Len())
	for s := lo + 1; s <= hi; s++ {
		t.activity(s-1, s, act)
		for i := range boxes {
			b := &boxes[i]
			b.all += act[b.m].Items
			if !bn.downIdle(b.m, act) || !(b.grew || bn.upBlocked(b.m, act)) {
				continue
			}
			b.periods++
			b.items += act[b.m].Items
			b.ns += t.UnixNs[s] - t.UnixNs[s-1]
		}
	}
	out := make([]BoxRate, 0, len(boxes))
	for _, b := range boxes {
		r := BoxRate{Stage: g.Modules[b.m].Name, Total: hi - lo, Periods: b.periods}
		if b.all > 0 {
			r.Share = float64(b.items) / float64(b.all)
		}
		switch {
		case r.Periods == 0:
			r.Why = "never backlogged: the stages after it never waited for it while work waited in front of it"
		case r.Periods < BoxRateMinPeriods || float64(b.ns) < BoxRateMinNs || r.Share < BoxRateMinShare:
			r.Why = fmt.Sprintf("backlogged in %d of %d periods (%.0f ms, %.0f%% of what it passed): too few to say a rate", r.Periods, r.Total, float64(b.ns)/1e6, 100*r.Share)
		default:
			r.PerS = float64(b.items) / (float64(b.ns) / 1e9)
		}
		out = append(out, r)
	}
	return out
}
