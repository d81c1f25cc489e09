// Package receiver is dgrecv's engine: one PULL socket per lane feeding the
// object factory, a consumer that drains the lanes a tuple at a time (the
// stand-in for a system under test's source operator), per-stream accounting
// (received, consumed, out of sequence, duplicates, missing) and end-of-run
// detection from the senders' end markers.
package receiver
