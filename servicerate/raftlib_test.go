package servicerate

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// The estimator alone, on seeded series of non-blocking rates with the
// defects the paper names (§IV-B): noise, partial periods (a count cut
// short) and slowdowns (interrupts, cache misses). The estimate is the 95th
// percentile of the filtered window, so it sits above the mean of symmetric
// noise (about 0.88 σ: the filter leaves 0.54 σ, times 1.645), and every
// low outlier widens the window's spread and so raises it too: within 5%
// of the set rate for noise up to 5% per period with 1% of each defect,
// within 8% with 2% of partial periods or slowdowns (measured: up to 6.1%).
func TestRaftLibRecoversSetRate(t *testing.T) {
	cases := []struct {
		name                 string
		noise, partial, slow float64
		maxOff               float64
	}{
		{"noise 3%", 0.03, 0, 0, 0.05},
		{"noise 5%", 0.05, 0, 0, 0.05},
		{"noise, partial periods", 0.03, 0.01, 0, 0.05},
		{"noise, slowdowns", 0.03, 0, 0.01, 0.05},
		{"noise, 2% partial periods", 0.03, 0.02, 0, 0.08},
		{"noise, 2% slowdowns", 0.03, 0, 0.02, 0.08},
		{"all three", 0.03, 0.01, 0.01, 0.05},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 20; seed++ {
				rng := rand.New(rand.NewPCG(seed, 42))
				set := 1e4 + 1e6*rng.Float64()
				r := NewRaftLib(DefaultParams)
				for i := 0; i < 4000; i++ {
					v := set * (1 + c.noise*rng.NormFloat64())
					if rng.Float64() < c.partial {
						v *= rng.Float64()
					}
					if rng.Float64() < c.slow {
						v /= 2 + 4*rng.Float64()
					}
					r.Push(v, int64(i)*int64(time.Millisecond))
				}
				got, ok := r.Current()
				if !ok {
					t.Fatalf("seed %d: not converged after %d periods", seed, r.Periods())
				}
				if off := math.Abs(got/set - 1); off > c.maxOff {
					t.Errorf("seed %d: estimate %.0f for a set rate of %.0f (%.1f%% off)", seed, got, set, 100*off)
				}
			}
		})
	}
}

// The whole chain on a synthetic stage: the accounting closes periods at
// bucket boundaries, keeps only the non-blocking ones (the stage runs dry
// after a share of its buckets), and the estimator recovers the set rate.
func TestAccountedSeriesRecoversSetRate(t *testing.T) {
	cases := []sim{
		{rate: 1e6, bucket: 100, jitter: 0.03, interrupt: 0.005, starve: 0.1, gap: 20 * time.Microsecond},
		{rate: 1e5, bucket: 100, jitter: 0.03, interrupt: 0.005, starve: 0.3, gap: 200 * time.Microsecond},
		{rate: 1e4, bucket: 10, jitter: 0.03, interrupt: 0.005, starve: 0.2, gap: time.Millisecond},
		{rate: 3e6, bucket: 1, jitter: 0.05, interrupt: 0.005, starve: 0.05, gap: 5 * time.Microsecond},
	}
	for _, c := range cases {
		c.length = 5 * time.Second
		for seed := uint64(1); seed <= 5; seed++ {
			r, blocked := c.run(seed)
			got, ok := r.Current()
			if !ok || blocked == 0 {
				t.Fatalf("rate %g seed %d: converged %v, %d blocked periods (want some)", c.rate, seed, ok, blocked)
			}
			if off := math.Abs(got/c.rate - 1); off > 0.05 {
				t.Errorf("rate %g seed %d: estimate %.0f (%.1f%% off)", c.rate, seed, got, 100*off)
			}
		}
	}
}

// A stage that is never without blocking for a whole period gives no
// non-blocking period: the estimate is not_converged, never a number.
func TestNoNonBlockingPeriodIsNotConverged(t *testing.T) {
	c := sim{rate: 1e5, bucket: 100, jitter: 0.03, starve: 1, gap: 100 * time.Microsecond, length: 3 * time.Second}
	r, blocked := c.run(1)
	if v, ok := r.Current(); ok || r.Periods() != 0 || blocked == 0 {
		t.Fatalf("estimate %v (%v) from %d periods, %d blocked: want not converged, none", v, ok, r.Periods(), blocked)
	}
	few := NewRaftLib(DefaultParams) // fewer periods than a window
	for i := 0; i < DefaultParams.Window-1; i++ {
		few.Push(1e5, int64(i))
	}
	if _, ok := few.Current(); ok {
		t.Fatal("an estimate from less than one window")
	}
}

// Two-phase runs (§VI): a switch of 20% or more is found (both phases, each
// within 10%) in at least 95% of seeded simulations.
func TestTwoPhasesDetected(t *testing.T) {
	const runs = 40
	found := 0
	for seed := uint64(1); seed <= runs; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		r1 := 2e4 + 2e5*rng.Float64()
		f := 1.2 + 1.3*rng.Float64()
		if rng.IntN(2) == 0 {
			f = 1 / f
		}
		c := sim{rate: r1, rate2: r1 * f, switchAt: 4 * time.Second, bucket: 20, jitter: 0.03, interrupt: 0.005,
			starve: 0.2, gap: 100 * time.Microsecond, length: 8 * time.Second}
		r, _ := c.run(seed)
		ph := r.Phases()
		ok := len(ph) >= 2 && math.Abs(ph[0].TuplesPerS/r1-1) < 0.1 && math.Abs(ph[len(ph)-1].TuplesPerS/(r1*f)-1) < 0.1
		if ok {
			found++
		} else {
			t.Logf("seed %d: %.0f -> %.0f: phases %+v", seed, r1, r1*f, ph)
		}
	}
	if found < runs*95/100 {
		t.Fatalf("both phases found in %d of %d runs, want >= 95%%", found, runs)
	}
	t.Logf("both phases found in %d of %d runs", found, runs)
}

// BenchmarkRaftLibPush: one period's rate into a full window (the cost
// paid at every period close, each bucket under load).
func BenchmarkRaftLibPush(b *testing.B) {
	r := NewRaftLib(DefaultParams)
	rng := rand.New(rand.NewPCG(1, 2))
	rates := make([]float64, 1024)
	for i := range rates {
		rates[i] = 1e6 * (1 + 0.1*rng.NormFloat64())
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Push(rates[i%len(rates)], int64(i))
	}
}

// A long phase costs the same per period as a young one: no allocation
// once the windows are full, however many estimates have converged.
func TestRaftLibPushDoesNotAllocateInALongPhase(t *testing.T) {
	r := NewRaftLib(DefaultParams)
	rng := rand.New(rand.NewPCG(3, 4))
	next := func() float64 { return 1e6 * (1 + 0.1*rng.NormFloat64()) }
	for i := 0; i < 200000; i++ {
		r.Push(next(), int64(i))
	}
	ph := r.Phases()
	if len(ph) != 1 || ph[0].Estimates <= phaseMedianOf {
		t.Fatalf("phases %+v: want one phase of more than %d estimates", ph, phaseMedianOf)
	}
	if got := ph[0].TuplesPerS; got < 1e6 || got > 1.3e6 {
		t.Fatalf("phase at %.0f tuples/s, want the 95th percentile of 1 M ± 10%%", got)
	}
	if a := testing.AllocsPerRun(20000, func() { r.Push(next(), 1) }); a != 0 {
		t.Fatalf("%.2f allocations per period", a)
	}
}

// What a VM's steal does to RaftLib's estimate, with everything else held
// still. A stage ~20% starved (utilisation ~0.8) loses its CPU in gaps of
// 45 µs on average (the median gap measured on this host's vCPUs,
// BENCHMARKS.md, sixth session), from none to 6% of its time. The ground
// truth is the stage alone, never starved, steal included (§V-B). Buckets
// of 100 µs are the benchmark's three points (1 µs × 100, 10 µs × 10,
// 100 µs × 1: under load a period closes at every bucket); 1 ms buckets
// show longer periods. Without steal the estimate is within 5% of the
// ground truth; with steal a period without a gap runs at the full rate,
// so Equation 3's 95th percentile of the period rates lies above what the
// stage sustains on average, and more so the shorter the periods. The
// test fails if steal ever pulls the estimate below the ground truth or
// stops lifting it: it pins the cause of the overshoot that
// TestBenchServiceRateVsCapacity measures on this host.
func TestStealLiftsRaftLibAboveTheCapacity(t *testing.T) {
	points := []sim{
		{rate: 1e5, bucket: 10},  // 100 µs a bucket
		{rate: 1e5, bucket: 100}, // 1 ms a bucket
	}
	steals := []float64{0, 0.015, 0.03, 0.06}
	const seeds = 5
	for _, p := range points {
		p.jitter, p.interrupt, p.starve, p.length = 0.03, 0.002, 0.2, 4*time.Second
		p.gap = time.Duration(float64(p.bucket) / p.rate * 1e9)
		var row []float64
		for _, f := range steals {
			c := p
			if f > 0 {
				c.stealGap = 45 * time.Microsecond
				c.stealEvery = time.Duration(float64(c.stealGap) / f)
			}
			ratios := make([]float64, 0, seeds)
			for seed := uint64(1); seed <= seeds; seed++ {
				r, _ := c.run(seed)
				got, ok := r.Current()
				if !ok {
					t.Fatalf("buckets of %v, steal %.1f%%, seed %d: not converged after %d periods", p.gap, 100*f, seed, r.Periods())
				}
				ratios = append(ratios, got/c.capacity(seed))
			}
			sort.Float64s(ratios)
			med := ratios[len(ratios)/2]
			row = append(row, med)
			switch {
			case f == 0 && math.Abs(med-1) > 0.05:
				t.Errorf("buckets of %v without steal: RaftLib ÷ capacity %.3f, want within 5%%", p.gap, med)
			case f > 0 && med < 1:
				t.Errorf("buckets of %v, steal %.1f%%: RaftLib ÷ capacity %.3f, below the capacity", p.gap, 100*f, med)
			}
		}
		if row[len(row)-1] <= row[0] {
			t.Errorf("buckets of %v: 6%% steal did not lift the estimate (%.3f against %.3f without)", p.gap, row[len(row)-1], row[0])
		}
		t.Logf("RaftLib ÷ capacity, buckets of %v, steal 0, 1.5, 3, 6%%: %.3f", p.gap, row)
	}
}
