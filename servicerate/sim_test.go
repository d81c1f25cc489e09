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
	// stealEvery and stealGap model a VM's steal: the stage's CPU is
	// taken away at random instants (exponential spacing, mean
	// stealEvery) for an exponentially distributed stretch (mean
	// stealGap) that lengthens the bucket it falls in. 0: no steal.
	stealEvery, stealGap time.Duration
}

// bucketTime is how long a bucket started at now takes at rate: jittered,
// now and then interrupted, lengthened by any steal that falls in it.
func (c sim) bucketTime(rng *rand.Rand, rate float64, nextSteal *uint64, now uint64) uint64 {
	svc := float64(c.bucket) / rate * 1e9 * (1 + c.jitter*rng.NormFloat64())
	if rng.Float64() < c.interrupt {
		svc *= 2 + 4*rng.Float64()
	}
	svc += c.stealDuring(rng, nextSteal, now, svc)
	return uint64(math.Max(svc, 1))
}

// stealDuring returns the steal that falls in a bucket of svc ns starting
// at now, and advances the next steal instant past it.
func (c sim) stealDuring(rng *rand.Rand, next *uint64, now uint64, svc float64) float64 {
	if c.stealEvery <= 0 {
		return 0
	}
	for *next < now { // steal while the stage idled costs it nothing
		*next += uint64(rng.ExpFloat64() * float64(c.stealEvery))
	}
	lost := 0.0
	for float64(*next) < float64(now)+svc+lost {
		g := rng.ExpFloat64() * float64(c.stealGap)
		lost += g
		*next += uint64(g + rng.ExpFloat64()*float64(c.stealEvery))
	}
	return lost
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
	nextSteal := now + uint64(rng.ExpFloat64()*float64(c.stealEvery))
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
		now += c.bucketTime(rng, rate, &nextSteal, now)
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

// capacity is the stage measured alone, as the paper's ground truth is
// (§V-B): never starved, steal included, tuples over the whole time.
func (c sim) capacity(seed uint64) float64 {
	rng := rand.New(rand.NewPCG(seed, 0x5bd1e995))
	now, tuples := uint64(0), 0.0
	nextSteal := uint64(rng.ExpFloat64() * float64(c.stealEvery))
	for now < uint64(c.length) {
		now += c.bucketTime(rng, c.rate, &nextSteal, now)
		tuples += float64(c.bucket)
	}
	return tuples * 1e9 / float64(now)
}
