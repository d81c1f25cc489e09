package receiver

import (
	"fmt"
	"time"
)

// endWatch decides when the run is over from the streams and the data.
type endWatch struct {
	lastSeen   uint64 // newest message TSC over all lanes
	lastSeenAt time.Time
	allEndedAt time.Time
	// a job's lag on its input, and when it last changed
	lag        int64
	lagMovedAt time.Time
}

// check returns why the run ends now, or "".
func (e *endWatch) check(r *Receiver, now time.Time) string {
	var newest uint64
	for _, l := range r.lanes {
		newest = max(newest, l.lastMsg.Load())
	}
	if newest != e.lastSeen {
		e.lastSeen, e.lastSeenAt = newest, now
	}
	if r.cfg.jobTrial() {
		return e.jobEnd(r, now)
	}
	streams, ended := 0, 0
	for _, l := range r.lanes {
		n, d := l.streams.count()
		streams, ended = streams+n, ended+d
	}
	switch {
	case r.cfg.ExpectStreams > 0 && ended >= r.cfg.ExpectStreams:
		return "all expected streams ended"
	case r.cfg.ExpectStreams == 0 && streams > 0 && ended == streams:
		if e.allEndedAt.IsZero() {
			e.allEndedAt = now
		}
		if now.Sub(e.allEndedAt) >= r.cfg.Settle && now.Sub(e.lastSeenAt) >= r.cfg.Settle {
			return "all streams ended"
		}
	default:
		e.allEndedAt = time.Time{}
	}
	if e.lastSeen != 0 && now.Sub(e.lastSeenAt) >= r.cfg.EndTimeout {
		return fmt.Sprintf("no data for %v: gave up waiting for end markers", r.cfg.EndTimeout)
	}
	return ""
}
