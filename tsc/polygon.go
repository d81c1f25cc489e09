package tsc

import (
	"errors"
	"fmt"
	"math"
)

// LinearRelation is the tighter, still strict relation between B's TSC and
// A's: every probe constrains the mapping a = α·b + β twice (A's send
// before B's receive, B's reply before A's return). The constraints'
// intersection is a convex polygon in (α, β); the bound of a B tick is the
// range of α·b + β over the polygon. It uses all probes, so it is never
// wider than the MinRTT bound, and an empty polygon means the linear model
// broke (a clock step, a migration): then there is no bound at all.
type LinearRelation struct {
	// Centring keeps the arithmetic exact enough in float64: TSC values
	// are ~1e15, their differences within a window ~1e11.
	b0, a0   uint64
	bMin     uint64 // the probed window in B ticks
	bMax     uint64
	vertices [][2]float64 // (α, β) in centred coordinates
	Probes   int
}

// ErrNoBound says the probes admit no linear relation: report no bound.
var ErrNoBound = errors.New("no linear relation fits the probes (clock step or migration?): no bound")

// margin widens every constraint by a tick to absorb float rounding.
const margin = 1.0

// NewLinearRelationBoth intersects the constraints of every valid probe
// of A probing B, and of every one in the other direction (reverse, nil:
// none; B probing A: their A fields are B's stamps and their B fields
// A's). Those constrain the same mapping: α·(B's send) + β ≤ A's receive
// and A's reply ≤ α·(B's return) + β.
func NewLinearRelationBoth(probes, reverse []Probe) (*LinearRelation, error) {
	ps := make([]Probe, 0, len(probes))
	for _, p := range probes {
		if p.Valid() {
			ps = append(ps, p)
		}
	}
	var rs []Probe
	for _, p := range reverse {
		if p.Valid() {
			rs = append(rs, p)
		}
	}
	if len(ps) == 0 {
		return nil, errors.New("no valid probes")
	}
	ps = sortProbes(ps)
	r := &LinearRelation{b0: ps[0].BRecv, a0: ps[0].ASend, bMin: ps[0].BRecv, bMax: ps[0].BReply, Probes: len(ps)}
	for _, p := range ps {
		r.bMin, r.bMax = min(r.bMin, p.BRecv), max(r.bMax, p.BReply)
	}
	// Start from a box around plausible relations: α within a factor of 4
	// of the end-to-end ratio (TSC frequencies of real machines differ far
	// less), β wide enough for any window.
	first, last := ps[0], ps[len(ps)-1]
	alpha := 1.0
	if db := float64(int64(last.BRecv - first.BRecv)); db > 0 {
		alpha = float64(int64(last.ASend+last.ABack-first.ASend-first.ABack)) / 2 / db
	}
	if !(alpha > 0) || math.IsInf(alpha, 0) {
		alpha = 1
	}
	span := float64(r.bMax-r.bMin) + float64(last.ABack-first.ASend) + 1e9
	bigB := 8 * alpha * span
	poly := [][2]float64{{alpha / 4, -bigB}, {alpha * 4, -bigB}, {alpha * 4, bigB}, {alpha / 4, bigB}}
	for _, p := range ps {
		bRecv, bReply := r.cb(p.BRecv), r.cb(p.BReply)
		aSend, aBack := r.ca(p.ASend), r.ca(p.ABack)
		// α·bRecv + β ≥ aSend - margin
		poly = clip(poly, bRecv, 1, aSend-margin)
		// α·bReply + β ≤ aBack + margin  <=>  -α·bReply - β ≥ -aBack - margin
		poly = clip(poly, -bReply, -1, -aBack-margin)
		if len(poly) == 0 {
			return nil, ErrNoBound
		}
	}
	for _, p := range rs {
		bSend, bBack := r.cb(p.ASend), r.cb(p.ABack)
		aRecv, aReply := r.ca(p.BRecv), r.ca(p.BReply)
		// α·bSend + β ≤ aRecv + margin  <=>  -α·bSend - β ≥ -aRecv - margin
		poly = clip(poly, -bSend, -1, -aRecv-margin)
		// α·bBack + β ≥ aReply - margin
		poly = clip(poly, bBack, 1, aReply-margin)
		if len(poly) == 0 {
			return nil, ErrNoBound
		}
	}
	r.vertices = poly
	return r, nil
}

func (r *LinearRelation) cb(b uint64) float64 { return float64(int64(b - r.b0)) }
func (r *LinearRelation) ca(a uint64) float64 { return float64(int64(a - r.a0)) }

// clip keeps the part of convex polygon poly where u·α + v·β ≥ c
// (Sutherland-Hodgman against one half-plane).
func clip(poly [][2]float64, u, v, c float64) [][2]float64 {
	out := make([][2]float64, 0, len(poly)+1)
	f := func(p [2]float64) float64 { return u*p[0] + v*p[1] - c }
	for i := range poly {
		p, q := poly[i], poly[(i+1)%len(poly)]
		fp, fq := f(p), f(q)
		if fp >= 0 {
			out = append(out, p)
		}
		if (fp >= 0) != (fq >= 0) {
			t := fp / (fp - fq)
			out = append(out, [2]float64{p[0] + t*(q[0]-p[0]), p[1] + t*(q[1]-p[1])})
		}
	}
	return out
}

// Window is the probed range of B ticks.
func (r *LinearRelation) Window() (uint64, uint64) { return r.bMin, r.bMax }

// Alpha returns the range of the slope α (A ticks per B tick).
func (r *LinearRelation) Alpha() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range r.vertices {
		lo, hi = math.Min(lo, v[0]), math.Max(hi, v[0])
	}
	return lo, hi
}

// Translate maps B tick b into A's domain: every relation the probes allow
// puts it inside the returned bound.
func (r *LinearRelation) Translate(b uint64) (Bound, error) {
	if b < r.bMin || b > r.bMax {
		return Bound{}, fmt.Errorf("%w (B window %d..%d, got %d)", ErrOutsideWindow, r.bMin, r.bMax, b)
	}
	x := r.cb(b)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range r.vertices {
		a := v[0]*x + v[1]
		lo, hi = math.Min(lo, a), math.Max(hi, a)
	}
	return Bound{Value: float64(r.a0) + (lo+hi)/2, Err: (hi - lo) / 2}, nil
}

// Duration translates a duration between two B ticks into A ticks: the
// range of α·(b2-b1) over the polygon.
func (r *LinearRelation) Duration(b1, b2 uint64) (Bound, error) {
	for _, b := range []uint64{b1, b2} {
		if b < r.bMin || b > r.bMax {
			return Bound{}, ErrOutsideWindow
		}
	}
	d := float64(int64(b2 - b1))
	lo, hi := r.Alpha()
	x, y := lo*d, hi*d
	return Bound{Value: (x + y) / 2, Err: math.Abs(y-x) / 2}, nil
}

// Range maps an interval [lo, hi] of B ticks into A's domain: every
// relation the probes allow puts every point of it inside the result.
// The mapping is increasing (α > 0), so the low end's minimum and the high
// end's maximum over the polygon bound it.
func (r *LinearRelation) Range(lo, hi float64) (float64, float64, error) {
	if lo < float64(r.bMin) || hi > float64(r.bMax) || lo > hi {
		return 0, 0, ErrOutsideWindow
	}
	xl, xh := lo-float64(r.b0), hi-float64(r.b0)
	minA, maxA := math.Inf(1), math.Inf(-1)
	for _, v := range r.vertices {
		minA = math.Min(minA, v[0]*xl+v[1])
		maxA = math.Max(maxA, v[0]*xh+v[1])
	}
	return float64(r.a0) + minA, float64(r.a0) + maxA, nil
}

// DurationAcross is Scenario 3 (§3.3.4) with polygon relations: from an
// event on B to one on C, neither the reference A. The end is bounded in
// B's ticks through bc (C -> B), and that duration is scaled by every slope
// ab (B -> A) allows.
func DurationAcross(ab, bc *LinearRelation, startB, endC uint64) (Bound, error) {
	if startB < ab.bMin || startB > ab.bMax {
		return Bound{}, ErrOutsideWindow
	}
	end, err := bc.Translate(endC)
	if err != nil {
		return Bound{}, err
	}
	dLo, dHi := end.Value-end.Err-float64(startB), end.Value+end.Err-float64(startB)
	aLo, aHi := ab.Alpha()
	lo := math.Min(math.Min(aLo*dLo, aLo*dHi), math.Min(aHi*dLo, aHi*dHi))
	hi := math.Max(math.Max(aLo*dLo, aLo*dHi), math.Max(aHi*dLo, aHi*dHi))
	return Bound{Value: (lo + hi) / 2, Err: (hi - lo) / 2}, nil
}
