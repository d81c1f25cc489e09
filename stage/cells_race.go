//go:build race

package stage

import "sync/atomic"

// store under the race detector: atomic, so that sampling is visibly
// synchronised (see cells_norace.go for the real one).
func store(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
