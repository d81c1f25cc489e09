package activity

import (
	"fmt"
	"math"
)

// Kind is an activity's kind: one per stage state (package stage), plus
// the time between two logged activities (Gap) and a bucket between two
// workers (Message).
type Kind uint8

// The kinds. Waiting ones (on another worker: a message, a free bucket,
// room in a socket) never carry the critical path. Pacing is not waiting:
// the sender waits on its own schedule, on no other worker, so at a
// sustainable rate the critical path runs along the schedule.
const (
	Pacing   Kind = iota // sender thread: waiting for its next slot
	Send                 // sender thread: sending (busy)
	Blocked              // sender thread: socket full (waiting)
	RecvWait             // lane: in a receive call that waited (waiting)
	Decode               // lane: decoding (busy)
	FreeWait             // lane: no free bucket (waiting)
	Idle                 // consumer: every ring empty (waiting)
	Consume              // consumer: consuming (busy)
	// A job's operator (dataflow.Trace, any name): waiting for its input,
	// busy on it, or Blocked on its output as a sender's socket is full.
	Waiting
	Busy
	Gap     // unlogged time between activities: waiting above the threshold
	Message // a bucket from one worker to another (a remote edge)
	// CPUWait is a worker's time on the critical paths during which its
	// thread was runnable but not running: never an edge, it is
	// apportioned afterwards from the thread's host accounting
	// (Report.ApportionCPUWait).
	CPUWait
	numKinds
)

var kindNames = [numKinds]string{"pacing", "send", "blocked", "recv-wait", "decode", "free-wait", "idle", "consume", "waiting", "busy", "gap", "message", "cpu-wait"}

func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// waitingKind says whether an activity of kind k waits on another worker.
func waitingKind(k Kind) bool {
	switch k {
	case Blocked, RecvWait, FreeWait, Idle, Waiting:
		return true
	}
	return false
}

// inputWaitKind says whether an activity of kind k waits for its input
// to arrive (not for room downstream, and not for its own schedule).
func inputWaitKind(k Kind) bool { return k == RecvWait || k == Idle || k == Waiting }

// processingKind says whether kind k is a stage processing data (what
// --operator-max bounds and progress counts).
func processingKind(k Kind) bool { return k == Send || k == Decode || k == Consume || k == Busy }

// Activity is one worker's activity from StartNs to EndNs, processing
// Items (buckets or tuples, as the stage counts them).
type Activity struct {
	Kind           Kind
	StartNs, EndNs int64
	Items          uint32
}

// Transfer is a bucket sent by worker From at SentNs and received by
// worker To at RecvNs (reference-domain times), with ErrNs the bound on the
// error of RecvNs − SentNs (0 on one node).
type Transfer struct {
	From, To       int
	SentNs, RecvNs int64
	ErrNs          int64
	Tuples         uint32
	// Internal: between two operators of a job, where a tuple waits in a
	// queue in front of a busy operator or in a window's buffer for event
	// time to pass (the job's own schedule, as pacing is the senders'),
	// never in a transport: always clipped (Options.MessageDelayNs).
	Internal bool
}

// Trace is the input of the analysis: each worker's activities, sorted and
// not overlapping, and the transfers between them.
type Trace struct {
	Workers    []string     // "sender0/thread0", "receiver0/lane0", ...
	Activities [][]Activity // per worker
	Transfers  []Transfer
	// Progress, if set, holds per worker the sorted instants at which it
	// finished items (the consumer's consumed point): finer than its
	// activities, since a stage that works without a break logs no state
	// change for as long as it works. Nil: progress is read from the ends
	// of busy activities.
	Progress [][]int64
}

// Validate refuses a trace the graph cannot be built from.
func (t *Trace) Validate() error {
	if len(t.Activities) != len(t.Workers) {
		return fmt.Errorf("trace: %d workers but %d activity lists", len(t.Workers), len(t.Activities))
	}
	for w, acts := range t.Activities {
		prev := int64(math.MinInt64)
		for i, a := range acts {
			if a.Kind >= Gap || a.EndNs < a.StartNs || a.StartNs < prev {
				return fmt.Errorf("trace: worker %s activity %d (%s %d..%d) is not a stage activity in order", t.Workers[w], i, a.Kind, a.StartNs, a.EndNs)
			}
			prev = a.EndNs
		}
	}
	if t.Progress != nil && len(t.Progress) != len(t.Workers) {
		return fmt.Errorf("trace: %d workers but %d progress lists", len(t.Workers), len(t.Progress))
	}
	for w, p := range t.Progress {
		for i := 1; i < len(p); i++ {
			if p[i] < p[i-1] {
				return fmt.Errorf("trace: worker %s progress %d is out of order", t.Workers[w], i)
			}
		}
	}
	for i, x := range t.Transfers {
		if x.From < 0 || x.From >= len(t.Workers) || x.To < 0 || x.To >= len(t.Workers) || x.ErrNs < 0 {
			return fmt.Errorf("trace: transfer %d names worker %d -> %d of %d (error bound %d)", i, x.From, x.To, len(t.Workers), x.ErrNs)
		}
	}
	return nil
}

// Ambiguous says whether a transfer's order cannot be told within its
// error bound: the receive may have come before the send.
func (x Transfer) Ambiguous() bool { return x.RecvNs-x.SentNs < x.ErrNs }
