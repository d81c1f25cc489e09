package tsc

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Probe is one round trip from node A to node B, in each node's own TSC
// ticks: A sent at ASend, B received at BRecv and replied at BReply, and
// the reply reached A at ABack. Whatever the network did, B's receive
// happened after A's send and B's reply before A's return.
type Probe struct {
	ASend  uint64 `json:"a_send"`
	BRecv  uint64 `json:"b_recv"`
	BReply uint64 `json:"b_reply"`
	ABack  uint64 `json:"a_back"`
}

// RTT is the round trip in A's ticks.
func (p Probe) RTT() uint64 { return p.ABack - p.ASend }

// Valid reports whether the stamps are ordered on each node.
func (p Probe) Valid() bool { return p.ABack > p.ASend && p.BReply >= p.BRecv }

// MinRTT returns the probe with the smallest round trip (the paper's
// MinRTT, §5.2) among probes, and false if there are none.
func MinRTT(probes []Probe) (Probe, bool) {
	best, ok := Probe{}, false
	for _, p := range probes {
		if p.Valid() && (!ok || p.RTT() < best.RTT()) {
			best, ok = p, true
		}
	}
	return best, ok
}

// Point is a B tick placed in A's domain as a value with an uncertainty:
// the B event happened at A tick A ± Err (Eq. 3).
type Point struct {
	B   uint64
	A   float64
	Err float64
}

// pointOf places a probe's B receive in A's domain: it happened inside the
// round trip, so its best estimate is the midpoint and its error half the
// round trip (the paper's e).
func pointOf(p Probe) Point {
	return Point{B: p.BRecv, A: float64(p.ASend) + float64(p.RTT())/2, Err: float64(p.RTT()) / 2}
}

// PaperRelation is the paper's relation between B's and A's TSC domains
// (§3.1-3.2): two MinRTT probes, one before and one after the experiment,
// give the ratio r (Eq. 2) and a translation of any B tick between them
// with error e, the larger of the two half round trips (Eq. 7).
type PaperRelation struct {
	Start, End Point
	R          float64 // r_B^A: A ticks per B tick (Eq. 2)
	E          float64 // e = max(δc_j, δc_m)
}

// ErrOutsideWindow is returned for a B tick outside the probed window:
// the bound is only valid between the two probes, so it is not
// extrapolated.
var ErrOutsideWindow = errors.New("TSC value outside the probed window: probe before and after the events you translate")

// NewPaperRelation builds the relation from the probes taken before the
// experiment and those taken after it.
func NewPaperRelation(before, after []Probe) (*PaperRelation, error) {
	pj, ok1 := MinRTT(before)
	pm, ok2 := MinRTT(after)
	if !ok1 || !ok2 {
		return nil, errors.New("need valid probes both before and after the experiment")
	}
	j, m := pointOf(pj), pointOf(pm)
	if m.B <= j.B || m.A <= j.A {
		return nil, fmt.Errorf("the probes after the experiment are not later than those before it (B %d..%d, A %.0f..%.0f)", j.B, m.B, j.A, m.A)
	}
	return &PaperRelation{Start: j, End: m, R: (m.A - j.A) / float64(m.B-j.B), E: math.Max(j.Err, m.Err)}, nil
}

// Span is the B-domain length of the probed window, d^B_[j,m].
func (r *PaperRelation) Span() float64 { return float64(r.End.B - r.Start.B) }

func (r *PaperRelation) inside(b uint64) bool { return b >= r.Start.B && b <= r.End.B }

// Translate maps a B tick into A's domain with the bound e (Eq. 4 and §3.2).
func (r *PaperRelation) Translate(b uint64) (a, err float64, e error) {
	if !r.inside(b) {
		return 0, 0, ErrOutsideWindow
	}
	return r.Start.A + r.R*float64(b-r.Start.B), r.E, nil
}

// Duration translates d B ticks measured on B alone into A ticks
// (Scenario 1): error 2·d/D·e, D the probed window in B ticks.
func (r *PaperRelation) Duration(d float64) (float64, float64) {
	return r.R * d, 2 * math.Abs(d) / r.Span() * r.E
}

// Bound is a value in the reference domain with its strict error bound:
// the true value lies in [Value-Err, Value+Err].
type Bound struct {
	Value float64 `json:"value"`
	Err   float64 `json:"err"`
}

// Contains reports whether x lies inside the bound.
func (b Bound) Contains(x float64) bool { return x >= b.Value-b.Err && x <= b.Value+b.Err }

// TrivialDuration is a duration between two events on the reference node:
// no translation, no error (§3.3.1).
func TrivialDuration(startA, endA uint64) Bound {
	return Bound{Value: float64(int64(endA - startA))}
}

// DurationOnOneNode is Scenario 1 (§3.3.2): both events on non-reference
// node B, rel relating B to the reference A.
func DurationOnOneNode(rel *PaperRelation, startB, endB uint64) (Bound, error) {
	if !rel.inside(startB) || !rel.inside(endB) {
		return Bound{}, ErrOutsideWindow
	}
	v, e := rel.Duration(float64(int64(endB - startB)))
	return Bound{Value: v, Err: e}, nil
}

// DurationFromReference is Scenario 2 (§3.3.3): from an event on the
// reference node A to one on node B (error e).
func DurationFromReference(rel *PaperRelation, startA, endB uint64) (Bound, error) {
	a, e, err := rel.Translate(endB)
	if err != nil {
		return Bound{}, err
	}
	return Bound{Value: a - float64(startA), Err: e}, nil
}

// DurationAcrossNonReference is Scenario 3 (§3.3.4): from an event on B to
// one on C, neither the reference A. C's event is first related to B
// (bc: C -> B, Scenario 2 with B as the tentative reference), then the
// duration on B is translated to A (ab: B -> A, Scenario 1). Error (Eq. 8):
// 2·d^B/D^B·e_AB + r_B^A·e_BC, with r replaced by its upper bound.
func DurationAcrossNonReference(ab, bc *PaperRelation, startB, endC uint64) (Bound, error) {
	cB, eBC, err := bc.Translate(endC)
	if err != nil {
		return Bound{}, err
	}
	if !ab.inside(startB) {
		return Bound{}, ErrOutsideWindow
	}
	dB := cB - float64(startB)
	v, e := ab.Duration(dB)
	// The paper multiplies e_BC by r; the true ratio may be up to
	// r + 2e/D, and the bound must hold for it.
	return Bound{Value: v, Err: e + (ab.R+2*ab.E/ab.Span())*eBC}, nil
}

// DurationBaseline is the paper's baseline (§3.3.5) for the same case:
// translate both events to A separately and subtract (error 2e).
func DurationBaseline(ab, ac *PaperRelation, startB, endC uint64) (Bound, error) {
	u, eu, err := ab.Translate(startB)
	if err != nil {
		return Bound{}, err
	}
	v, ev, err := ac.Translate(endC)
	if err != nil {
		return Bound{}, err
	}
	return Bound{Value: v - u, Err: eu + ev}, nil
}

// FrequencyFromProbes derives B's TSC frequency from A's (hzA) through the
// ratio of the two MinRTT probes (§5.2).
func (r *PaperRelation) FrequencyFromProbes(hzA float64) float64 { return hzA / r.R }

// sortProbes orders probes by A send time (a copy).
func sortProbes(probes []Probe) []Probe {
	out := append([]Probe(nil), probes...)
	sort.Slice(out, func(i, j int) bool { return out[i].ASend < out[j].ASend })
	return out
}
