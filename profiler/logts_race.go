//go:build race

package profiler

import "sync/atomic"

// LogTS: see logts_norace.go; the race detector's build counts atomically.
func (c *Channel) LogTS(id uint64) {
	if s := (*state)(atomic.LoadPointer(&c.st)); s.kind > kindSPC {
		c.slow(id)
	} else {
		s.spc.inc()
	}
}

// LogTSAt: see logts_norace.go.
func (c *Channel) LogTSAt(tsc, id uint64) {
	if s := (*state)(atomic.LoadPointer(&c.st)); s.kind > kindSPC {
		c.slowAt(tsc, id)
	} else {
		s.spc.inc()
	}
}
