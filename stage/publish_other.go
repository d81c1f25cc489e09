//go:build !amd64 || race

package stage

import "sync/atomic"

// publish: see publish_amd64.go. Elsewhere the hardware may reorder
// stores, and the race detector must see the synchronisation: atomic.
func publish(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
