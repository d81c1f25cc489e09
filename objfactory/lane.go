package objfactory

import (
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cloudprofiler-go/cp/internal/osthread"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/wire"
	"github.com/cloudprofiler-go/cp/wire/jsonev"
)

// Source delivers messages to a lane. Recv receives one message into the
// bucket: it sets b.Msg, which must stay valid until the next Recv into the
// same bucket (a source that owns message memory frees the previous message
// of that bucket then; b.Slot identifies the bucket), and b.Waited when it
// had to wait for the message (the lane's accounting: a source that never
// sets it says every message was already there). Recv returns
// ErrTimeout when nothing arrived within its poll interval, so the lane can
// notice a stop.
type Source interface {
	Recv(b *Bucket) error
}

// ErrTimeout is returned by a Source when no message arrived in time.
var ErrTimeout = errors.New("no message within the poll interval")

// ErrOversized is returned by a Source for a message above its size limit
// (the message is discarded).
var ErrOversized = errors.New("message larger than the receive limit")

// Malformed-message reasons, in the order of LaneStats.Malformed.
const (
	ReasonShort = iota
	ReasonMagic
	ReasonVersion
	ReasonKind
	ReasonLength
	ReasonTuple
	ReasonOversized
	ReasonEnd
	ReasonStream    // stream id above 0xffff
	ReasonMultipart // a part of a multipart ZeroMQ message
	ReasonAfterEnd  // data or a second end marker after a stream's end marker
	ReasonJSON      // a JSON event that is not a JSON object (format=json)
	ReasonField     // a JSON event whose declared field is missing or of the wrong type
	numReasons
)

// ReasonNames are the label values of the malformed-message reasons.
var ReasonNames = [numReasons]string{"short", "magic", "version", "kind", "length", "tuple", "oversized", "end_marker", "stream", "multipart", "after_end", "json", "field"}

// SourceError is a Source's answer for one malformed message it skipped
// before decoding (a broker's entry without its payload): counted under
// Reason, and the lane goes on.
type SourceError struct {
	Reason int
	Err    error
}

func (e *SourceError) Error() string { return e.Err.Error() }
func (e *SourceError) Unwrap() error { return e.Err }

// ErrMultipart is returned by a Source for every part of a multipart
// message (the format is single-part: the parts are discarded).
var ErrMultipart = errors.New("part of a multipart message")

func reasonOf(err error) int {
	var se *SourceError
	switch {
	case errors.As(err, &se) && se.Reason >= 0 && se.Reason < numReasons:
		return se.Reason
	case errors.Is(err, wire.ErrShort):
		return ReasonShort
	case errors.Is(err, wire.ErrMagic):
		return ReasonMagic
	case errors.Is(err, wire.ErrVersion):
		return ReasonVersion
	case errors.Is(err, wire.ErrKind):
		return ReasonKind
	case errors.Is(err, wire.ErrBodyLen):
		return ReasonLength
	case errors.Is(err, ErrOversized):
		return ReasonOversized
	case errors.Is(err, wire.ErrStream):
		return ReasonStream
	case errors.Is(err, ErrMultipart):
		return ReasonMultipart
	case errors.As(err, new(*jsonev.FieldError)):
		return ReasonField
	case errors.Is(err, jsonev.ErrNotObject), errors.Is(err, jsonev.ErrSyntax), errors.Is(err, jsonev.ErrDepth):
		return ReasonJSON
	case errors.Is(err, wire.ErrTruncated), errors.Is(err, wire.ErrType),
		errors.Is(err, wire.ErrTupleCount), errors.Is(err, wire.ErrTupleFields), errors.Is(err, wire.ErrTupleValue):
		return ReasonTuple
	}
	return ReasonEnd
}

// LaneStats are the lane's counters, written by its deserializer only and
// readable from any goroutine.
type LaneStats struct {
	Messages   atomic.Uint64 // well-formed messages (buckets and end markers)
	Bytes      atomic.Uint64
	Malformed  [numReasons]atomic.Uint64
	LastError  atomic.Pointer[string] // most recent malformed reason, for logs
	BusyTicks  atomic.Uint64          // TSC ticks spent decoding (service time)
	StallCount atomic.Uint64          // times the deserializer waited for a free bucket
}

// MalformedTotal sums the malformed counters.
func (s *LaneStats) MalformedTotal() uint64 {
	var n uint64
	for i := range s.Malformed {
		n += s.Malformed[i].Load()
	}
	return n
}

// Lane is one receive path: a deserializer goroutine that fills buckets and
// a consumer that drains them, connected by a full ring and a free ring of
// the same capacity. Because there are exactly capacity buckets, the full
// ring never overflows: when the consumer falls behind, the deserializer
// runs out of free buckets and stops receiving, the socket's queue fills,
// and backpressure reaches the sender.
type Lane struct {
	ID    int
	Stats LaneStats
	// Acct, if set before Run, accounts the deserializer's time: waiting
	// (in a receive call that had to wait), decoding (a receive call of a
	// message that was already there, decoding it, and until it is
	// queued, the accept hook included) and blocked (no free bucket). The
	// source says which receive calls waited (Bucket.Waited): the socket
	// is asked without waiting first, and only when empty a second time
	// (a second call per message, asked always, cost 16% of throughput in
	// buckets of 100, BENCHMARKS.md; asked only when empty it costs
	// nothing when the lane is busy). A service-rate period closes at the
	// end of a bucket (Account.Close).
	Acct *stage.Account
	// Queued, if set before Run, is called after every bucket the lane
	// queues for the consumer: a consumer that parks when its rings are
	// empty is woken by it instead of polling.
	Queued func()
	// DecodeMessage, if set before Run, decodes every message instead of
	// the wire format's decoder (a broker's JSON events).
	DecodeMessage func(b *Bucket) error
	full          *Ring[*Bucket]
	free          *Ring[*Bucket]
	decode        scenarios.Decoder
}

// NewLane pre-allocates capacity buckets (a power of two), numbered by
// Slot from 0 to capacity-1. A nil decode makes a draining lane that checks
// headers only.
func NewLane(id, capacity int, decode scenarios.Decoder) (*Lane, error) {
	full, err := NewRing[*Bucket](capacity)
	if err != nil {
		return nil, err
	}
	free, _ := NewRing[*Bucket](capacity)
	for i := 0; i < capacity; i++ {
		free.Push(&Bucket{Lane: id, Slot: i})
	}
	return &Lane{ID: id, full: full, free: free, decode: decode}, nil
}

// Accept is called by the deserializer for every well-formed message, after
// decoding and before the bucket is queued; it returns false to recycle the
// bucket at once (e.g. a duplicate). It runs on the deserializer goroutine.
type Accept func(b *Bucket) bool

// Run is the deserialization loop. It returns when stop is set (checked at
// least once per poll interval of src) or src fails with an error other than
// a timeout or a malformed message, which it returns.
func (l *Lane) Run(src Source, stop *atomic.Bool, accept Accept) error {
	var b *Bucket
	l.Acct.Start(stage.Waiting, tsc.ReadFast())
	defer func() { l.Acct.End(tsc.ReadFast()) }()
	for !stop.Load() {
		if b == nil {
			b = l.getFree(stop)
			if b == nil {
				return nil
			}
		}
		b.Waited = false
		err := src.Recv(b) // waiting (see Lane.Acct)
		if err == nil && !b.Waited {
			l.Acct.Recolour(stage.Decoding) // it was there: the lane was busy
		}
		if err != nil {
			if err == ErrTimeout {
				l.Acct.Mark(tsc.ReadFast()) // the next call's interval begins now
				continue
			}
			if err == ErrOversized || err == ErrMultipart || errors.As(err, new(*SourceError)) {
				l.malformed(err)
				l.Acct.Mark(tsc.ReadFast())
				continue
			}
			return err
		}
		t0 := tsc.ReadFast()
		b.Received = t0
		l.Acct.Enter(stage.Decoding, t0)
		if l.DecodeMessage != nil {
			err = l.DecodeMessage(b)
		} else {
			err = b.Decode(l.decode)
		}
		l.Stats.BusyTicks.Add(tsc.ReadFast() - t0)
		if err != nil {
			l.malformed(err)
			l.waiting()
			continue // reuse the same bucket
		}
		l.Stats.Messages.Add(1)
		l.Stats.Bytes.Add(uint64(len(b.Msg)))
		l.Acct.Add(1, uint64(b.Header.Count))
		if accept == nil || accept(b) {
			l.full.Push(b) // cannot fail: see Lane
			b = nil
			if l.Queued != nil {
				l.Queued()
			}
		}
		l.waiting()
	}
	return nil
}

// waiting accounts the lane as waiting from now: back in the receive call.
func (l *Lane) waiting() {
	if l.Acct != nil {
		now := tsc.ReadFast()
		l.Acct.Close(now) // the end of a bucket: a service-rate period may end
		l.Acct.Enter(stage.Waiting, now)
	}
}

func (l *Lane) malformed(err error) { l.Malformed(reasonOf(err), err) }

// Malformed counts a message refused for reason r (also by an Accept hook,
// e.g. data after its stream's end).
func (l *Lane) Malformed(r int, err error) {
	l.Stats.Malformed[r].Add(1)
	msg := err.Error()
	if !strings.HasPrefix(msg, ReasonNames[r]) { // a field's error names it already
		msg = ReasonNames[r] + ": " + msg
	}
	l.Stats.LastError.Store(&msg)
}

// getFree waits for the consumer to release a bucket, spinning briefly and
// then sleeping so a stalled consumer does not cost a core.
func (l *Lane) getFree(stop *atomic.Bool) *Bucket {
	if b, ok := l.free.Pop(); ok {
		return b
	}
	l.Stats.StallCount.Add(1)
	l.Acct.Enter(stage.Starved, tsc.ReadFast())
	for spins := 0; !stop.Load(); spins++ {
		if b, ok := l.free.Pop(); ok {
			l.waiting()
			return b
		}
		if spins < 100 {
			osthread.Yield()
		} else {
			osthread.Nap(20 * time.Microsecond) // time.Sleep would take ~1 ms
		}
	}
	return nil
}

// Pop returns the next decoded bucket, if any (consumer side).
func (l *Lane) Pop() (*Bucket, bool) { return l.full.Pop() }

// Release returns a consumed bucket for reuse (consumer side). Its tuples
// must not be used afterwards.
func (l *Lane) Release(b *Bucket) { l.free.Push(b) }

// Occupancy is the number of decoded buckets waiting for the consumer.
func (l *Lane) Occupancy() int { return l.full.Len() }

// Capacity is the number of buckets in the lane.
func (l *Lane) Capacity() int { return l.full.Cap() }
