package receiver

import (
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"math"
	"time"
)

// The backlog series: one sample every backlogEvery at first, at most
// maxBacklog samples (a longer run samples less often).
const (
	backlogEvery = 100 * time.Millisecond
	maxBacklog   = 4096
)

// thin keeps every other sample, in place.
func thin(s []tally.BacklogSample) []tally.BacklogSample {
	n := 0
	for i := 0; i < len(s); i += 2 {
		s[n] = s[i]
		n++
	}
	return s[:n]
}

// backlogSampler records the rings' occupancy, the consumed total and the
// latest latency every so often, in bounded memory however long the run.
type backlogSampler struct {
	last  time.Time
	every time.Duration
}

func (b *backlogSampler) sample(r *Receiver, now time.Time) {
	b.add(r, now, true)
}

// drained samples while the consumer drains the rings after the lanes
// stopped: the lags are not read (the lanes' consumers are closed, and
// the rules judge them over the measured window), but a windowed job's
// last windows may only be consumed now, and their delay is the trend
// the backlog rule judges (a consumer 3 times too slow for the windows
// had them all consumed here, unseen, and passed).
func (b *backlogSampler) drained(r *Receiver, now time.Time) {
	b.add(r, now, false)
}

func (b *backlogSampler) add(r *Receiver, now time.Time, lags bool) {
	if now.Sub(b.last) < b.every {
		return
	}
	b.last = now
	if len(r.backlog) == maxBacklog {
		// Keep every other sample and sample half as often from now on.
		r.backlog = thin(r.backlog)
		b.every *= 2
	}
	occ := 0
	for _, l := range r.lanes {
		occ += l.Occupancy()
	}
	s := tally.BacklogSample{UnixNs: now.UnixNano(), Buckets: occ, Consumed: r.consumed.Load(), LatencyNs: r.lastLatency.Load(), WindowDelayNs: r.windowDelay()}
	if lags {
		s.BrokerLag, s.JobLag = r.brokerLag(), r.jobLag.value()
	}
	r.backlog = append(r.backlog, s)
}

// noWindow is lastWindow before any window was consumed.
const noWindow = math.MinInt64

// windowDelay is the latest consumed window's arrival less its end (nil:
// no window consumed yet, or no windowed output).
func (r *Receiver) windowDelay() *int64 {
	d := r.lastWindow.Load()
	if d == noWindow {
		return nil
	}
	return &d
}

// brokerLag sums the broker lanes' consumer lag (nil: no broker lanes;
// -1: one could not be read, so the sample says nothing).
func (r *Receiver) brokerLag() *int64 {
	var sum *int64
	for _, l := range r.lanes {
		if l.cons == nil {
			continue
		}
		if sum == nil {
			sum = new(int64)
		}
		n, err := l.cons.Lag()
		if err != nil {
			*sum = -1
			return sum
		}
		*sum += n
	}
	return sum
}

// malformedTotal is the malformed messages of every lane.
func (r *Receiver) malformedTotal() uint64 {
	var m uint64
	for _, l := range r.lanes {
		m += l.Stats.MalformedTotal()
	}
	return m
}
