package dataflow

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/tsc"
)

// Config is a job's accounting.
type Config struct {
	Clock *tsc.Clock // the host's TSC (tsc.NewClock)
	// Period is how often every operator's state is sampled into the
	// series the analyses read (0: 100 ms).
	Period time.Duration
	// Profile, when set, gives each operator a profiler channel named
	// op.NAME with its handler from Handlers (Null when unlisted).
	Profile  *profiler.Profiler
	Handlers *profiler.Handlers
	// Stalls are injected stalls, for experiments only (how well the
	// analyses find a stalled operator): none in a job measured for real.
	Stalls []Stall
}

// Stall stops the operator named Operator from At after the job's New
// for For: at its first Busy from then on, it holds (busy, processing
// nothing) until At+For, as a pause of its own would.
type Stall struct {
	Operator string
	At, For  time.Duration
}

// InjectedStall is an injected stall placed in time: the operator's and
// its scheduled span, Unix ns (it begins at the operator's first Busy in
// the span).
type InjectedStall struct {
	Operator             string
	FromUnixNs, ToUnixNs int64
}

// DefaultPeriod is Config.Period when none is given.
const DefaultPeriod = 100 * time.Millisecond

// LiveChanges is how many state changes per operator a live view can
// read (stage.Set.Live: 16 bytes each, from a view's first read on).
const LiveChanges = 1 << 16

// MaxOperators bounds a job's operators.
const MaxOperators = 256

// Job is a dataflow of operators.
type Job struct {
	cfg   Config
	set   *stage.Set
	mu    sync.Mutex
	names map[string]*Operator
	edges []Edge
	// reads and writes are the topics declared (Reads, Writes), in order.
	reads, writes []string
	// start is New's time, the injected stalls' origin (TSC ticks and
	// Unix ns); stop ends a stall being held.
	start     uint64
	startUnix int64
	stop      atomic.Bool
	tracing   bool // a Trace is running (mu)
}

// Edge is a dataflow edge: From's output is To's input.
type Edge struct{ From, To string }

// New makes a job's accounting.
func New(cfg Config) (*Job, error) {
	if cfg.Clock == nil {
		return nil, errors.New("dataflow: no clock (tsc.NewClock)")
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.Period < time.Millisecond {
		return nil, fmt.Errorf("dataflow: a sampling period of %v is below 1ms", cfg.Period)
	}
	if err := checkStalls(cfg.Stalls); err != nil {
		return nil, err
	}
	start := cfg.Clock.Now()
	set := stage.NewSet(cfg.Clock, cfg.Period)
	set.EnableLive(LiveChanges) // kept only once a live view asks (cpsweep watch)
	return &Job{cfg: cfg, set: set, names: map[string]*Operator{},
		start: start, startUnix: cfg.Clock.UnixNano(start)}, nil
}

func checkStalls(stalls []Stall) error {
	if len(stalls) > inject.MaxStalls {
		return fmt.Errorf("dataflow: %d stalls, at most %d", len(stalls), inject.MaxStalls)
	}
	for _, s := range stalls {
		if s.Operator == "" || s.At < 0 || s.At > inject.MaxStallStart || s.For <= 0 || s.For > inject.MaxStall {
			return fmt.Errorf("dataflow: stall %q@%v+%v: an operator, a start of 0 to %v and a length above 0 and at most %v",
				s.Operator, s.At, s.For, inject.MaxStallStart, inject.MaxStall)
		}
	}
	return nil
}

// Injected are the injected stalls that overlap [fromUnixNs, toUnixNs],
// in the order given.
func (j *Job) Injected(fromUnixNs, toUnixNs int64) []InjectedStall {
	var out []InjectedStall
	for _, s := range j.cfg.Stalls {
		from, to := j.startUnix+s.At.Nanoseconds(), j.startUnix+(s.At+s.For).Nanoseconds()
		if from <= toUnixNs && to >= fromUnixNs {
			out = append(out, InjectedStall{Operator: s.Operator, FromUnixNs: from, ToUnixNs: to})
		}
	}
	return out
}

// Operator declares an operator; queue, when not nil, reads its input
// queue's length (a sampler calls it, never the operator's loop). Each
// operator is one goroutine's: only that goroutine marks its state.
func (j *Job) Operator(name string, queue func() int64) (*Operator, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.declare(name, queue)
}

// declare is Operator with j.mu held.
func (j *Job) declare(name string, queue func() int64) (*Operator, error) {
	switch {
	case name == "" || len(name) > 64:
		return nil, fmt.Errorf("dataflow: operator name %q: 1 to 64 bytes", name)
	case j.names[name] != nil:
		return nil, fmt.Errorf("dataflow: operator %q declared twice", name)
	case len(j.names) >= MaxOperators:
		return nil, fmt.Errorf("dataflow: more than %d operators", MaxOperators)
	}
	var windows [][2]time.Duration
	for _, s := range j.cfg.Stalls {
		if s.Operator == name {
			windows = append(windows, [2]time.Duration{s.At, s.At + s.For})
		}
	}
	o := &Operator{name: name, acct: j.set.Add(name, stage.Operator, queue), stop: &j.stop, state: -1}
	if len(windows) > 0 {
		o.holds = inject.NewHolds(windows, j.start, j.cfg.Clock)
	}
	if j.cfg.Profile != nil {
		ch, err := j.cfg.Profile.OpenNamed("op."+name, j.cfg.Handlers)
		if err != nil {
			return nil, fmt.Errorf("dataflow: operator %q: %w", name, err)
		}
		o.ch = ch
	}
	j.names[name] = o
	return o, nil
}

// Connect declares the edge from → to.
func (j *Job) Connect(from, to *Operator) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if from == nil || to == nil || j.names[from.name] != from || j.names[to.name] != to {
		return errors.New("dataflow: connect operators of this job")
	}
	if from == to {
		return fmt.Errorf("dataflow: operator %q cannot feed itself", from.name)
	}
	for _, e := range j.edges {
		if e.From == from.name && e.To == to.name {
			return nil
		}
	}
	j.edges = append(j.edges, Edge{from.name, to.name})
	return nil
}

// Edges are the declared edges, in the order declared.
func (j *Job) Edges() []Edge {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]Edge(nil), j.edges...)
}

// Stages is the operators' stage accounting, for the analyses and for a
// server to serve.
func (j *Job) Stages() *stage.Set { return j.set }

// Start samples every operator each period (on the profiler's ticker
// when it has the same period); Stop ends it.
func (j *Job) Start() {
	var t stage.Ticker
	if j.cfg.Profile != nil {
		t = j.cfg.Profile
	}
	j.set.Start(t)
}

// Stop stops the sampling (and a stall being held).
func (j *Job) Stop() {
	j.stop.Store(true)
	j.set.Stop()
}

// Operator is one of a job's operators. Its methods are for the
// operator's own goroutine, and allocate nothing; a nil *Operator
// accounts nothing (a job run without its accounting).
type Operator struct {
	name  string
	acct  *stage.Account
	ch    *profiler.Channel // nil: not profiled
	holds inject.Holds      // its injected stalls (Config.Stalls)
	stop  *atomic.Bool
	// trace is a running Trace's channels (nil: none); inTrace is set
	// while the writer logs on them, so that Stop knows when it is out
	// (trace.go). state and items are the writer's own copies of its
	// state and count, for the trace's activity records.
	trace   atomic.Pointer[traceLogs]
	inTrace atomic.Bool
	state   int
	items   uint64
}

// Name is the operator's name.
func (o *Operator) Name() string { return o.name }

// Declare declares an operator named base, or base.1, base.2, ... when an
// engine makes several of it (copies of an input's processors); nil when
// j is nil.
func (j *Job) Declare(base string, queue func() int64) (*Operator, error) {
	if j == nil {
		return nil, nil
	}
	j.mu.Lock()
	defer j.mu.Unlock() // one lock: two copies made at once get two names
	name := base
	for i := 1; j.names[name] != nil; i++ {
		name = fmt.Sprintf("%s.%d", base, i)
	}
	return j.declare(name, queue)
}

// OnThread says that the operators run one after another on the thread
// named thread (an engine's processors of one input: a filter and the
// join after it), so that their busy times add up on it: a thread that is
// full names its operators with their shares, where each alone is only
// part busy (docs/dataflow.md).
func (j *Job) OnThread(thread string, ops ...*Operator) error {
	if j == nil {
		return nil
	}
	for _, o := range ops {
		if o == nil {
			continue
		}
		if j.Op(o.name) != o {
			return fmt.Errorf("dataflow: thread %q: operator %q is not of this job", thread, o.name)
		}
		if err := j.set.SetThread(o.acct, thread); err != nil {
			return fmt.Errorf("dataflow: %w", err)
		}
	}
	return nil
}

// MaxTopics bounds the topics a job reads, and those it writes.
const MaxTopics = 16

// Reads declares a topic the job reads, as driver:subject
// (driver.Endpoint.Topic): when another job writes it, the analyses
// follow a tuple from that job's last operators into this one's first
// (docs/dataflow.md). Nothing on a nil job; a topic declared again, or
// more than MaxTopics, is not kept.
func (j *Job) Reads(topic string) {
	if j != nil {
		j.addTopic(&j.reads, topic)
	}
}

// Writes declares a topic the job writes (Reads).
func (j *Job) Writes(topic string) {
	if j != nil {
		j.addTopic(&j.writes, topic)
	}
}

func (j *Job) addTopic(list *[]string, topic string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(*list) < MaxTopics && !slices.Contains(*list, topic) {
		*list = append(*list, topic)
	}
}

// Topics are the topics declared read and written.
func (j *Job) Topics() (reads, writes []string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.reads), slices.Clone(j.writes)
}

// Op is the operator declared as name (nil: none, or a nil job).
func (j *Job) Op(name string) *Operator {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.names[name]
}

// Busy marks the operator working on its input, from now (and holds
// there while an injected stall is due).
func (o *Operator) Busy() {
	if o != nil {
		now := o.enter(stage.OpBusy)
		if o.holds.Any() {
			o.holds.Hold(now, o.stop)
		}
	}
}

// Waiting marks the operator waiting for input, from now.
func (o *Operator) Waiting() {
	if o != nil {
		o.enter(stage.OpWaiting)
	}
}

// Blocked marks the operator blocked on its output (its dependents take
// no more), from now.
func (o *Operator) Blocked() {
	if o != nil {
		o.enter(stage.OpBlocked)
	}
}

// Processed counts items (batches, messages) and the tuples in them that
// the operator has finished. Call it while busy: it also closes the
// service-rate period due (RaftLib's, when a tracker asked for them:
// servicerate.Track), which counts only while the operator went from
// item to item without waiting.
func (o *Operator) Processed(items, tuples uint64) {
	if o != nil {
		o.acct.Add(items, tuples)
		o.items += items
		if o.acct.PeriodsOn() {
			o.acct.Close(tsc.ReadFast())
		}
	}
}

// Profiled says whether the operator logs points (Log and LogRange do
// something), so that a caller can skip finding each tuple's id when it
// does not.
func (o *Operator) Profiled() bool { return o != nil && (o.ch != nil || o.trace.Load() != nil) }

// Log logs the profiler's point for tuple id at now (nothing when the
// operator is not profiled, or its handler is Null).
func (o *Operator) Log(id uint64) {
	if o == nil {
		return
	}
	if o.ch != nil {
		o.ch.LogTS(id)
	}
	if o.trace.Load() != nil {
		o.tracePoints(tsc.ReadFast(), id, 1)
	}
}

// LogRange logs n consecutive ids from first, one clock read for all.
func (o *Operator) LogRange(first, n uint64) {
	if o == nil || o.ch == nil && o.trace.Load() == nil {
		return
	}
	now := tsc.ReadFast()
	if o.ch != nil {
		o.ch.LogRangeAt(now, first, n)
	}
	if o.trace.Load() != nil {
		o.tracePoints(now, first, n)
	}
}

// enter moves the operator to state now, tracing the change when a
// trace runs; it returns now.
func (o *Operator) enter(state int) uint64 {
	now := tsc.ReadFast()
	o.acct.Enter(state, now)
	if state != o.state && o.trace.Load() != nil {
		o.traceState(now, state)
	}
	o.state = state
	return now
}

// traceState and tracePoints log on the trace's channels. The writer
// says it is inside before it looks at them again, and Stop clears them
// before it looks at that: one of the two sees the other (sequentially
// consistent atomics), so the writer never logs on a channel that Stop
// has handed back.
func (o *Operator) traceState(now uint64, state int) {
	o.inTrace.Store(true)
	if t := o.trace.Load(); t != nil {
		t.activity.LogTSAt(now, stage.ActivityID(state, o.items))
	}
	o.inTrace.Store(false)
}

func (o *Operator) tracePoints(now, first, n uint64) {
	o.inTrace.Store(true)
	if t := o.trace.Load(); t != nil {
		t.points.LogRangeAt(now, first, n)
	}
	o.inTrace.Store(false)
}
