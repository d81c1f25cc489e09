package agent

import (
	"fmt"
	"sync"
	"time"
)

// JobLagWait bounds how long an info request waits for the job's lag:
// well inside the sweep's control timeout (3 s), so that an agent whose
// broker answers slowly still answers its info request. Reading the lag
// opens a connection to the broker, and in a container network whose DNS
// forwards what it does not know to an unreachable upstream, resolving
// the broker's name took seconds (CI, 2026-11-28: the YSB container
// walk's receiver did not answer an info request for 30 s).
const JobLagWait = 1500 * time.Millisecond

// jobLagFresh is how old a read that finished while no request waited may
// be and still answer one: the sweep asks every 250 ms while it waits for
// the job to catch up, so a read that ended between two asks is used.
const jobLagFresh = time.Second

// lagReading is one read of the job's lag, possibly still going.
type lagReading struct {
	done chan struct{}
	lag  int64
	err  error
	at   time.Time // when it finished
}

// jobLagReader reads the job's lag at most once at a time: a request
// waits for the read under way (up to JobLagWait) rather than starting
// another, so slow reads never pile up behind a sweep that asks often.
type jobLagReader struct {
	read func() (int64, error)
	mu   sync.Mutex
	last *lagReading
}

// get returns the job's lag, or why it is not known yet (a read still under way after JobLagWait is an error saying so; a
// later request gets its result).
func (r *jobLagReader) get(wait time.Duration) (int64, error) {
	r.mu.Lock()
	cur := r.last
	if cur == nil || finishedBefore(cur, time.Now().Add(-jobLagFresh)) {
		cur = &lagReading{done: make(chan struct{})}
		r.last = cur
		go func() {
			lag, err := r.read()
			r.mu.Lock()
			cur.lag, cur.err, cur.at = lag, err, time.Now()
			r.mu.Unlock()
			close(cur.done)
		}()
	}
	r.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-cur.done:
		return cur.lag, cur.err
	case <-t.C:
		return 0, fmt.Errorf("the broker has not answered within %v (the agent is still asking)", wait)
	}
}

// finishedBefore says whether reading r finished before t (a read still
// under way has not).
func finishedBefore(r *lagReading, t time.Time) bool {
	select {
	case <-r.done:
		return r.at.Before(t)
	default:
		return false
	}
}
