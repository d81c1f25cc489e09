package stage

import (
	"sync/atomic"
)

// Kind is what a stage is; it fixes the stage's states.
type Kind string

// The stage kinds of the harness's pipeline: sender threads, the network
// between them and the lanes (or a relayed system under test), lanes and
// the consumer. Network and SUT stages are black boxes: only counts,
// derived across hosts by the diagnosis. An Operator is one of a job's
// own, accounted by the job (package dataflow).
const (
	Sender   Kind = "sender"
	Network  Kind = "network"
	SUT      Kind = "sut"
	Lane     Kind = "lane"
	Consumer Kind = "consumer"
	Operator Kind = "operator"
)

// InputOperator names a job's operator that takes in what the senders
// sent (cp_input, cp_broker; its copies are input.1, ...): its items are
// the buckets (messages) it handed to the job, by which the sweep measures
// the rate a job kept. It is the accounting's word, shared by the job
// (which declares an operator so) and the sweep that judges it.
const InputOperator = "input"

// Class says what a state means for the stage: doing its own work (busy),
// held up by the stage after it (blocked: FlowDiagnoser's wait_time), or
// without work (idle).
type Class uint8

// The state classes.
const (
	Idle Class = iota
	Busy
	Blocked
)

// State is one of a kind's states.
type State struct {
	Name  string
	Class Class
}

// The states of each kind, by index (the argument of Account.Enter).
const (
	Pacing  = 0 // sender: waiting for its next slot
	Sending = 1 // sender: in the send call
	Pushing = 2 // sender: the socket is full (EAGAIN, retrying)

	Waiting  = 0 // lane: no message in its socket
	Decoding = 1 // lane: receiving and decoding a message that was there
	Starved  = 2 // lane: no free bucket (the consumer has them all)

	Idling  = 0 // consumer: every ring empty
	Working = 1 // consumer: consuming a bucket (work and sink included)

	// FlowDiagnoser's two bits: an operator is busy, waiting for its
	// input, or blocked on its output (waiting on its dependents).
	OpWaiting = 0 // operator: no input to work on
	OpBusy    = 1 // operator: working on its input
	OpBlocked = 2 // operator: its output cannot take more
)

// MaxStates bounds a kind's states.
const MaxStates = 3

var kindStates = map[Kind][]State{
	Sender:   {{"pacing", Idle}, {"sending", Busy}, {"blocked", Blocked}},
	Lane:     {{"waiting", Idle}, {"decoding", Busy}, {"blocked", Blocked}},
	Consumer: {{"idle", Idle}, {"working", Busy}},
	Operator: {{"waiting", Idle}, {"busy", Busy}, {"blocked", Blocked}},
	Network:  nil,
	SUT:      nil,
}

// States returns the states of a kind (nil for a black box).
func States(k Kind) []State { return kindStates[k] }

// Known reports whether k is a stage kind.
func Known(k Kind) bool {
	_, ok := kindStates[k]
	return ok
}

// markShift puts the current state in the top bits of the mark word and
// the TSC it was entered at in the rest (60 bits of ticks: years).
const (
	markShift = 60
	markMask  = 1<<markShift - 1
)

// Account is one stage's accounting. Its single writer (the stage's own
// goroutine) calls Enter and Add; anyone may Read. A nil *Account accounts
// nothing, so a loop without accounting pays one branch.
type Account struct {
	name  string
	kind  Kind
	queue func() int64 // nil: the stage has no queue counter
	log   ActivityLog  // nil: state changes are not logged
	// live keeps the latest changes once a live view asked for them
	// (Set.Live); nil until then. The writer loads it at each change: a
	// plain load on amd64, so an unwatched stage pays one more branch.
	live atomic.Pointer[live]
	c    cells
	p    periods // service-rate periods (periods.go), off unless enabled
	// thread names the thread the stage shares with others (Set.SetThread;
	// nil: its own), read by the sampler while the stage runs.
	thread atomic.Pointer[string]
}

// cells are the writer's words, on their own cache lines so that the
// sampler's reads do not slow the neighbouring stage.
type cells struct {
	_      [64]byte
	mark   uint64 // state<<markShift | TSC the state was entered
	ticks  [MaxStates]uint64
	items  uint64
	tuples uint64
	aux    uint64 // the writer's extra word (a sender's current due time)
	_      [64]byte
}

// Name is the stage's name (thread0, lane1, consumer).
func (a *Account) Name() string { return a.name }

// Thread is the thread the stage shares with other stages ("": one of
// its own, or not said).
func (a *Account) Thread() string {
	if t := a.thread.Load(); t != nil {
		return *t
	}
	return ""
}

// Kind is the stage's kind.
func (a *Account) Kind() Kind { return a.kind }

// Enter moves the stage to state at TSC now, adding the time since the
// last change to the state it leaves.
func (a *Account) Enter(state int, now uint64) {
	if a == nil {
		return
	}
	m := a.c.mark
	if cur := int(m >> markShift); cur != state || m == 0 {
		if since := m & markMask; now > since && m != 0 {
			store(&a.c.ticks[cur], a.c.ticks[cur]+now-since)
		}
		store(&a.c.mark, uint64(state)<<markShift|now&markMask)
		if l := a.live.Load(); a.log != nil || l != nil {
			a.logChange(l, now, ActivityID(state, a.c.items))
		}
	}
}

// logChange hands a state change to the activity log and to l, the live
// ring (loaded once by the caller; nil: none).
func (a *Account) logChange(l *live, t, id uint64) {
	if a.log != nil {
		a.log.LogTSAt(t, id)
	}
	if l != nil {
		l.LogTSAt(t, id)
	}
}

// Mark closes the current state's interval at now and begins the next one
// of the same state there, so that a later Recolour covers only from now.
// A lane marks the start of every receive call after one that timed out:
// otherwise the call that finds a message waiting would recolour every
// earlier timed-out wait as decoding (one 99.6 ms period once recorded
// 1035 ms of decoding).
func (a *Account) Mark(now uint64) {
	if a == nil {
		return
	}
	m := a.c.mark
	if m == 0 {
		return
	}
	cur := int(m >> markShift)
	if since := m & markMask; now > since {
		store(&a.c.ticks[cur], a.c.ticks[cur]+now-since)
	}
	store(&a.c.mark, uint64(cur)<<markShift|now&markMask)
}

// Start puts the stage in state at now without accounting any time before.
func (a *Account) Start(state int, now uint64) {
	if a == nil {
		return
	}
	store(&a.c.mark, uint64(state)<<markShift|now&markMask)
	if l := a.live.Load(); a.log != nil || l != nil {
		a.logChange(l, now, ActivityID(state, a.c.items))
	}
}

// End closes the stage's last activity at now: the activity log gets one
// more record of the state the stage is in. A stage that stays in one
// state to its end (a sender thread busy sending throughout a trial)
// otherwise logs nothing after entering it, and its one long activity
// would have no end and be left out of the activity graph. The writer
// calls it once, when it stops; the time accounting is unchanged.
func (a *Account) End(now uint64) {
	if a == nil || a.c.mark == 0 {
		return
	}
	if l := a.live.Load(); a.log != nil || l != nil {
		a.logChange(l, now, ActivityID(int(a.c.mark>>markShift), a.c.items))
	}
}

// Add counts items (buckets) processed holding tuples tuples.
func (a *Account) Add(items, tuples uint64) {
	if a == nil {
		return
	}
	store(&a.c.items, a.c.items+items)
	store(&a.c.tuples, a.c.tuples+tuples)
}

// Recolour changes the current state without closing its interval: the
// time since the last change counts to state instead. A lane enters
// waiting before its receive call and recolours the call as decoding when
// a message was already there (it learns only afterwards). A sample taken
// during that call may have counted it as waiting; the totals never go
// back, so at most one such call is misplaced per sample.
func (a *Account) Recolour(state int) {
	if a == nil {
		return
	}
	store(&a.c.mark, uint64(state)<<markShift|a.c.mark&markMask)
	if l := a.live.Load(); a.log != nil || l != nil { // the interval it recolours began at the mark
		a.logChange(l, a.c.mark&markMask, ActivityID(state, a.c.items))
	}
}

// ActivityLog takes a stage's state changes, as the profiler's channels
// do (profiler.Channel, "activity.<stage>"): one record per change, at the
// change's TSC, with the id ActivityID(the state entered, the items the
// stage had processed by then). The program activity graph is built from
// them (results/activity). A lane's receive call that found its message
// waiting is logged twice at one instant: waiting, then decoding.
type ActivityLog interface{ LogTSAt(tsc, id uint64) }

// LogActivities sends the stage's state changes to l from now on. Call it
// before the writer starts.
func (a *Account) LogActivities(l ActivityLog) {
	if a != nil {
		a.log = l
	}
}

// LogActivitiesOn opens the stage's channel "activity.<stage>" with open
// and logs its state changes there (nothing for a nil account: no
// accounting). Call it before the writer starts.
func (a *Account) LogActivitiesOn(open func(channel string) (ActivityLog, error)) error {
	if a == nil {
		return nil
	}
	l, err := open("activity." + a.name)
	if err != nil {
		return err
	}
	a.log = l
	return nil
}

// activityItemBits: an activity record's id holds the state entered in
// its top 8 bits and the items processed so far (modulo 2^56) below.
const activityItemBits = 56

// ActivityID encodes a state change for an ActivityLog.
func ActivityID(state int, items uint64) uint64 {
	return uint64(state)<<activityItemBits | items&(1<<activityItemBits-1)
}

// ActivityOf decodes an ActivityID.
func ActivityOf(id uint64) (state int, items uint64) {
	return int(id >> activityItemBits), id & (1<<activityItemBits - 1)
}

// SetAux publishes the writer's extra word (see cells.aux).
func (a *Account) SetAux(v uint64) {
	if a == nil {
		return
	}
	store(&a.c.aux, v)
}

// Aux reads the writer's extra word (any goroutine).
func (a *Account) Aux() uint64 { return atomic.LoadUint64(&a.c.aux) }

// Current is the stage's state now (any goroutine).
func (a *Account) Current() int { return int(atomic.LoadUint64(&a.c.mark) >> markShift) }

// Reading is a stage's cumulative counters at one instant.
type Reading struct {
	Ticks  [MaxStates]uint64 // per state, the time in it so far
	Items  uint64
	Tuples uint64
	State  int // the state at the instant
	Queue  int64
}

// Read returns the counters at TSC now, the current state's time included
// up to now. The writer does not wait: a read that saw the state change
// under it reads again, so every state's total only grows.
func (a *Account) Read(now uint64) Reading {
	var r Reading
	for try := 0; try < 4; try++ {
		m := atomic.LoadUint64(&a.c.mark)
		for i := range r.Ticks {
			r.Ticks[i] = atomic.LoadUint64(&a.c.ticks[i])
		}
		r.Items = atomic.LoadUint64(&a.c.items)
		r.Tuples = atomic.LoadUint64(&a.c.tuples)
		if atomic.LoadUint64(&a.c.mark) != m {
			continue
		}
		r.State = int(m >> markShift)
		if since := m & markMask; m != 0 && now > since {
			r.Ticks[r.State] += now - since
		}
		break
	}
	if a.queue != nil {
		r.Queue = a.queue()
	}
	return r
}
