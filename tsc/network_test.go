package tsc

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// nodeClock is a node's TSC as a function of reference time t (A's ticks).
type nodeClock struct{ scale, offset float64 }

func (c nodeClock) at(t float64) uint64 { return uint64(c.scale*t + c.offset) }

// probesBetween simulates from probing to over the window, with the given
// one-way delay model (in reference ticks).
func probesBetween(rng *rand.Rand, from, to nodeClock, d delays, start float64, n int) []Probe {
	var ps []Probe
	for i := 0; i < n; i++ {
		t := start + float64(i)*1e6
		fwd, rev := d.fwd+rng.ExpFloat64()*d.fwdJitter, d.rev+rng.ExpFloat64()*d.revJitter
		ps = append(ps, Probe{ASend: from.at(t), BRecv: to.at(t + fwd), BReply: to.at(t + fwd + d.proc), ABack: from.at(t + fwd + d.proc + rev)})
	}
	return ps
}

// link builds the relation mapping x's ticks into y's domain from probes
// in both directions, before and after.
func link(t *testing.T, rng *rand.Rand, x, y nodeClock, d delays) *LinearRelation {
	t.Helper()
	yx := append(probesBetween(rng, y, x, d, 1e9, 50), probesBetween(rng, y, x, d, 9e9, 50)...) // y probes x: y is A
	xy := append(probesBetween(rng, x, y, d, 1e9+3e5, 50), probesBetween(rng, x, y, d, 9e9+3e5, 50)...)
	r, err := NewLinearRelationBoth(yx, xy)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestNetworkTightensThroughAGoodPath: C has a slow link to the reference
// A (a WAN hop: 200/300 us one way) but quiet ones to B, which has a quiet
// link to A. The bound via B is far tighter than the direct one, and the
// truth stays inside.
func TestNetworkTightensThroughAGoodPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	a := nodeClock{scale: 1, offset: 0}
	b := nodeClock{scale: 0.75 * (1 + 50e-6), offset: 3e11}
	c := nodeClock{scale: 1.2 * (1 - 80e-6), offset: 7e11}
	noisy := delays{fwd: 200e3, fwdJitter: 400e3, rev: 300e3, revJitter: 900e3, proc: 2e3}
	net := &Network{Links: map[string]map[string]*LinearRelation{
		"a": {"b": link(t, rng, a, b, quietLAN), "c": link(t, rng, a, c, noisy)},
		"b": {"a": link(t, rng, b, a, quietLAN), "c": link(t, rng, b, c, quietLAN)},
		"c": {"a": link(t, rng, c, a, noisy), "b": link(t, rng, c, b, quietLAN)},
	}}
	var direct, tight float64
	for q := 0; q < 500; q++ {
		tRef := 2e9 + rng.Float64()*6e9
		v := c.at(tRef)
		d, err := net.Links["c"]["a"].Translate(v)
		if err != nil || !d.Contains(tRef) {
			t.Fatalf("direct: %+v (%v), truth %v", d, err, tRef)
		}
		got, err := net.Tighten("c", v, "a")
		if err != nil || !got.Contains(tRef) || got.Err > d.Err+margin {
			t.Fatalf("tightened: %+v (%v), direct %+v, truth %v", got, err, d, tRef)
		}
		direct, tight = direct+d.Err, tight+got.Err
	}
	t.Logf("C -> A: mean half-width direct %.0f ticks, through every path %.0f ticks", direct/500, tight/500)
	if tight > 0.5*direct {
		t.Fatalf("the path through B did not tighten the bound (%.0f vs %.0f)", tight/500, direct/500)
	}
}

// TestNetworkReportsInconsistency: one link's probes saw a clock the others
// did not (B stepped for them): intervals from different paths cannot both
// hold, and Tighten says so instead of returning either.
func TestNetworkReportsInconsistency(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	a := nodeClock{scale: 1, offset: 0}
	b := nodeClock{scale: 1, offset: 5e11}
	bStepped := nodeClock{scale: 1, offset: 5e11 + 5e6} // 5 ms off, only on the B-C link
	c := nodeClock{scale: 1, offset: 9e11}
	net := &Network{Links: map[string]map[string]*LinearRelation{
		"a": {"b": link(t, rng, a, b, quietLAN), "c": link(t, rng, a, c, quietLAN)},
		"b": {"a": link(t, rng, b, a, quietLAN), "c": link(t, rng, bStepped, c, quietLAN)},
		"c": {"a": link(t, rng, c, a, quietLAN), "b": link(t, rng, c, bStepped, quietLAN)},
	}}
	_, err := net.Tighten("b", b.at(5e9), "a")
	if !errors.Is(err, ErrInconsistent) {
		t.Fatalf("contradictory links gave %v", err)
	}
}
