package sender

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/internal/osthread"
	"github.com/cloudprofiler-go/cp/internal/zmqraw"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/trialcfg"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/wire"
)

// run is one emission thread (Fig. 9b). It owns its socket and never
// unlocks its OS thread: a pinned thread must not return to the pool.
func (t *thread) run(s *Sender, start, end uint64) {
	if t.cpu >= 0 {
		if err := osthread.PinThread(t.cpu); err != nil {
			t.err = err
			return
		}
	}
	osthread.LockWithTightTimers()
	s.cpu.Register(fmt.Sprintf("thread%d", t.id))
	if s.cfg.Idle == trialcfg.Sleep {
		// Sleep only as close to a slot as this thread's wakeups allow.
		t.napMargin = osthread.NapOvershoot(20*time.Microsecond, 50) + 5*time.Microsecond
	}
	cpu0, _ := threadCPUTime() // unreadable: the figure stays 0 (documented as unknown)
	t.loop(s, start, end)
	if t.json {
		t.link.settle() // no end marker: the connection's state is taken here
	} else {
		t.endMarker = t.sendEnd(s)
	}
	if cpu1, err := threadCPUTime(); err == nil && cpu0 > 0 {
		t.cpuNs = int64(cpu1 - cpu0)
	}
}

// newWaiter sets the idle strategy's margins in this host's ticks.
func (t *thread) newWaiter(s *Sender) waiter {
	cfg, clock := &s.cfg, s.cfg.Clock
	pace := waiter{idle: cfg.Idle, stop: &s.stop,
		yieldTicks:  clock.Ticks(5 * time.Microsecond),
		sleepMargin: clock.Ticks(t.napMargin),
		minNap:      clock.Ticks(10 * time.Microsecond),
		slack:       clock.Ticks(3 * time.Microsecond),
		maxMargin:   clock.Ticks(250 * time.Microsecond),
		maxNap:      clock.Ticks(maxNap),
		nsPerTick:   1e9 / clock.Hz,
	}
	if cfg.Rate > 0 {
		pace.maxMargin = min(pace.maxMargin, uint64(t.sched.SlotTicks()/2))
	}
	pace.sleepMargin = min(pace.sleepMargin, pace.maxMargin)
	return pace
}

// emission is the emission loop's running state (on its stack).
type emission struct {
	k, seq, tupleSeq                        uint64
	emitted, buckets, dropB, late, measured uint64
	matched                                 uint64 // tuples sent that the declared predicate keeps
	idx, w                                  int
	item                                    int // the batch item being counted
	winEnd, nextPublish                     uint64
}

// loop sends every slot of the thread's schedule (or as fast as it can,
// unpaced) from start until end, its slot count, or a stop.
func (t *thread) loop(s *Sender, start, end uint64) {
	cfg := &s.cfg
	clock := cfg.Clock
	paced := cfg.Rate > 0
	drop := cfg.Overflow == trialcfg.Drop
	lateTicks := clock.Ticks(cfg.LateThreshold)
	nsPerTick := 1e9 / clock.Hz
	pace := t.newWaiter(s)
	measureFrom := start + clock.Ticks(cfg.Warmup)
	endGrace := end
	if end != math.MaxUint64 {
		endGrace = end + clock.Ticks(EndGrace)
	}
	bucket := uint64(cfg.BucketSize)
	stop := &s.stop
	ticksPerSec, publishTicks := uint64(clock.Hz), clock.Ticks(publishEvery)
	e := emission{winEnd: start + uint64(clock.Hz), nextPublish: start}
	// Nap in short slices until the common start: a stop is noticed at once.
	for !stop.Load() && tsc.ReadFast()+pace.maxNap < start {
		osthread.Nap(maxNap)
	}
	pace.wait(start, nil)
	t.holds = inject.NewHolds(inject.Windows(cfg.Stalls, fmt.Sprintf("thread%d", t.id)), start, clock)
	t.sendWork = clock.Ticks(cfg.SendWork)
	acct := t.startAccounting(paced)
	defer t.finished.Store(true)
	t.startWindows(s, start, end)
	spanTicks := clock.Ticks(BatchSpan)
	for e.k < t.slots {
		// Wait for the first slot of a batch here, with the idle strategy;
		// the C side waits for the others (all due within BatchSpan).
		var due uint64
		if paced {
			due = t.due(e.k)
			acct.SetAux(due)
			pace.wait(due, acct)
			if due >= end {
				break // the schedule is complete
			}
		}
		at := tsc.ReadFast()
		if t.sendWork > 0 || t.holds.Any() { // test fixtures only
			at = t.injected(acct, at, stop)
		}
		// A slot due before the end is still sent a little after it; a
		// thread more than the grace behind stops, and the rest of the
		// schedule is reported as shortfall.
		if stop.Load() || (paced && at >= endGrace) || (!paced && at >= end) {
			t.interrupted = stop.Load() && at < end
			break
		}
		n := t.prepare(&e, clock, paced, due, at, end, bucket, spanTicks)
		sent, err := t.out.SendBatch(t.items[:n], t.msgs[:n])
		if !stampedInC { // one item: stamped here
			t.items[0].Ready, t.items[0].At = at, at
		}
		// Replay C's sends item by item, as the one-at-a-time loop saw them.
		quit := false
		for i := 0; i < sent && !quit; i++ {
			it := &t.items[i]
			t.began(acct, it, i, paced)
			e.item = i
			quit = t.finish(&e, it, nil, paced, drop, measureFrom, lateTicks, nsPerTick, ticksPerSec, publishTicks, bucket)
		}
		if sent < n && !quit {
			it := &t.items[sent]
			t.began(acct, it, sent, paced)
			e.item = sent
			if err == zmqraw.ErrAgain {
				err = t.sendFull(t.tpls[e.idx].Msg, drop, end, stop)
			}
			quit = t.finish(&e, it, err, paced, drop, measureFrom, lateTicks, nsPerTick, ticksPerSec, publishTicks, bucket)
		}
		if quit {
			break
		}
	}
	acct.End(tsc.ReadFast())
	t.wrapUp(&e, paced, end, bucket)
}

// injected runs the test fixtures before a send: an injected stall
// (--stall) and busy work (--send-work), both the thread's own time,
// accounted as sending. It returns the TSC after them.
func (t *thread) injected(acct *stage.Account, at uint64, stop *atomic.Bool) uint64 {
	if t.holds.Any() {
		acct.Enter(stage.Sending, at)
		if t.holds.Hold(at, stop) {
			at = tsc.ReadFast()
		}
	}
	if t.sendWork > 0 {
		acct.Enter(stage.Sending, at)
		inject.Spin(tsc.ReadFast, t.sendWork)
		at = tsc.ReadFast()
	}
	return at
}

// wrapUp publishes the loop's final counts.
func (t *thread) wrapUp(e *emission, paced bool, end, bucket uint64) {
	t.publish(e.emitted, e.buckets, e.dropB, e.late, bucket)
	t.measuredSlots = e.measured
	t.matched = e.matched
	t.settle(paced, end, e.k)
	// Windows not reached (run ended early) stay at the final count.
	for ; e.w < len(t.windows); e.w++ {
		t.windows[e.w] = e.emitted
	}
}

// sent counts a send's outcome, and logs the bucket's tuples on the emit
// channel, stamped with the instant of the send (a Null channel returns
// at once).
func (t *thread) sent(e *emission, err error, at, bucket uint64, drop bool) {
	switch err {
	case nil:
		if t.emit != nil {
			t.emit.LogRangeAt(at, wire.TupleID(t.stream, e.tupleSeq), bucket)
		}
		e.seq++
		e.tupleSeq += bucket
		e.emitted += bucket
		e.buckets++
		if t.matches != nil {
			e.matched += t.matches[e.idx]
		}
		if t.win != nil {
			t.win.add(e.item, t.keys[e.idx])
		}
		t.acct.Add(1, bucket)
	case zmqraw.ErrAgain:
		if drop {
			e.dropB++
		}
	default:
		t.err = fmt.Errorf("send on %s: %w", t.endpoint, err)
	}
}

// advance moves to the next slot: the per-second windows, and the
// counters published every 64 slots, and at least every publishTicks so
// that a scrape at a low rate is exact too. It says whether to stop (a
// send error).
func (t *thread) advance(e *emission, at, ticksPerSec, publishTicks, bucket uint64) bool {
	for at >= e.winEnd {
		if e.w < len(t.windows) {
			t.windows[e.w] = e.emitted
		}
		e.w++
		e.winEnd += ticksPerSec
	}
	t.lastSend = at
	e.k++
	if e.idx++; e.idx == len(t.tpls) {
		e.idx = 0
	}
	if e.k&63 == 0 || at >= e.nextPublish || t.err != nil {
		e.nextPublish = at + publishTicks
		t.publish(e.emitted, e.buckets, e.dropB, e.late, bucket)
		return t.err != nil
	}
	return false
}

// began accounts the start of a batch item's send: the wait for its due
// time inside C (after the first item: the loop waited for that one) as
// pacing, then the send. Closing a service-rate period here, once per
// bucket, is what the one-at-a-time loop did too.
func (t *thread) began(acct *stage.Account, it *zmqraw.BatchItem, i int, paced bool) {
	if paced && i > 0 {
		acct.SetAux(it.Due)
		if it.At > it.Ready {
			acct.Enter(stage.Pacing, it.Ready)
		}
	}
	acct.Enter(stage.Sending, it.At)
	acct.Close(it.At) // the buckets sent so far: a service-rate period may end
}

// finish counts one slot's outcome and moves to the next; it says whether
// to stop (a send error).
func (t *thread) finish(e *emission, it *zmqraw.BatchItem, err error, paced, drop bool, measureFrom, lateTicks uint64, nsPerTick float64, ticksPerSec, publishTicks, bucket uint64) bool {
	t.sent(e, err, it.At, bucket, drop)
	if paced && it.Due >= measureFrom {
		e.measured++
		if t.recordLateness(it.At, it.Due, nsPerTick) > lateTicks {
			e.late++
		}
	}
	return t.advance(e, it.At, ticksPerSec, publishTicks, bucket)
}

// sendFull sends a bucket that the socket just refused (EAGAIN at the
// high-water mark). In block mode it retries until the socket takes it, the
// run ends or is stopped; in drop mode it is dropped. The time spent is
// accounted as blocked.
func (t *thread) sendFull(msg []byte, drop bool, end uint64, stop *atomic.Bool) error {
	t.acct.Enter(stage.Pushing, tsc.ReadFast())
	var err error = zmqraw.ErrAgain
	if !drop {
		err = t.out.Send(msg, false)
	}
	for err == zmqraw.ErrAgain && !drop { // the send timeout expired, keep trying
		if tsc.ReadFast() >= end || stop.Load() {
			break
		}
		err = t.out.Send(msg, false)
	}
	t.acct.Enter(stage.Sending, tsc.ReadFast()) // the loop's own work again
	return err
}

// recordLateness records a slot's lateness (in ns: the same buckets on
// every host) and returns it in ticks.
func (t *thread) recordLateness(at, due uint64, nsPerTick float64) uint64 {
	var lateness uint64
	if at > due {
		lateness = at - due
	}
	ns := uint64(float64(lateness) * nsPerTick)
	t.lateness.Record(ns)
	t.precise.Record(int64(ns))
	return lateness
}

// settle records what the schedule called for after k slots: every slot
// due before the end (or, when stopped early, before the stop), up to the
// count limit; unpaced, the slots sent.
func (t *thread) settle(paced bool, end, k uint64) {
	if !paced {
		t.scheduled = k
		return
	}
	stopAt := end
	if t.interrupted || stopAt == math.MaxUint64 {
		stopAt = t.lastSend + 1
	}
	t.scheduled = min(t.sched.SlotsBefore(stopAt), t.slots)
	t.scheduled = max(t.scheduled, k)
}

func (t *thread) publish(emitted, buckets, dropB, late, bucket uint64) {
	t.emittedTuples.Store(emitted)
	t.emittedBuckets.Store(buckets)
	t.droppedBuckets.Store(dropB)
	t.droppedTuples.Store(dropB * bucket)
	t.lateSlots.Store(late)
	t.lateness.Publish()
}

// publishEvery bounds how stale the published counters may be while
// the loop is sending.
const publishEvery = 10 * time.Millisecond

// maxNap is the longest the emission loop sleeps at once: a stop is
// noticed within it, however far the next slot is.
const maxNap = 10 * time.Millisecond

// waiter holds an emission thread until its next slot (the idle
// strategy's wait) and returns early when the run is stopped.
type waiter struct {
	idle       trialcfg.Idle
	stop       *atomic.Bool
	yieldTicks uint64 // Yield: spin only this close to the slot
	// sleepMargin is the thread's adaptive wake-up margin (Sleep), minNap
	// the shortest sleep worth taking, slack the safety added to an
	// observed overshoot, maxMargin the widest margin, maxNap the longest
	// single sleep.
	sleepMargin, minNap, slack, maxMargin, maxNap uint64
	nsPerTick                                     float64
}

// wait returns when the TSC reaches due, or when the run is stopped. A
// thread that has to wait is accounted as pacing from then on (until its
// send); one that is behind its schedule stays busy.
func (p *waiter) wait(due uint64, acct *stage.Account) {
	for first := true; ; first = false {
		now := tsc.ReadFast()
		if now >= due || p.stop.Load() {
			return
		}
		if first {
			acct.Enter(stage.Pacing, now)
		}
		rem := due - now
		switch {
		case p.idle == trialcfg.Yield && rem > p.yieldTicks:
			_, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		case p.idle == trialcfg.Sleep && rem > p.sleepMargin+p.minNap:
			// Wake a margin before the slot and spin the rest. The margin
			// follows this thread's wake-up overshoot (a VM's vCPU wakes
			// later from longer sleeps): it widens by a quarter of the gap
			// after a late wake-up and narrows slowly after timely ones, up
			// to maxMargin. A longer overshoot is the CPU being busy, which
			// spinning longer before every slot would only make worse.
			nap := min(rem-p.sleepMargin, p.maxNap)
			osthread.Nap(time.Duration(float64(nap) * p.nsPerTick))
			woke := tsc.ReadFast()
			if over := int64(woke - (now + nap)); over > 0 && uint64(over)+p.slack > p.sleepMargin {
				p.sleepMargin = min(p.sleepMargin+(uint64(over)+p.slack-p.sleepMargin)/4+1, p.maxMargin)
			} else {
				p.sleepMargin -= p.sleepMargin / 64
			}
		}
	}
}

// startAccounting starts the thread's stage accounting: waiting for its
// first slot when paced; unpaced, the loop between sends is its own work.
func (t *thread) startAccounting(paced bool) *stage.Account {
	if paced {
		t.acct.Start(stage.Pacing, tsc.ReadFast())
	} else {
		t.acct.Start(stage.Sending, tsc.ReadFast())
	}
	return t.acct
}

// backlog is a thread's queue for the diagnosis: the slots due and not
// yet sent (paced), one while it runs (unpaced: its work never runs
// out), none once it has finished.
func (t *thread) backlog(paced bool) func() int64 {
	return func() int64 {
		if t.finished.Load() {
			return 0
		}
		if !paced {
			return 1
		}
		due, now := t.acct.Aux(), tsc.ReadFast()
		if due == 0 || now < due {
			return 0
		}
		return 1 + int64(float64(now-due)/t.sched.SlotTicks())
	}
}
