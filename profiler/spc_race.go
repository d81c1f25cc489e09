//go:build race

package profiler

import "sync/atomic"

// spcCell under the race detector: atomic, so concurrent sampling is
// visible as synchronised (see spc_norace.go for the real one).
type spcCell struct{ n atomic.Uint64 }

func (c *spcCell) inc()         { c.n.Add(1) }
func (c *spcCell) load() uint64 { return c.n.Load() }

func (c *spcCell) total() uint64 { return c.load() }

func (c *spcCell) add(n uint64) { c.n.Add(n) }
