//go:build !race

package profiler

import "sync/atomic"

// spcCell is incremented by its single writer with a plain add (the point
// of SPC: ~1 ns, no bus lock) and read by the sampler with an atomic load.
// An aligned 64-bit word is never torn on the platforms Go supports, so the
// sampler sees the old or the new count. Race-detector builds use the
// atomic variant (spc_race.go) so tests stay clean.
type spcCell struct{ n uint64 }

func (c *spcCell) load() uint64 { return atomic.LoadUint64(&c.n) }

func (c *spcCell) total() uint64 { return c.load() }

func (c *spcCell) add(n uint64) { c.n += n }
