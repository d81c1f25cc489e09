package objfactory

import (
	"fmt"
	"sync/atomic"
)

// cacheLine separates fields written by different threads so the producer
// and consumer do not invalidate each other's cache line on every operation.
const cacheLine = 64

// Ring is a bounded lock-free SPSC queue. Exactly one goroutine may call
// Push and exactly one (other) goroutine may call Pop; Len may be called by
// anyone. Each side caches the other's index and re-reads it only when the
// ring looks full (or empty), which keeps cross-core traffic to one cache
// line transfer per batch of operations.
type Ring[T any] struct {
	_          [cacheLine]byte
	head       atomic.Uint64 // next index to pop; written by the consumer
	_          [cacheLine - 8]byte
	tail       atomic.Uint64 // next index to push; written by the producer
	_          [cacheLine - 8]byte
	cachedHead uint64 // producer's last view of head
	_          [cacheLine - 8]byte
	cachedTail uint64 // consumer's last view of tail
	_          [cacheLine - 8]byte
	mask       uint64
	buf        []T
}

// NewRing returns a ring holding up to capacity items; capacity must be a
// power of two.
func NewRing[T any](capacity int) (*Ring[T], error) {
	if capacity < 1 || capacity&(capacity-1) != 0 {
		return nil, fmt.Errorf("ring capacity must be a power of two, got %d", capacity)
	}
	return &Ring[T]{mask: uint64(capacity - 1), buf: make([]T, capacity)}, nil
}

// Push appends v and reports false if the ring is full.
func (r *Ring[T]) Push(v T) bool {
	t := r.tail.Load()
	if t-r.cachedHead > r.mask {
		r.cachedHead = r.head.Load()
		if t-r.cachedHead > r.mask {
			return false
		}
	}
	r.buf[t&r.mask] = v
	r.tail.Store(t + 1)
	return true
}

// Pop removes the oldest item and reports false if the ring is empty.
func (r *Ring[T]) Pop() (T, bool) {
	var zero T
	h := r.head.Load()
	if h == r.cachedTail {
		r.cachedTail = r.tail.Load()
		if h == r.cachedTail {
			return zero, false
		}
	}
	v := r.buf[h&r.mask]
	r.buf[h&r.mask] = zero
	r.head.Store(h + 1)
	return v, true
}

// Len is the number of items in the ring at some instant during the call.
func (r *Ring[T]) Len() int {
	h := r.head.Load()
	return int(r.tail.Load() - h)
}

// Cap is the ring's capacity.
func (r *Ring[T]) Cap() int { return int(r.mask + 1) }
