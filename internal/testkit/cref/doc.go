// Package cref is the plain C reference that emission is judged against:
// a sender (one PUSH socket, zmq_send of a preallocated buffer in a loop)
// and a receiver (one PULL socket, zmq_recv into a buffer), compiled with
// the system's C compiler from the sources in src/. Benchmarks run dgsend
// and the C sender into the same C receiver, interleaved, and print ours
// ÷ C from the same run (make bench; docs/performance.md).
package cref
