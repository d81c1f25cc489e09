package sweep

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// system simulates a receiver of known capacity: a trial passes when the
// rate is at most the capacity (times a little noise), and achieves
// min(rate, capacity) (times noise). flaky is the chance that a passing
// trial fails anyway.
type system struct {
	capacity, noise, flaky float64
	keepsUp                bool // failing trials still achieve their rate (they fail on lateness)
	rng                    *rand.Rand
}

func (s *system) run(_ context.Context, rate float64, _ string) (Trial, error) {
	jitter := func() float64 { return 1 + s.noise*(2*s.rng.Float64()-1) }
	effective := s.capacity * jitter()
	pass := rate <= effective && s.rng.Float64() >= s.flaky
	achieved := math.Min(rate, effective) * jitter()
	if s.keepsUp {
		achieved = rate * jitter()
	}
	return Trial{Achieved: achieved, Verdict: Verdict{Pass: pass}}, nil
}

func newSystem(capacity, noise, flaky float64, seed uint64) *system {
	return &system{capacity: capacity, noise: noise, flaky: flaky, rng: rand.New(rand.NewPCG(seed, 7))}
}

func TestFastFindsCapacity(t *testing.T) {
	for _, tc := range []struct {
		name      string
		capacity  float64
		noise     float64
		start     float64
		maxTrials int
	}{
		{"exact, start far below", 5.13e6, 0, 100e3, 12},
		{"exact, start near", 5.13e6, 0, 1e6, 12},
		{"0.2% noise", 3.7e6, 0.002, 1e6, 12},
		{"first trial already fails", 40e3, 0, 1e6, 16},
		{"capacity just above a ramp step", 4.01e6, 0, 1e6, 12},
		{"fails on lateness while keeping up", 1.95e6, 0, 1e6, 12},
		{"fails on lateness while keeping up, noisy", 3.3e6, 0.002, 500e3, 12},
	} {
		for seed := uint64(1); seed <= 20; seed++ {
			sys := newSystem(tc.capacity, tc.noise, 0, seed)
			sys.keepsUp = strings.Contains(tc.name, "keeping up")
			res, err := Fast(context.Background(), FastPlan{Start: tc.start, Precision: 0.01, MaxTrials: tc.maxTrials}, sys.run)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if res.Stopped != "" {
				t.Fatalf("%s seed %d: stopped: %s after %d trials", tc.name, seed, res.Stopped, len(res.Trials))
			}
			lo, hi := tc.capacity*(1-2*tc.noise), tc.capacity*(1+2*tc.noise)
			if res.LastPass > hi || res.FirstFail < lo || res.Precision() > 0.01 {
				t.Fatalf("%s seed %d: [%.0f, %.0f) does not bracket %.0f to 1%% (%d trials)", tc.name, seed, res.LastPass, res.FirstFail, tc.capacity, len(res.Trials))
			}
			if len(res.Trials) > tc.maxTrials {
				t.Fatalf("%s: %d trials", tc.name, len(res.Trials))
			}
		}
	}
}

func TestFastRespectsLimits(t *testing.T) {
	sys := newSystem(5e6, 0, 0, 1)
	res, err := Fast(context.Background(), FastPlan{Start: 1e3, Precision: 0.001, MaxTrials: 5}, sys.run)
	if err != nil || len(res.Trials) != 5 || !strings.Contains(res.Stopped, "used all 5 trials") {
		t.Fatalf("trial limit: %d trials, stopped %q, err %v", len(res.Trials), res.Stopped, err)
	}
	res, _ = Fast(context.Background(), FastPlan{Start: 1e6, Max: 2e6}, sys.run)
	if res.LastPass != 2e6 || res.FirstFail != 0 || !strings.Contains(res.Stopped, "capacity is above") {
		t.Fatalf("max rate: %+v", res)
	}
	dead := newSystem(0, 0, 0, 1)
	res, _ = Fast(context.Background(), FastPlan{Start: 1e6, MaxTrials: 40}, dead.run)
	if res.LastPass != 0 || !strings.Contains(res.Stopped, "every rate down to") {
		t.Fatalf("nothing passes: %+v", res.Stopped)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Fast(ctx, FastPlan{Start: 1e6}, sys.run); err == nil {
		t.Fatal("cancelled search did not report it")
	}
	for _, bad := range []FastPlan{{Start: 0}, {Start: 1, Factor: 1}, {Start: 1, Precision: 2}, {Start: 10, Max: 5}} {
		if _, err := Fast(context.Background(), bad, sys.run); err == nil {
			t.Errorf("plan %+v accepted", bad)
		}
	}
}

// TestFastSurvivesFlakyTrials: with trials that fail at random, the answer
// never overstates the capacity, and the rate it reports passed at least
// Confirm+1 times (a rate that passed once and then failed is not kept).
func TestFastSurvivesFlakyTrials(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		sys := newSystem(2e6, 0, 0.15, seed)
		res, err := Fast(context.Background(), FastPlan{Start: 250e3, Precision: 0.01, MaxTrials: 30, Confirm: 2}, sys.run)
		if err != nil {
			t.Fatal(err)
		}
		if res.LastPass > 2e6 {
			t.Fatalf("seed %d: last pass %.0f above the capacity", seed, res.LastPass)
		}
		if res.Stopped != "" || res.LastPass == 0 {
			continue // said why it could not answer
		}
		passes := 0
		for _, tr := range res.Trials {
			if tr.Rate == res.LastPass && tr.Verdict.Pass {
				passes++
			}
		}
		if passes < 3 {
			t.Fatalf("seed %d: reported %.0f after only %d passes", seed, res.LastPass, passes)
		}
	}
}

func TestLinearReproducesThePaper(t *testing.T) {
	sys := newSystem(1.2345e6, 0, 0, 1)
	res, err := Linear(context.Background(), LinearPlan{From: 1e6, To: 5e6, Step: 1e3}, sys.run)
	if err != nil {
		t.Fatal(err)
	}
	if res.LastPass != 1.234e6 || res.FirstFail != 1.235e6 || len(res.Trials) != 236 {
		t.Fatalf("linear: [%.0f, %.0f) in %d trials", res.LastPass, res.FirstFail, len(res.Trials))
	}
	if _, err := Linear(context.Background(), LinearPlan{From: 1, To: 1e9, Step: 1}, sys.run); err == nil {
		t.Fatal("a billion-trial linear search was accepted")
	}
	top := newSystem(1e9, 0, 0, 1)
	res, _ = Linear(context.Background(), LinearPlan{From: 1e3, To: 5e3, Step: 1e3}, top.run)
	if res.LastPass != 5e3 || res.FirstFail != 0 || len(res.Trials) != 5 {
		t.Fatalf("everything passes: %+v", res)
	}
}

// degrading is a system whose capacity drops to after once before trials
// have run (the host got busy mid-sweep).
type degrading struct {
	before, after float64
	at, n         int
}

func (d *degrading) run(_ context.Context, rate float64, _ string) (Trial, error) {
	d.n++
	capacity := d.before
	if d.n > d.at {
		capacity = d.after
	}
	return Trial{Achieved: math.Min(rate, capacity), Verdict: Verdict{Pass: rate <= capacity}}, nil
}

// TestFastRampsDownAfterAFailedConfirmation: the only pass was the first
// trial, and its confirmation fails; the search must go down (just below
// what the confirmation achieved, else geometrically) and find the new
// capacity, or reach the floor before it says that no rate passed.
func TestFastRampsDownAfterAFailedConfirmation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		after    float64
		min      float64
		answer   float64 // 0: no rate passes down to the floor
		maxTrial int
	}{
		{"capacity drops to 200k", 200e3, 0, 200e3, 20},
		{"capacity drops to 9k", 9e3, 0, 9e3, 24},
		{"nothing passes any more", 0, 50e3, 0, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 500k passes, 1M fails, the narrowing fails all the way down
			// to 500k (capacity 500k exactly), then everything drops.
			d := &degrading{before: 500e3, after: tc.after, at: 2}
			res, err := Fast(context.Background(), FastPlan{Start: 500e3, Precision: 0.01, Min: tc.min, MaxTrials: tc.maxTrial}, d.run)
			if err != nil {
				t.Fatal(err)
			}
			confirm := -1
			for i, tr := range res.Trials {
				if tr.Purpose == "confirm" && !tr.Verdict.Pass && confirm < 0 {
					confirm = i
				}
			}
			// Down from the failed confirmation: just below what it achieved
			// when it fell behind (it measured the new capacity), else
			// geometrically.
			if confirm >= 0 && confirm+1 < len(res.Trials) {
				c, next := res.Trials[confirm], res.Trials[confirm+1]
				wantRate, wantPurpose := c.Rate/2, "ramp"
				if c.Achieved > 0 && c.Achieved < c.Rate*(1-4*0.01) {
					wantRate, wantPurpose = c.Achieved*(1-0.01/3), PurposeHint
				}
				if next.Purpose != wantPurpose || math.Abs(next.Rate-wantRate) > 1e-6*wantRate {
					confirm = -1
				}
			}
			if confirm < 0 {
				t.Fatalf("no ramp-down after the failed confirmation: %+v", res.Trials)
			}
			if tc.answer == 0 {
				if res.LastPass != 0 || !strings.Contains(res.Stopped, "every rate down to") || !strings.Contains(res.Stopped, "--min-rate") {
					t.Fatalf("result %+v", res)
				}
				if last := res.Trials[len(res.Trials)-1].Rate; last < tc.min || last/2 >= tc.min {
					t.Fatalf("stopped at %.0f with a floor of %.0f", last, tc.min)
				}
				return
			}
			if res.Stopped != "" || res.LastPass > tc.answer || res.FirstFail <= tc.answer || res.Precision() > 0.01 {
				t.Fatalf("[%.0f, %.0f) stopped %q does not bracket %.0f: %+v", res.LastPass, res.FirstFail, res.Stopped, tc.answer, res.Trials)
			}
		})
	}
}
