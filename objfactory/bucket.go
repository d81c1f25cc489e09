package objfactory

import (
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/wire"
)

// Bucket is one received message and the tuple objects decoded from it. A
// bucket travels deserializer -> consumer -> back to the deserializer's free
// ring; its message (owned by the Source) and tuple slice are reused, so
// after warm-up nothing is allocated.
type Bucket struct {
	Msg    []byte // the whole message (owned by the Source); tuple byte fields point into it
	Header wire.Header
	Tuples []scenarios.Tuple // Header.Count decoded tuples (data buckets)
	End    wire.End          // final counts (end markers)
	Lane   int               // index of the lane that received it
	// Received is the TSC when the lane got the message, before decoding
	// (the profiler's "receive" point).
	Received uint64
	// Waited is set by a Source that had no message ready and waited for
	// this one; false: the message was already there (the lane was busy).
	Waited bool
	Slot   int // the bucket's number within its lane
	// Tag is set by the lane's Accept hook (e.g. per-stream state) for the
	// consumer, so the consumer needs no lookup of its own.
	Tag any
}

// minTupleBytes is the smallest possible msgpack tuple (fixarray + two
// fixints): it bounds the tuple count a header may claim, so a hostile
// header cannot make the decoder allocate a huge slice.
const minTupleBytes = 3

// Decode parses Msg (header, then every tuple for a data bucket, or the
// final counts for an end marker). With a nil decoder only the header is
// checked and Tuples stays empty (drain mode: Header.Count says how many
// tuples the bucket holds). On error the bucket must be discarded. Data
// buckets decode without allocating once Tuples has grown to the largest
// bucket seen.
func (b *Bucket) Decode(dec scenarios.Decoder) error {
	h, err := wire.ParseHeader(b.Msg)
	if err != nil {
		return err
	}
	b.Header = h
	if h.Kind == wire.KindEnd {
		b.Tuples = b.Tuples[:0]
		b.End, err = wire.ParseEnd(b.Msg)
		return err
	}
	if dec == nil {
		b.Tuples = b.Tuples[:0]
		if uint64(h.Count)*minTupleBytes > uint64(h.BodyLen) {
			return wire.ErrTupleCount
		}
		return nil
	}
	n := int(h.Count)
	if uint64(h.Count)*minTupleBytes > uint64(h.BodyLen) {
		return wire.ErrTupleCount
	}
	if cap(b.Tuples) < n {
		b.Tuples = make([]scenarios.Tuple, n)
	}
	b.Tuples = b.Tuples[:n]
	off := wire.HeaderSize
	msg := b.Msg
	for i := range b.Tuples {
		if off, err = dec(msg, off, &b.Tuples[i]); err != nil {
			return err
		}
	}
	if off != len(msg) {
		return wire.ErrTupleCount
	}
	return nil
}
