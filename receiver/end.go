package receiver

import (
	"fmt"
	"strings"
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
	if why := lanesGone(r); why != "" {
		return why
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
	// Before any data the end timeout counts from the start, unless a
	// duration bounds the run (an agent's trial, whose senders start
	// after their own preparation): a connection that died before the
	// first message must not keep dgrecv waiting for ever.
	if e.lastSeen == 0 && r.cfg.Duration == 0 && now.Sub(time.Unix(0, r.started.Load())) >= r.cfg.EndTimeout {
		return fmt.Sprintf("no data within %v of the start (--end-timeout): no sender reached this receiver", r.cfg.EndTimeout)
	}
	return ""
}

// lanesGone says why the run ends when no lane can receive any more:
// every lane's goroutine returned (its connection failed, or its socket
// could not be set up); "" while one still runs.
func lanesGone(r *Receiver) string {
	var why []string
	for _, l := range r.lanes {
		if !l.stopped.Load() {
			return ""
		}
		if l.err != nil {
			why = append(why, fmt.Sprintf("lane %d: %v", l.ID, l.err))
		}
	}
	if len(r.lanes) == 0 || r.done.Load() {
		return ""
	}
	return "every lane stopped receiving (" + strings.Join(why, "; ") + ")"
}
