package tsc

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// clockB is node B's TSC as a function of A's: b = (a - beta) / alpha, so
// that a = alpha·b + beta maps B ticks to A ticks exactly.
type clockB struct{ alpha, beta float64 }

func (c clockB) b(a float64) uint64 { return uint64(math.Round((a - c.beta) / c.alpha)) }
func (c clockB) a(b uint64) float64 { return c.alpha*float64(b) + c.beta }

// probe simulates one round trip starting at A tick at: forward and
// reverse one-way delays and B's processing time are in A ticks.
func (c clockB) probe(at, fwd, proc, rev float64) Probe {
	return Probe{ASend: uint64(at), BRecv: c.b(at + fwd), BReply: c.b(at + fwd + proc), ABack: uint64(math.Ceil(at + fwd + proc + rev))}
}

func TestPaperCasesByHand(t *testing.T) {
	// B runs twice as fast as A: a = 0.5·b - 500 (b = 2a + 1000).
	c := clockB{alpha: 0.5, beta: -500}
	before := []Probe{
		{ASend: 100, BRecv: c.b(108), BReply: c.b(108), ABack: 120}, // RTT 20: e_j = 10
		{ASend: 200, BRecv: c.b(230), BReply: c.b(230), ABack: 260}, // RTT 60: not the minimum
	}
	after := []Probe{{ASend: 10100, BRecv: c.b(10105), BReply: c.b(10105), ABack: 10110}} // RTT 10: e_m = 5
	rel, err := NewPaperRelation(before, after)
	if err != nil {
		t.Fatal(err)
	}
	// c_j^B = 1216, ĉ_j^A = 110; c_m^B = 21210, ĉ_m^A = 10105
	wantR := (10105.0 - 110.0) / (21210.0 - 1216.0)
	if rel.Start.B != 1216 || rel.Start.A != 110 || rel.End.B != 21210 || rel.End.A != 10105 || math.Abs(rel.R-wantR) > 1e-12 || rel.E != 10 {
		t.Fatalf("relation %+v, want r=%v e=10", rel, wantR)
	}
	// Eq. 4: c_y^A = ĉ_j^A + r·(c_y^B - c_j^B) ± e; the truth for b=11216 is 5108.
	a, e, err := rel.Translate(11216)
	if err != nil || math.Abs(a-(110+wantR*10000)) > 1e-9 || e != 10 || math.Abs(a-5108) > e {
		t.Fatalf("translate: %v ± %v (%v)", a, e, err)
	}
	if _, _, err := rel.Translate(100); !errors.Is(err, ErrOutsideWindow) {
		t.Fatal("a B tick before the window was translated")
	}
	// Scenario 1: 2000 B ticks on B = 1000 A ticks; error 2·2000/19994·10.
	d, err := DurationOnOneNode(rel, 5000, 7000)
	if err != nil || math.Abs(d.Value-2000*wantR) > 1e-9 || math.Abs(d.Err-2*2000.0/19994*10) > 1e-12 || !d.Contains(1000) {
		t.Fatalf("scenario 1: %+v (%v)", d, err)
	}
	// Scenario 2: from A tick 3000 to B tick 11216 (true 5108): 2108 ± e.
	d, err = DurationFromReference(rel, 3000, 11216)
	if err != nil || math.Abs(d.Value-(110+wantR*10000-3000)) > 1e-9 || d.Err != 10 || !d.Contains(2108) {
		t.Fatalf("scenario 2: %+v (%v)", d, err)
	}
	// Trivial: no error.
	if d := TrivialDuration(3000, 5108); d.Value != 2108 || d.Err != 0 {
		t.Fatalf("trivial: %+v", d)
	}
	// Frequency (§5.2): B runs at 2x A.
	if f := rel.FrequencyFromProbes(1e9); math.Abs(f-2e9)/2e9 > 1e-3 {
		t.Fatalf("B frequency %v, want ~2e9", f)
	}
}

func TestScenario3AndBaselineByHand(t *testing.T) {
	// A is the reference; B = A exactly (a = b), C = A + 1000 (a = c - 1000).
	b := clockB{alpha: 1, beta: 0}
	cA := clockB{alpha: 1, beta: -1000} // C relative to A
	cB := clockB{alpha: 1, beta: -1000} // C relative to B (B = A)
	mk := func(c clockB, at, rtt float64) []Probe { return []Probe{c.probe(at, rtt/2, 0, rtt/2)} }
	ab, _ := NewPaperRelation(mk(b, 0, 40), mk(b, 1e6, 40))   // e_AB = 20
	ac, _ := NewPaperRelation(mk(cA, 0, 60), mk(cA, 1e6, 60)) // e_AC = 30
	bc, _ := NewPaperRelation(mk(cB, 0, 60), mk(cB, 1e6, 60)) // e_BC = 30 (B as tentative reference)
	// Event u on B at A-time 500000, event v on C at A-time 500100: 100 ticks.
	u, v := b.b(500000), cA.b(500100)
	s3, err := DurationAcrossNonReference(ab, bc, u, v)
	if err != nil {
		t.Fatal(err)
	}
	base, err := DurationBaseline(ab, ac, u, v)
	if err != nil {
		t.Fatal(err)
	}
	// Scenario 3: 2·d/D·e_AB + r·e_BC = 2·100/1e6·20 + (1+2·20/1e6)·30.
	want3 := 2*100.0/1e6*20 + (1+2*20.0/1e6)*30
	if math.Abs(s3.Value-100) > 1e-6 || math.Abs(s3.Err-want3) > 1e-9 || !s3.Contains(100) {
		t.Fatalf("scenario 3: %+v, want 100 ± %v", s3, want3)
	}
	// Baseline: e_AB + e_AC = 2e when both are e; here 20 + 30.
	if math.Abs(base.Value-100) > 1e-6 || base.Err != 50 || !base.Contains(100) || base.Err <= s3.Err {
		t.Fatalf("baseline: %+v (scenario 3 %+v)", base, s3)
	}
}

func TestLinearRelationDegenerateInputs(t *testing.T) {
	c := clockB{alpha: 0.75, beta: -1e12}
	one := []Probe{c.probe(1e9, 20e3, 1e3, 30e3)}
	r, err := NewLinearRelationBoth(one, nil)
	if err != nil {
		t.Fatal(err)
	}
	// With one probe the slope is free, but at its own B tick the bound is
	// the round trip: the truth must be inside.
	got, err := r.Translate(one[0].BRecv)
	if err != nil || !got.Contains(c.a(one[0].BRecv)) || got.Err > float64(one[0].RTT()) {
		t.Fatalf("one probe: %+v (%v), truth %v", got, err, c.a(one[0].BRecv))
	}
	// Identical probes: same as one.
	same, err := NewLinearRelationBoth([]Probe{one[0], one[0], one[0]}, nil)
	if err != nil || len(same.vertices) == 0 {
		t.Fatalf("identical probes: %v", err)
	}
	// Nearly parallel constraints: probes a microsecond apart.
	var close []Probe
	for i := 0; i < 50; i++ {
		close = append(close, c.probe(2e9+float64(i)*1e3, 20e3, 500, 20e3))
	}
	r, err = NewLinearRelationBoth(close, nil)
	if err != nil {
		t.Fatal(err)
	}
	mid := close[25].BRecv
	if got, err := r.Translate(mid); err != nil || !got.Contains(c.a(mid)) {
		t.Fatalf("nearly parallel: %+v (%v), truth %v", got, err, c.a(mid))
	}
	// Empty intersection: B's clock steps back 1 ms between two probes.
	stepped := clockB{alpha: c.alpha, beta: c.beta + 1e6}
	broken := []Probe{c.probe(1e9, 20e3, 1e3, 20e3), stepped.probe(2e9, 20e3, 1e3, 20e3), c.probe(3e9, 20e3, 1e3, 20e3)}
	if _, err := NewLinearRelationBoth(broken, nil); !errors.Is(err, ErrNoBound) {
		t.Fatalf("clock step: err %v, want no bound", err)
	}
	if _, err := NewLinearRelationBoth([]Probe{{ASend: 5, ABack: 4}}, nil); err == nil {
		t.Fatal("invalid probes accepted")
	}
}

// delays is a one-way delay model in A ticks: base plus exponential jitter.
type delays struct{ fwd, fwdJitter, rev, revJitter, proc float64 }

var (
	// quietLAN: fixed delays dominate; MinRTT is nearly the best possible.
	quietLAN = delays{fwd: 20e3, fwdJitter: 3e3, rev: 25e3, revJitter: 3e3, proc: 2e3}
	// asymmetricJitter: small base, heavy and asymmetric jitter.
	asymmetricJitter = delays{fwd: 5e3, fwdJitter: 15e3, rev: 10e3, revJitter: 40e3, proc: 2e3}
)

// cluster simulates n probes from A tick start, 1 ms apart.
func cluster(rng *rand.Rand, c clockB, d delays, start float64, n int) []Probe {
	var ps []Probe
	for i := 0; i < n; i++ {
		ps = append(ps, c.probe(start+float64(i)*1e6, d.fwd+rng.ExpFloat64()*d.fwdJitter, d.proc*(0.5+rng.Float64()), d.rev+rng.ExpFloat64()*d.revJitter))
	}
	return ps
}

// TestCoverageAndWidth: simulated nodes with known alpha (a frequency
// ratio, off by up to a few hundred ppm) and beta; 10,000 queries per delay
// model. The truth is inside both bounds every time; the tighter one is
// never wider than MinRTT/2 and, with asymmetric jittered delays, at least
// 10% narrower on average.
func TestCoverageAndWidth(t *testing.T) {
	for _, model := range []struct {
		name      string
		d         delays
		minNarrow float64
	}{{"quiet LAN", quietLAN, 0}, {"asymmetric jitter", asymmetricJitter, 0.10}} {
		rng := rand.New(rand.NewPCG(11, 12))
		var paperSum, linSum float64
		queries := 0
		for trial := 0; trial < 20; trial++ {
			ppm := (rng.Float64()*2 - 1) * 300e-6
			c := clockB{alpha: 0.75 * (1 + ppm), beta: -float64(rng.Uint64()%1e12) - 1e12} // B booted earlier
			before, after := cluster(rng, c, model.d, 5e9, 100), cluster(rng, c, model.d, 15e9, 100)
			paper, err := NewPaperRelation(before, after)
			if err != nil {
				t.Fatal(err)
			}
			lin, err := NewLinearRelationBoth(append(before, after...), nil)
			if err != nil {
				t.Fatal(err)
			}
			lo, hi := paper.Start.B, paper.End.B
			for q := 0; q < 500; q++ {
				b := lo + uint64(rng.Float64()*float64(hi-lo))
				truth := c.a(b)
				a, e, err := paper.Translate(b)
				if err != nil || math.Abs(a-truth) > e {
					t.Fatalf("%s: paper bound misses: %v ± %v vs truth %v (%v)", model.name, a, e, truth, err)
				}
				got, err := lin.Translate(b)
				if err != nil || !got.Contains(truth) {
					t.Fatalf("%s: tighter bound misses: %+v vs truth %v (%v)", model.name, got, truth, err)
				}
				if got.Err > e+margin {
					t.Fatalf("%s: tighter half-width %v above MinRTT/2 = %v", model.name, got.Err, e)
				}
				paperSum, linSum = paperSum+e, linSum+got.Err
				queries++
			}
			b1, b2 := lo+(hi-lo)/3, lo+2*(hi-lo)/3
			truth := c.a(b2) - c.a(b1)
			if d, _ := DurationOnOneNode(paper, b1, b2); !d.Contains(truth) {
				t.Fatalf("%s: paper duration %+v misses %v", model.name, d, truth)
			}
			if d, _ := lin.Duration(b1, b2); !d.Contains(truth) {
				t.Fatalf("%s: tighter duration %+v misses %v", model.name, d, truth)
			}
		}
		narrower := 1 - linSum/paperSum
		t.Logf("%s: %d queries, all inside both bounds; mean half-width MinRTT/2 %.0f ticks, tighter %.0f ticks (%.1f%% narrower)",
			model.name, queries, paperSum/float64(queries), linSum/float64(queries), 100*narrower)
		if narrower < model.minNarrow {
			t.Fatalf("%s: the tighter bound is only %.1f%% narrower (want >= %.0f%%)", model.name, 100*narrower, 100*model.minNarrow)
		}
	}
}

// TestClockStepIsDetected: a step larger than the bound in the middle of
// the experiment, with probes on both sides of it (before, during, after):
// no line fits, and the tighter method reports no bound. Without probes
// during the experiment a step cannot be told from a slightly different
// slope, which the second case shows.
func TestClockStepIsDetected(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	c := clockB{alpha: 1.0001, beta: -5e11}
	stepped := clockB{alpha: c.alpha, beta: c.beta - 200e3} // 200 us step; the bound is ~10 us
	probes := append(cluster(rng, c, quietLAN, 1e9, 50), cluster(rng, c, quietLAN, 3e9, 20)...)
	probes = append(probes, cluster(rng, stepped, quietLAN, 6e9, 50)...)
	if _, err := NewLinearRelationBoth(probes, nil); !errors.Is(err, ErrNoBound) {
		t.Fatalf("a 200 us clock step between probes went unnoticed: %v", err)
	}
	twoClusters := append(cluster(rng, c, quietLAN, 1e9, 50), cluster(rng, stepped, quietLAN, 6e9, 50)...)
	if _, err := NewLinearRelationBoth(twoClusters, nil); err != nil {
		t.Fatalf("two clusters always fit a line, got %v", err)
	}
}

// reverse simulates B probing A: the returned probes have B's stamps in the
// A fields and A's in the B fields.
func (c clockB) reverse(at, fwd, proc, rev float64) Probe {
	return Probe{ASend: c.b(at), BRecv: uint64(at + fwd), BReply: uint64(at + fwd + proc), ABack: c.b(at + fwd + proc + rev)}
}

// TestBothDirections: adding B->A probes keeps the truth inside and never
// widens the bound.
func TestBothDirections(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	c := clockB{alpha: 0.75 * (1 + 120e-6), beta: -3e12}
	d := asymmetricJitter
	fwd := append(cluster(rng, c, d, 1e9, 50), cluster(rng, c, d, 9e9, 50)...)
	var rev []Probe
	for i := 0; i < 50; i++ {
		for _, at := range []float64{1e9 + float64(i)*1e6 + 5e5, 9e9 + float64(i)*1e6 + 5e5} {
			rev = append(rev, c.reverse(at, d.rev+rng.ExpFloat64()*d.revJitter, d.proc, d.fwd+rng.ExpFloat64()*d.fwdJitter))
		}
	}
	one, err := NewLinearRelationBoth(fwd, nil)
	if err != nil {
		t.Fatal(err)
	}
	both, err := NewLinearRelationBoth(fwd, rev)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := one.Window()
	var w1, w2 float64
	for q := 0; q < 2000; q++ {
		b := lo + uint64(rng.Float64()*float64(hi-lo))
		g1, _ := one.Translate(b)
		g2, err := both.Translate(b)
		if err != nil || !g2.Contains(c.a(b)) || g2.Err > g1.Err+1e-6 {
			t.Fatalf("both directions: %+v vs one %+v, truth %v (%v)", g2, g1, c.a(b), err)
		}
		w1, w2 = w1+g1.Err, w2+g2.Err
	}
	t.Logf("mean half-width: one direction %.0f ticks, both %.0f ticks", w1/2000, w2/2000)
}
