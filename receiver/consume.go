package receiver

import (
	"runtime"
	"time"

	"github.com/cloudprofiler-go/cp/internal/osthread"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/wire"
)

// consume drains the lanes round-robin a tuple at a time until told to
// finish, then empties them.
func (r *Receiver) consume() {
	clock := r.cfg.Clock
	sink := r.cfg.Sink
	work := clock.Ticks(r.cfg.WorkPerTuple)
	// The totals are published every 64 buckets, when the rings run dry,
	// or after publishEvery (a slow consumer's metrics stay current),
	// from the clock read each bucket already makes.
	publishEvery := clock.Ticks(10 * time.Millisecond)
	var checksum, pending, sinceIdle, published uint64
	idle := 0
	for {
		got := false
		for _, l := range r.lanes {
			if work > 0 && r.quit.Load() {
				break // stopped: the rest of the rings is left unconsumed
			}
			b, ok := l.Pop()
			if !ok {
				continue
			}
			got = true
			st := b.Tag.(*stream)
			if b.Header.Kind == wire.KindEnd {
				st.end = b.End
				st.ended.Store(true)
				l.Release(b)
				continue
			}
			consumedCh := r.consumedCh
			if consumedCh != nil && consumedCh.Null() {
				consumedCh = nil // asked per bucket: the handler may be switched live
			}
			n := uint64(len(b.Tuples))
			for i := range b.Tuples {
				if work > 0 && r.quit.Load() { // a stop must not wait for a ring of busy work
					n = uint64(i)
					break
				}
				t := &b.Tuples[i]
				if consumedCh != nil {
					consumedCh.LogTS(t.ID)
				}
				if sink != nil {
					sink(t)
				} else {
					checksum += t.ID
				}
				if work > 0 {
					for until := tsc.ReadFast() + work; tsc.ReadFast() < until; {
					}
				}
			}
			var ticks uint64
			if n > 0 {
				// One clock read per bucket: the time the last tuple of the
				// bucket was consumed, an upper bound for all of them.
				ticks = tsc.ReadFast()
				now := clock.UnixNano(ticks)
				lat := now - b.Tuples[0].IntendedNs
				if lat < 0 {
					lat = 0
				}
				r.latency.RecordN(uint64(lat), n)
				r.lastLatency.Store(lat)
				r.precise.RecordN(lat, int64(n))
				if r.firstData.Load() == 0 {
					r.firstData.Store(ticks)
				}
				r.lastConsum.Store(ticks)
			}
			pending += n
			st.consumedTuples.Add(n)
			st.consumedBuckets.Add(1)
			l.Release(b)
			if sinceIdle++; sinceIdle&63 == 0 || ticks-published > publishEvery {
				r.consumed.Add(pending)
				pending, published = 0, ticks
				r.latency.Publish()
			}
		}
		if got {
			idle = 0
			continue
		}
		r.consumed.Add(pending)
		pending = 0
		r.latency.Publish()
		if r.done.Load() && (r.empty() || (work > 0 && r.quit.Load())) { // stopped in busy work: what is left stays unconsumed
			r.checksum = checksum
			return
		}
		// Nothing to do: spin briefly, then yield, then nap, so an idle
		// consumer does not take a core from the deserializers.
		idle++
		switch {
		case idle < 64:
		case idle < 256:
			runtime.Gosched()
		default:
			osthread.Nap(20 * time.Microsecond)
		}
	}
}
