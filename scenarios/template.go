package scenarios

import (
	"encoding/binary"
	"fmt"

	"github.com/cloudprofiler-go/cp/wire"
)

// Template is a pre-serialized data bucket: header and tuples are encoded
// once before a run; per send only the sequence number, tuple ids and times
// are patched in place (no encoding, no allocation).
type Template struct {
	Msg    []byte
	count  int
	idOffs []int32 // offsets of the 8 id bytes of each tuple
	tsOffs []int32 // offsets of the 8 intended-time bytes
	etOffs []int32 // offsets of the 8 event-time bytes (ad events), or empty
}

// Templates builds enough buckets of bucketSize tuples for stream to cycle
// through all encoded tuples once (at least one bucket).
func Templates(encoded []Encoded, stream uint32, bucketSize int) ([]Template, error) {
	if bucketSize < 1 {
		return nil, fmt.Errorf("bucket size must be at least 1, got %d", bucketSize)
	}
	if len(encoded) == 0 {
		return nil, fmt.Errorf("no tuples to put in buckets")
	}
	n := (len(encoded) + bucketSize - 1) / bucketSize
	out := make([]Template, n)
	next := 0
	for i := range out {
		size := wire.HeaderSize
		for j := 0; j < bucketSize; j++ {
			size += len(encoded[(next+j)%len(encoded)].Bytes)
		}
		if size-wire.HeaderSize > 1<<31 {
			return nil, fmt.Errorf("bucket of %d tuples is too large (%d bytes)", bucketSize, size)
		}
		t := Template{Msg: make([]byte, wire.HeaderSize, size), count: bucketSize,
			idOffs: make([]int32, bucketSize), tsOffs: make([]int32, bucketSize)}
		for j := 0; j < bucketSize; j++ {
			e := encoded[next%len(encoded)]
			next++
			base := int32(len(t.Msg))
			t.idOffs[j] = base + int32(e.IDOff) + 1
			t.tsOffs[j] = base + int32(e.IntendedOff) + 1
			if e.EventTimeOff >= 0 {
				t.etOffs = append(t.etOffs, base+int32(e.EventTimeOff)+1)
			}
			t.Msg = append(t.Msg, e.Bytes...)
		}
		wire.PutHeader(t.Msg, wire.Header{Kind: wire.KindData, Stream: stream, Count: uint32(bucketSize),
			BodyLen: uint32(len(t.Msg) - wire.HeaderSize)})
		out[i] = t
	}
	return out, nil
}

// Count is the number of tuples in the bucket.
func (t *Template) Count() int { return t.count }

// Patch sets the bucket's sequence number, gives its tuples the ids
// firstID, firstID+1, ..., and stamps all of them with the bucket's
// intended emission time (Unix ns; event time in ms for ad events).
func (t *Template) Patch(seq, firstID uint64, intendedNs int64) {
	m := t.Msg
	wire.PutSeq(m, seq)
	for i, off := range t.idOffs {
		binary.BigEndian.PutUint64(m[off:], firstID+uint64(i))
	}
	for _, off := range t.tsOffs {
		binary.BigEndian.PutUint64(m[off:], uint64(intendedNs))
	}
	if len(t.etOffs) > 0 {
		ms := uint64(intendedNs / 1e6)
		for _, off := range t.etOffs {
			binary.BigEndian.PutUint64(m[off:], ms)
		}
	}
}
