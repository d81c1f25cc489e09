package servicerate

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/tsc"
)

// sim is a seeded synthetic stage: a consumer whose buckets take a set
// service time (jittered, with rare interruptions that only slow it), and
// that now and then runs dry (starved) for a while. It drives the real
// period accounting (stage.Account) on a synthetic 1 GHz clock, and the
// estimator reads what the accounting hands it: the series the paper's
// Figure 3 shows (noise, partial and blocked periods) without a run.
type sim struct {
	rate      float64 // tuples/s set (phase 1)
	rate2     float64 // tuples/s after switchAt (0: one phase)
	switchAt  time.Duration
	bucket    int           // tuples per bucket
	jitter    float64       // relative σ of a bucket's service time
	interrupt float64       // probability that a bucket is interrupted (2-6× longer)
	starve    float64       // probability that the ring runs dry after a bucket
	gap       time.Duration // mean idle gap when it does
	length    time.Duration
}

// run returns the estimator fed every non-blocking period, and the
// accounting's blocked-period count.
func (c sim) run(seed uint64) (*RaftLib, uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	set := stage.NewSet(tsc.NewClockHz(1e9), stage.DefaultPeriod)
	set.EnableServicePeriods()
	a := set.Add("consumer", stage.Consumer, nil)
	r := NewRaftLib(DefaultParams)
	now := uint64(1000)
	a.Start(stage.Idling, now)
	var buf []stage.Period
	var ps stage.PeriodStats
	nextDrain := now + uint64(stage.DefaultPeriod)
	end := now + uint64(c.length)
	working := false
	for now < end {
		if !working {
			a.Enter(stage.Working, now)
			working = true
		}
		rate := c.rate
		if c.rate2 > 0 && now-1000 >= uint64(c.switchAt) {
			rate = c.rate2
		}
		svc := float64(c.bucket) / rate * 1e9 * (1 + c.jitter*rng.NormFloat64())
		if rng.Float64() < c.interrupt {
			svc *= 2 + 4*rng.Float64()
		}
		now += uint64(math.Max(svc, 1))
		a.Add(1, uint64(c.bucket))
		a.Close(now)
		if rng.Float64() < c.starve {
			a.Enter(stage.Idling, now)
			working = false
			now += uint64(rng.ExpFloat64() * float64(c.gap))
		}
		if now >= nextDrain { // the sampler's tick
			buf, ps = a.DrainPeriods(buf[:0])
			for _, p := range buf {
				r.Push(float64(p.Tuples)*1e9/float64(p.Ticks), int64(now-1000))
			}
			nextDrain += uint64(stage.DefaultPeriod)
		}
	}
	return r, ps.Blocked
}
