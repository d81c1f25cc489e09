//go:build !race

package profiler

import "sync/atomic"

// LogTS logs the tuple id (and, depending on the handler, the TSC now).
//
// It must stay within the inliner's budget (go build -gcflags=-m shows
// it), so Null and SPC cost a load, a compare and an increment at the call
// site: a Null state has a cell too, which nothing reads, because the
// increment is cheaper than a second branch. A Null channel has one
// writer; one switched from MPC (shared) gets a Null that goes through the
// call instead, so its writers do not share a cache line.
func (c *Channel) LogTS(id uint64) {
	if s := (*state)(atomic.LoadPointer(&c.st)); s.kind > kindSPC {
		c.slow(id)
	} else {
		s.spc.n++
	}
}

// LogTSAt logs the tuple id with a TSC value the caller already has (e.g.
// the instant it sent the tuple), saving a second read of the clock.
func (c *Channel) LogTSAt(tsc, id uint64) {
	if s := (*state)(atomic.LoadPointer(&c.st)); s.kind > kindSPC {
		c.slowAt(tsc, id)
	} else {
		s.spc.n++
	}
}
