package receiver

import (
	"math/bits"
	"slices"

	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/wire"
)

// A map's or a filter's output is judged per identity (docs/sut.md): each
// tuple the job owes arrives once, and none arrives that it does not owe.
// Counts alone cannot tell a job that drops one tuple and repeats another
// from a correct one. The consumer marks every identity it takes in a
// bitmap per sender stream, paged over the stream's sequence numbers.

// idPageBits is the sequence numbers one page of a stream's bitmap covers
// (8 KiB): a stream of a trial fills its pages one after another.
const idPageBits = 1 << 16

// maxIdentityPages bounds the bitmaps of one receiver's trial
// (tally.MaxIdentities: 64 MiB).
const maxIdentityPages = tally.MaxIdentities / idPageBits

// idTop is how many of a stream's highest identities the result lists:
// the verdict counts those beyond what the stream's sender emitted.
const idTop = 64

type idPage [idPageBits / 64]uint64

// idStream is one sender stream's identities.
type idStream struct {
	pages     map[uint64]*idPage
	last      *idPage
	lastN     uint64
	distinct  uint64 // owed identities taken once
	dup       uint64 // identities taken again (not consumed)
	unowed    uint64 // identities the declared filter drops (not consumed)
	unchecked uint64
	hi        uint64 // highest sequence number taken + 1
}

// identities are the consumer's (its goroutine only, until it returns).
type identities struct {
	owed    *scenarios.Owed // nil: every identity sent is owed
	threads int
	streams []idStream // by sender × threads + thread
	pages   int
}

func newIdentities(senders, threads int, owed *scenarios.Owed) *identities {
	return &identities{owed: owed, threads: threads, streams: make([]idStream, senders*threads)}
}

// take marks the identity of a screened tuple (its sender and thread are
// the trial's) and says whether the consumer takes it.
func (ids *identities) take(id uint64) bool {
	stream, seq := wire.SplitTupleID(id)
	s := &ids.streams[int(stream>>8)*ids.threads+int(stream&0xff)]
	if ids.owed != nil && !ids.owed.Kept(seq) {
		s.unowed++
		return false
	}
	n := seq / idPageBits
	p := s.last
	if p == nil || s.lastN != n {
		if p = s.pages[n]; p == nil {
			if ids.pages >= maxIdentityPages {
				s.unchecked++
				return true
			}
			if s.pages == nil {
				s.pages = map[uint64]*idPage{}
			}
			p = new(idPage)
			s.pages[n] = p
			ids.pages++
		}
		s.last, s.lastN = p, n
	}
	w, b := seq%idPageBits/64, uint64(1)<<(seq%64)
	if p[w]&b != 0 {
		s.dup++
		return false
	}
	p[w] |= b
	s.hi = max(s.hi, seq+1)
	s.distinct++
	return true
}

// results lists every stream that took anything, with its highest owed
// identities (an unowed one is never marked).
func (ids *identities) results() []tally.Identities {
	var out []tally.Identities
	for i := range ids.streams {
		s := &ids.streams[i]
		if s.distinct+s.dup+s.unowed+s.unchecked == 0 {
			continue
		}
		out = append(out, tally.Identities{Stream: wire.StreamID(uint8(i/ids.threads), uint8(i%ids.threads)),
			Distinct: s.distinct, Duplicates: s.dup, Unowed: s.unowed, Unchecked: s.unchecked, Next: s.hi, Highest: s.highest(idTop)})
	}
	return out
}

// highest returns the stream's n highest identities taken (sequence
// numbers), highest first.
func (s *idStream) highest(n int) []uint64 {
	keys := make([]uint64, 0, len(s.pages))
	for k := range s.pages {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []uint64
	for i := len(keys) - 1; i >= 0 && len(out) < n; i-- {
		p := s.pages[keys[i]]
		for w := len(p) - 1; w >= 0 && len(out) < n; w-- {
			for word := p[w]; word != 0 && len(out) < n; {
				top := 63 - bits.LeadingZeros64(word)
				out = append(out, keys[i]*idPageBits+uint64(w)*64+uint64(top))
				word &^= 1 << top
			}
		}
	}
	return out
}
