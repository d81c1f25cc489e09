package receiver

import (
	"time"

	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/objfactory"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/wire"
)

// consume drains the lanes round-robin a tuple at a time until told to
// finish, then empties them.
func (r *Receiver) consume() {
	clock := r.cfg.Clock
	c := consumer{r: r, sink: r.cfg.Sink, work: clock.Ticks(r.cfg.WorkPerTuple),
		holds:    inject.NewHolds(inject.Windows(r.cfg.Stalls, "consumer"), r.startTicks, clock),
		schedule: r.cfg.WorkSchedule, windows: r.cfg.Schema == scenarios.SchemaWindow && !r.cfg.Drain,
		// The totals are published every 64 buckets, when the rings run
		// dry, or after publishEvery (a slow consumer's metrics stay
		// current), from the clock read each bucket already makes.
		publishEvery: clock.Ticks(10 * time.Millisecond)}
	if c.windows {
		c.perWindow = newWindowTally()
	}
	idle := 0
	park := time.NewTimer(time.Hour)
	park.Stop()
	defer park.Stop()
	acct := r.consumerAcc
	acct.Start(stage.Idling, tsc.ReadFast())
	working := false
	for {
		if c.holds.Any() || len(c.schedule) > 0 {
			working = c.inject(working)
		}
		got := false
		for _, l := range r.lanes {
			if c.work > 0 && r.quit.Load() {
				break // stopped: the rest of the rings is left unconsumed
			}
			b, ok := l.Pop()
			if !ok {
				continue
			}
			if !got && !working && acct != nil { // the first bucket after an idle round
				acct.Enter(stage.Working, tsc.ReadFast())
				working = true
			}
			got = true
			st := b.Tag.(*stream)
			if b.Header.Kind == wire.KindEnd {
				st.end = b.End
				st.ended.Store(true)
				acct.Add(1, 0)
			} else {
				n, ticks := c.bucket(st, b)
				acct.Add(1, n)
				acct.Close(ticks)
			}
			l.Release(b)
		}
		if got {
			idle = 0
			continue
		}
		if working {
			acct.Enter(stage.Idling, tsc.ReadFast())
			working = false
		}
		c.publish(0)
		if r.done.Load() && (r.empty() || (c.work > 0 && r.quit.Load())) { // stopped in busy work: what is left stays unconsumed
			r.checksum, r.windowSum, r.perWindow = c.checksum, c.windowSum, c.perWindow
			acct.End(tsc.ReadFast())
			return
		}
		// Nothing to do: spin briefly (a bucket right behind this one),
		// then park until a lane queues one.
		if idle++; idle >= 64 {
			r.park(park)
		}
	}
}

// park holds an idle consumer until a lane queues a bucket or the run
// ends (wakeConsumer), so that it neither takes a core from the
// deserializers nor wakes up to poll. The park is bounded (ParkLimit):
// injected stalls and schedules are timed.
func (r *Receiver) park(t *time.Timer) {
	r.parked.Store(true)
	defer r.parked.Store(false)
	if r.anyQueued() || r.done.Load() { // queued before it parked: no wake-up comes
		return
	}
	t.Reset(ParkLimit)
	select {
	case <-r.wake:
	case <-t.C:
	}
}

// wakeConsumer wakes a parked consumer (a lane queued a bucket, or the
// run is ending).
func (r *Receiver) wakeConsumer() {
	if r.parked.Load() {
		select {
		case r.wake <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// anyQueued says whether a lane has a decoded bucket waiting.
func (r *Receiver) anyQueued() bool {
	for _, l := range r.lanes {
		if l.Occupancy() > 0 {
			return true
		}
	}
	return false
}

// ParkLimit bounds an idle consumer's park: a lane wakes it at once when
// it queues a bucket; the limit only times injected stalls and schedules.
const ParkLimit = time.Millisecond

// consumer is the consuming goroutine's state.
type consumer struct {
	r                                       *Receiver
	sink                                    func(*scenarios.Tuple)
	work, publishEvery                      uint64
	checksum, pending, sinceIdle, published uint64
	windows                                 bool // schema window: windowSum adds up the windows' counts
	windowSum                               uint64
	perWindow                               *windowTally  // the same per key and window (schema window)
	holds                                   inject.Holds  // injected stalls
	schedule                                []inject.Step // injected work over time
}

// inject applies the injected stalls and work schedule due now; a stall
// is the consumer's own doing, accounted as working. It returns whether
// the consumer is now in the working state.
func (c *consumer) inject(working bool) bool {
	now := tsc.ReadFast()
	if c.holds.Due(now) && !working && c.r.consumerAcc != nil {
		c.r.consumerAcc.Enter(stage.Working, now)
		working = true
	}
	c.holds.Hold(now, &c.r.quit)
	if len(c.schedule) > 0 {
		clock := c.r.cfg.Clock
		c.work = clock.Ticks(inject.WorkAt(c.schedule, time.Duration(clock.TicksToNs(now-c.r.startTicks))))
	}
	return working
}

// bucket consumes one data bucket a tuple at a time, then records its
// latency with one clock read (the time the last tuple was consumed, an
// upper bound for all of them). The consumed channel stamps each tuple
// when it does work per tuple (--work, a sink); otherwise a bucket's
// tuples are consumed within a few hundred ns and share that one read,
// as the latency does: a clock read per tuple cost the profiled consumer
// 18% of its time.
//
// It returns the tuples consumed and the clock read at the end (0 when none
// was consumed).
func (c *consumer) bucket(st *stream, b *objfactory.Bucket) (uint64, uint64) {
	r := c.r
	// The per-tuple loop works on locals (registers), not on c.
	n := uint64(len(b.Tuples))
	if n > 0 && r.earlierTrial(b.Tuples[0].IntendedNs) {
		st.earlier.Add(n)
		return 0, 0
	}
	if r.trialStartNs != 0 && r.cfg.Senders > 0 { // a job's output: identities it may not forge
		r.screen(st, b)
		n = uint64(len(b.Tuples))
	}
	sink, work, checksum := c.sink, c.work, c.checksum
	consumedCh, perTuple := r.consumedCh, false
	if consumedCh != nil {
		if consumedCh.Null() {
			consumedCh = nil // asked per bucket: the handler may be switched live
		} else {
			perTuple = work > 0 || sink != nil
		}
	}
	for i := range b.Tuples {
		if work > 0 && r.quit.Load() { // a stop must not wait for a ring of busy work
			n = uint64(i)
			break
		}
		t := &b.Tuples[i]
		if perTuple {
			consumedCh.LogTS(t.ID)
		}
		if sink != nil {
			sink(t)
		} else {
			checksum += t.ID
		}
		if work > 0 {
			inject.Spin(tsc.ReadFast, work)
		}
	}
	c.checksum = checksum
	if c.windows {
		for i := range b.Tuples[:n] {
			c.windowSum = satAdd(c.windowSum, uint64(b.Tuples[i].Window.Count))
			c.perWindow.add(&b.Tuples[i].Window)
		}
	}
	var ticks uint64
	if n > 0 {
		ticks = tsc.ReadFast()
		lat := r.cfg.Clock.UnixNano(ticks) - b.Tuples[0].IntendedNs
		if lat < 0 {
			lat = 0
		}
		r.latency.RecordN(uint64(lat), n)
		r.lastLatency.Store(lat)
		if c.windows {
			r.lastWindow.Store(r.cfg.Clock.UnixNano(ticks) - b.Tuples[0].Window.EndMs*1e6)
		}
		r.precise.RecordN(lat, int64(n))
		if consumedCh != nil && !perTuple {
			logBucket(consumedCh, ticks, b.Tuples[:n])
		}
		if r.firstData.Load() == 0 {
			r.firstData.Store(ticks)
		}
		r.lastConsum.Store(ticks)
	}
	c.pending += n
	st.consumedTuples.Add(n)
	st.consumedBuckets.Add(1)
	if c.sinceIdle++; c.sinceIdle&63 == 0 || ticks-c.published > c.publishEvery {
		c.publish(ticks)
	}
	return n, ticks
}

// publish adds the tuples consumed since the last publication to the
// total and publishes the latency histogram.
func (c *consumer) publish(ticks uint64) {
	c.r.consumed.Add(c.pending)
	c.pending, c.published = 0, ticks
	c.r.latency.Publish()
}

// logBucket logs tuples at one instant: as one range when their ids are
// consecutive (dgsend's buckets), else one record each.
func logBucket(ch *profiler.Channel, at uint64, tuples []scenarios.Tuple) {
	if len(tuples) == 0 {
		return
	}
	first := tuples[0].ID
	for i := range tuples {
		if tuples[i].ID != first+uint64(i) {
			for j := range tuples {
				ch.LogTSAt(at, tuples[j].ID)
			}
			return
		}
	}
	ch.LogRangeAt(at, first, uint64(len(tuples)))
}
