package sender

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/cloudprofiler-go/cp/internal/zmqraw"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/wire"
)

// BatchSpan is the longest stretch of the schedule one batch covers: the
// C side busy-waits between the batch's due times, so a stop, the end of
// the run or an injected stall is noticed at most this late, and the
// thread spins no longer than the idle strategies' own final spin.
const BatchSpan = 4 * time.Microsecond

// batchBytes bounds a batch's messages in bytes: big buckets gain nothing
// from batching (the cgo transition is ~40 ns of a send that costs µs),
// and every message of a batch needs a template of its own.
const batchBytes = 64 << 10

// SendBatchAuto is the batch size used when none is given: as many
// messages as fit batchBytes, 1 to 16. Sixteen unbatched tuples at the
// C reference's ~100-150 ns per send take ~2 µs, inside BatchSpan.
func SendBatchAuto(messageBytes int) int {
	return max(1, min(16, batchBytes/max(messageBytes, 1)))
}

// stampedInC says whether the C side reads the same TSC as the Go side
// (x86-64): only then can it wait for due times and stamp sends, so only
// then does a batch hold more than one bucket; otherwise the loop stamps
// its single bucket itself.
const stampedInC = zmqraw.StampsTSC && tsc.Native

// setupBatch sizes the thread's batch and gives every message of a batch
// its own template, repeating the cycle of templates whole (so that the
// tuples' order in the stream stays that of the scenario). Without a TSC
// read by the C side (not x86-64), batches hold one message.
func (t *thread) setupBatch(configured int) {
	n := configured
	if n == 0 {
		n = SendBatchAuto(len(t.tpls[0].Msg))
	}
	if !stampedInC {
		n = 1
	}
	if cycle := len(t.tpls); cycle < n {
		for i := 0; len(t.tpls) < n || len(t.tpls)%cycle != 0; i++ {
			t.tpls = append(t.tpls, t.tpls[i%cycle].Clone())
		}
	}
	t.items = make([]zmqraw.BatchItem, n)
	t.msgs = make([][]byte, n)
	t.dues = make([]dueMemo, n+1)
}

// dueMemo remembers the due time of slot k-1 (k 0: empty). A batch looks
// one slot ahead, and one that stops early is formed again from the slot
// after the failure: shapes like poisson only answer slots in order.
type dueMemo struct{ k, due uint64 }

// due is the schedule's due time of slot k, each slot asked of it once.
func (t *thread) due(k uint64) uint64 {
	m := &t.dues[k%uint64(len(t.dues))]
	if m.k != k+1 {
		*m = dueMemo{k: k + 1, due: t.sched.Due(k)}
	}
	return m.due
}

// prepare patches the templates of the next slots from e.k on into
// t.items and returns how many: up to the batch size and the slot limit,
// and, paced, only slots due within BatchSpan of the first (whose due time
// is first, already waited for) and before end. Unpaced, every tuple is
// stamped with at, the instant the batch was formed: its intended time is
// at most a batch's sending time (~2 µs) before its send.
func (t *thread) prepare(e *emission, clock *tsc.Clock, paced bool, first, at, end, bucket, spanTicks uint64) int {
	horizon := max(first, at) + spanTicks
	idx, seq, tuple := e.idx, e.seq, e.tupleSeq
	n := 0
	for n < len(t.items) && e.k+uint64(n) < t.slots {
		due := at
		if paced {
			due = first
			if n > 0 {
				if due = t.due(e.k + uint64(n)); due >= end || due > horizon {
					break
				}
			}
		}
		tpl := &t.tpls[idx]
		intended := clock.UnixNano(due)
		tpl.Patch(seq, wire.TupleID(t.stream, tuple), intended)
		if t.win != nil {
			t.win.stamp(n, intended)
		}
		it := &t.items[n]
		it.Buf, it.Len, it.Due = msgAddr(tpl), uint64(len(tpl.Msg)), 0
		t.msgs[n] = tpl.Msg
		if paced {
			it.Due = due // the first is due already: C does not wait for it
		}
		seq++
		tuple += bucket
		if idx++; idx == len(t.tpls) {
			idx = 0
		}
		n++
	}
	return n
}

// msgAddr is the address of a template's message for the C side; the
// templates live as long as the thread.
func msgAddr(tpl *scenarios.Template) uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(tpl.Msg)))
}

// countMatches counts, per template, the tuples the declared predicate
// keeps (before the run: the loop only adds them up).
func (t *thread) countMatches(p *scenarios.Predicate) error {
	if p == nil {
		return nil
	}
	t.matches = make([]uint64, len(t.tpls))
	for i := range t.tpls {
		n, err := p.Matches(t.tpls[i].Msg)
		if err != nil {
			return fmt.Errorf("count the matches of %q: %w", p.Expr, err)
		}
		t.matches[i] = uint64(n)
	}
	return nil
}
