package stage

import (
	"math/bits"
	"sync/atomic"
)

// live is a stage's latest state changes, kept for a live view (cpsweep
// watch's critical participation): a ring of the last size changes that
// the stage's own goroutine writes without waiting and anyone may read.
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

// EnableLive makes every account added from now on keep its last size
// state changes for Live. Call it before the first Add.
func (s *Set) EnableLive(size int) {
	if s != nil && size > 0 {
		s.mu.Lock()
		s.liveSize = size
		s.mu.Unlock()
	}
}

// Live returns every live stage's changes after its cursor in since (by
// stage name; a stage not named starts at its oldest change kept), at
// most limit per stage (the latest; 0: all kept). Nil when live changes
// are off.
func (s *Set) Live(since map[string]uint64, limit int) []LiveStage {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	accounts := append([]*Account(nil), s.accounts...)
	s.mu.Unlock()
	var out []LiveStage
	for _, a := range accounts {
		if a.live == nil {
			continue
		}
		from, asked := since[a.name]
		changes, next, lost := a.live.read(from, limit, nil)
		if !asked {
			lost = 0 // nothing was asked for: nothing was lost
		}
		out = append(out, LiveStage{Name: a.name, Kind: a.kind, Next: next, Lost: lost, Changes: changes})
	}
	return out
}
