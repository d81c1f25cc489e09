package stage

import (
	"sync/atomic"
)

// The period accounting of RaftLib's online service-rate estimator (Beard
// et al., ../shared/reference/raftlib-service-rate.txt, §III-IV): a stage counts
// the tuples of each period T in which it was neither starved nor blocked,
// and hands those non-blocking counts to the estimator (package
// servicerate). RaftLib's monitor thread samples and zeroes a counter
// every T; this machine has two cores, so the stage's own thread closes
// its periods instead, at the first bucket boundary at or after the
// period's end (one comparison per bucket). The count and the period's
// realised length are then exact: no partial firing is ever counted.

// Period is one closed non-blocking period: Tuples processed in Ticks of
// TSC while the stage stayed busy.
type Period struct {
	Tuples uint64
	Ticks  uint64
}

// periodRing holds the closed non-blocking periods until the sampler
// drains them (single producer: the stage's thread; single consumer).
const periodRing = 2048

// Adaptation of T (§III): every adaptK periods, T doubles when all of
// them were non-blocking and stable (their realised length within
// 1/adaptEpsInv of T, or one bucket long: a period cannot be shorter), and
// halves when fewer than half were non-blocking (Equation 1: a shorter
// period is more likely to see no blocking).
const (
	adaptK      = 16
	adaptEpsInv = 10 // ε = 10%
)

// periods is the writer's period state (the writer's own words, except
// those published for the reader with atomics).
type periods struct {
	on                 bool
	tMin, tMax         uint64
	t                  uint64 // current T, ticks (published: tPub)
	start, end         uint64 // the open period, TSC
	tuples0, nonBusy0  uint64
	items0             uint64
	n, clean, stable   int // the current adaptation block
	tPub, dirty, drops uint64
	head, tail         uint64 // ring indices (head: writer, tail: reader)
	ring               *[periodRing]Period
	// busyMask has bit i set when state i is the stage's own work: read
	// at every close, which at T = 1 µs is every bucket (two map lookups
	// by the kind's name cost an unbatched run ~8% of its throughput).
	busyMask uint8
}

// EnablePeriods turns on the period accounting with T adapted between
// tMin and tMax ticks (starting at tMin, as RaftLib starts at the timer's
// resolution). Call before the writer starts.
func (a *Account) EnablePeriods(tMin, tMax uint64) {
	if a == nil || tMin == 0 || tMax < tMin {
		return
	}
	a.p = periods{on: true, tMin: tMin, tMax: tMax, t: tMin, tPub: tMin, ring: new([periodRing]Period)}
	for i, st := range kindStates[a.kind] {
		if st.Class == Busy {
			a.p.busyMask |= 1 << i
		}
	}
}

// Close ends the open period if it is due at now. The writer calls it once
// per bucket, after Add, while the stage is in a busy state.
func (a *Account) Close(now uint64) {
	if a == nil || now < a.p.end || !a.p.on {
		return
	}
	a.closePeriod(now)
}

func (a *Account) closePeriod(now uint64) {
	p := &a.p
	nb := a.nonBusyTicks()
	busyNow := p.busyMask>>(a.c.mark>>markShift)&1 == 1
	if p.start != 0 && now > p.start {
		d := now - p.start
		clean := busyNow && nb == p.nonBusy0
		p.adapt(clean, d <= p.t+p.t/adaptEpsInv || a.c.items-p.items0 <= 1)
		if clean {
			p.push(Period{Tuples: a.c.tuples - p.tuples0, Ticks: d})
		} else {
			atomic.StoreUint64(&p.dirty, p.dirty+1)
		}
	}
	p.start, p.end = now, now+p.t
	p.tuples0, p.nonBusy0, p.items0 = a.c.tuples, nb, a.c.items
}

// nonBusyTicks is the time accounted so far to the states that are not
// the stage's own work (read by the writer: its own words).
func (a *Account) nonBusyTicks() uint64 {
	var s uint64
	for i := range MaxStates {
		if a.p.busyMask>>i&1 == 0 {
			s += a.c.ticks[i] // 0 past the kind's states
		}
	}
	return s
}

func (p *periods) adapt(clean, stable bool) {
	p.n++
	if clean {
		p.clean++
	}
	if stable {
		p.stable++
	}
	if p.n < adaptK {
		return
	}
	switch {
	case p.clean == p.n && p.stable == p.n && p.t*2 <= p.tMax:
		p.t *= 2
	case p.clean*2 < p.n && p.t/2 >= p.tMin:
		p.t /= 2
	}
	atomic.StoreUint64(&p.tPub, p.t)
	p.n, p.clean, p.stable = 0, 0, 0
}

func (p *periods) push(x Period) {
	if p.head-atomic.LoadUint64(&p.tail) == periodRing {
		atomic.StoreUint64(&p.drops, p.drops+1) // the sampler fell behind
		return
	}
	p.ring[p.head%periodRing] = x
	atomic.StoreUint64(&p.head, p.head+1)
}

// PeriodStats are a stage's period counters.
type PeriodStats struct {
	T       uint64 // the current target period, ticks
	Blocked uint64 // periods closed with some starvation or blocking
	Dropped uint64 // non-blocking periods lost because the reader fell behind
}

// DrainPeriods appends the non-blocking periods closed since the last
// call to buf (one reader at a time) and returns it with the counters.
func (a *Account) DrainPeriods(buf []Period) ([]Period, PeriodStats) {
	if a == nil || !a.p.on {
		return buf, PeriodStats{}
	}
	p := &a.p
	head := atomic.LoadUint64(&p.head)
	for tail := atomic.LoadUint64(&p.tail); tail < head; tail++ {
		buf = append(buf, p.ring[tail%periodRing])
	}
	atomic.StoreUint64(&p.tail, head)
	return buf, PeriodStats{T: atomic.LoadUint64(&p.tPub), Blocked: atomic.LoadUint64(&p.dirty), Dropped: atomic.LoadUint64(&p.drops)}
}

// PeriodsOn reports whether the account closes periods.
func (a *Account) PeriodsOn() bool { return a != nil && a.p.on }
