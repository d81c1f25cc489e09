//go:build !amd64

package tsc

import "time"

// Native is false on architectures without an x86 TSC. There, Read returns
// nanoseconds of the monotonic clock since process start, so a "tick" is one
// nanosecond and everything built on this package keeps working, at the cost
// of the clock's read overhead (~20-40 ns) and without a CPU id.
const Native = false

var epoch = time.Now()

// Read returns monotonic nanoseconds since process start (fallback).
func Read() uint64 { return uint64(time.Since(epoch)) }

// ReadFast is Read on this architecture.
func ReadFast() uint64 { return Read() }
