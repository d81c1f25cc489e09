package receiver

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/wire"
)

// seqWindow is how many recent bucket sequence numbers each stream
// remembers to tell a duplicate from a late arrival: the numbers from the
// highest seen minus 1023 to the highest seen (docs/wire.md).
const seqWindow = 1024

// stream is the accounting of one sender stream. Fields marked (d) are
// written only by the deserializer of the stream's lane, (c) only by the
// consumer; the atomics are read by anyone.
type stream struct {
	id   uint32
	lane int
	acct *stage.Account // arrivals: the network stage's output (nil: not accounted)

	recvBuckets atomic.Uint64 // (d)
	recvTuples  atomic.Uint64 // (d)
	outOfSeq    atomic.Uint64 // (d) buckets that arrived ahead of or behind the next expected
	duplicates  atomic.Uint64 // (d) buckets seen twice (discarded)
	missing     atomic.Uint64 // (d) sequence numbers skipped and not (yet) filled
	stale       atomic.Uint64 // (d) buckets too far behind to check (discarded)
	next        uint64        // (d) next expected sequence number
	from        uint64        // (d) the first sequence number this run expected
	joining     bool          // (d) a job's stream not seen before: the first bucket sets next
	resumed     bool          // (d) a job's stream resumed from an earlier trial: a first bucket 0 is a restart
	earlier     atomic.Uint64 // (c) tuples of an earlier trial (not consumed)
	forged      atomic.Uint64 // (c) tuples with an identity never sent (not consumed)
	rewritten   atomic.Uint64 // (c) tuples whose sealed intended time was changed (not consumed)
	seen        [seqWindow / 64]uint64
	endSeen     bool // (d) the end marker has passed the deserializer

	consumedTuples  atomic.Uint64 // (c)
	consumedBuckets atomic.Uint64 // (c)
	end             wire.End      // (c) valid once ended is set
	ended           atomic.Bool   // (c)
}

func (s *stream) bit(seq uint64) (int, uint64) {
	i := seq % seqWindow
	return int(i / 64), 1 << (i % 64)
}

// track records a data bucket's sequence number and reports whether to
// discard it: a duplicate, or stale (more than seqWindow behind the highest
// number seen, too old to tell from a duplicate). Sequence numbers start at
// 0 and grow by one per bucket, and ZeroMQ keeps order per connection, so
// anything else is loss, reordering (e.g. across a reconnect) or
// duplication by a system in between.
func (s *stream) track(seq uint64) (discard bool) {
	switch {
	case s.joining: // a job's output stream, joined mid-sequence
		s.joining, s.next, s.from = false, seq, seq
	case s.resumed: // where an earlier trial left it, unless the job started again
		if s.resumed = false; seq == 0 {
			s.next, s.from = 0, 0
		}
	}
	switch {
	case seq == s.next:
		w, b := s.bit(seq)
		s.seen[w] |= b
		s.next++
	case seq > s.next:
		s.outOfSeq.Add(1)
		s.missing.Add(seq - s.next)
		if seq-s.next >= seqWindow {
			s.seen = [seqWindow / 64]uint64{}
		} else {
			for q := s.next; q < seq; q++ {
				w, b := s.bit(q)
				s.seen[w] &^= b
			}
		}
		w, b := s.bit(seq)
		s.seen[w] |= b
		s.next = seq + 1
	default: // behind: a duplicate, or a late bucket filling a gap
		s.outOfSeq.Add(1)
		if s.next-seq > seqWindow {
			// Too old to tell a duplicate from a late arrival: counting it
			// could count a tuple twice, so it is discarded; the stream
			// keeps the gap (missing) and will not be complete.
			s.outOfSeq.Add(^uint64(0))
			s.stale.Add(1)
			return true
		}
		w, b := s.bit(seq)
		if s.seen[w]&b != 0 {
			s.outOfSeq.Add(^uint64(0))
			s.duplicates.Add(1)
			return true
		}
		s.seen[w] |= b
		if s.missing.Load() > 0 {
			s.missing.Add(^uint64(0))
		}
	}
	return false
}

// streamTable maps stream ids to their accounting for one lane. The lane's
// deserializer is the only writer; the mutex guards inserts against readers
// on other goroutines (metrics, results), and the deserializer reads its own
// map without it.
type streamTable struct {
	mu     sync.Mutex
	m      map[uint32]*stream
	last   *stream // one-entry cache: most lanes carry one stream
	lane   int
	stages *stage.Set // nil: no stage accounting
	// A job's output streams go on across trials: a stream starts at its
	// next sequence number from an earlier trial, or, with join, at the
	// first bucket seen (Config.StreamNext).
	next map[uint32]uint64
	join bool
}

func (t *streamTable) get(id uint32) *stream {
	if t.last != nil && t.last.id == id {
		return t.last
	}
	s, ok := t.m[id]
	if !ok {
		name := fmt.Sprintf("stream%d", id)
		if id == jsonStream {
			name = fmt.Sprintf("events%d", t.lane) // a lane's JSON events
		}
		s = &stream{id: id, lane: t.lane, acct: t.stages.Add(name, stage.Network, nil)}
		if n, ok := t.next[id]; ok {
			s.next, s.from, s.resumed = n, n, true
		} else {
			s.joining = t.join
		}
		t.mu.Lock()
		if t.m == nil {
			t.m = make(map[uint32]*stream)
		}
		t.m[id] = s
		t.mu.Unlock()
	}
	t.last = s
	return s
}

// all returns the streams sorted by id (any goroutine).
func (t *streamTable) all() []*stream {
	t.mu.Lock()
	out := make([]*stream, 0, len(t.m))
	for _, s := range t.m {
		out = append(out, s)
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// count returns how many streams the table holds and how many have ended,
// without allocating (the monitor asks every few milliseconds).
func (t *streamTable) count() (streams, ended int) {
	t.mu.Lock()
	for _, s := range t.m {
		streams++
		if s.ended.Load() {
			ended++
		}
	}
	t.mu.Unlock()
	return streams, ended
}
