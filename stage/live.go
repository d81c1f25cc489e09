package stage

import (
	"math/bits"
	"sync/atomic"
)

// live is a stage's latest state changes, kept for a live view (cpsweep
// watch's critical participation) once one asked: a ring of the last size
// changes that the stage's own goroutine writes without waiting and
// anyone may read.
// It costs the writer three stores per change (the last one publishing
// the change, see publish); memory is 16 bytes per change kept, however
// long the run.
type live struct {
	words []uint64 // two per change: TSC, ActivityID
	mask  uint64   // size − 1
	next  uint64   // changes written so far (published atomically)
}

func newLive(size int) *live {
	size = 1 << bits.Len(uint(max(size, 2)-1)) // a power of two
	return &live{words: make([]uint64, 2*size), mask: uint64(size - 1)}
}

// LogTSAt appends a change (the writer only). The change's words are
// stored before the count that publishes them.
func (l *live) LogTSAt(t, id uint64) {
	n := l.next
	j := (n & l.mask) * 2
	store(&l.words[j], t)
	store(&l.words[j+1], id)
	publish(&l.next, n+1)
}

// LiveChange is one state change of a stage: at TSC, the stage entered
// State having processed Items items so far.
type LiveChange struct {
	TSC   uint64
	State int
	Items uint64
}

// read appends the changes from index from on (at most limit, the latest
// ones) to dst. next is the index after the last one returned; lost
// counts the changes from from on that were overwritten before they
// could be read, or skipped to stay within limit.
func (l *live) read(from uint64, limit int, dst []LiveChange) (out []LiveChange, next, lost uint64) {
	n := atomic.LoadUint64(&l.next)
	size := l.mask + 1
	if from > n { // a cursor from another trial's stage: start afresh
		from = 0
	}
	first := from
	if n > size && first < n-size {
		first = n - size
	}
	if limit > 0 && n-first > uint64(limit) {
		first = n - uint64(limit)
	}
	start := len(dst)
	for i := first; i < n; i++ {
		j := (i & l.mask) * 2
		t, id := atomic.LoadUint64(&l.words[j]), atomic.LoadUint64(&l.words[j+1])
		state, items := ActivityOf(id)
		dst = append(dst, LiveChange{TSC: t, State: state, Items: items})
	}
	// The writer may have lapped the copy: the change it is writing now
	// (index n2) overwrites index n2 − size, so only the changes after
	// that one are certainly intact.
	if n2 := atomic.LoadUint64(&l.next); n2 >= size {
		if oldest := n2 - size + 1; oldest > first {
			drop := min(oldest-first, n-first)
			dst = append(dst[:start], dst[start+int(drop):]...)
			first += drop
		}
	}
	return dst, n, first - from
}

// LiveStage is one stage's changes since a cursor (Set.Live).
type LiveStage struct {
	Name string
	Kind Kind
	// Next is the cursor to ask from next time; Lost the changes after
	// the cursor that are not in Changes (overwritten, or over the limit).
	Next, Lost uint64
	Changes    []LiveChange
}

// EnableLive makes Live available, keeping size changes per stage. Nothing
// is kept, and a change costs nothing more, until the first call to Live:
// from then on every stage keeps its changes. Call it before the first Add.
func (s *Set) EnableLive(size int) {
	if s != nil && size > 0 {
		s.mu.Lock()
		s.liveSize = size
		s.mu.Unlock()
	}
}

// startLive gives every staged account a ring (s.mu held), seeded with the
// state it is in and since when, so that a stage that never changes state
// again (a consumer busy throughout) still has its activity. The ring is
// written here only before the account can see it; from then on only by
// the account's writer. A change the writer makes between the seed's read
// and the ring's publication is not in the ring: at most one, at the
// instant a live view starts.
func (s *Set) startLive() {
	s.liveOn = true
	for _, a := range s.accounts {
		if len(kindStates[a.kind]) == 0 || a.live.Load() != nil {
			continue
		}
		l := newLive(s.liveSize)
		if m := atomic.LoadUint64(&a.c.mark); m != 0 {
			l.LogTSAt(m&markMask, ActivityID(int(m>>markShift), atomic.LoadUint64(&a.c.items)))
		}
		a.live.Store(l)
	}
}

// Live returns every live stage's changes after its cursor in since (by
// stage name; a stage not named starts at its oldest change kept), at
// most limit per stage (the latest; 0: all kept). The first call starts
// keeping them: it returns each stage's current state. Nil when live
// changes are off.
func (s *Set) Live(since map[string]uint64, limit int) []LiveStage {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	if s.liveSize > 0 && !s.liveOn {
		s.startLive()
	}
	accounts := append([]*Account(nil), s.accounts...)
	s.mu.Unlock()
	var out []LiveStage
	for _, a := range accounts {
		l := a.live.Load()
		if l == nil {
			continue
		}
		from, asked := since[a.name]
		changes, next, lost := l.read(from, limit, nil)
		if !asked {
			lost = 0 // nothing was asked for: nothing was lost
		}
		out = append(out, LiveStage{Name: a.name, Kind: a.kind, Next: next, Lost: lost, Changes: changes})
	}
	return out
}
