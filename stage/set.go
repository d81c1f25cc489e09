package stage

import (
	"fmt"
	"sync"
	"time"

	"github.com/cloudprofiler-go/cp/tsc"
)

// Period bounds: a snapshot every 10 ms at the finest, 10 s at the
// coarsest (FlowDiagnoser's 50 ms to 10 s, with room below).
const (
	MinPeriod     = 10 * time.Millisecond
	MaxPeriod     = 10 * time.Second
	DefaultPeriod = 100 * time.Millisecond
)

// The bounds of a stage's service-rate period T (periods.go): RaftLib
// starts T at the timer's resolution (~300 ns there); here a period closes
// at a bucket boundary, so 1 µs is below any bucket and 10 ms keeps tens
// of periods in every 100 ms sample.
const (
	MinServicePeriod = time.Microsecond
	MaxServicePeriod = 10 * time.Millisecond
)

// CheckPeriod refuses a sampling period outside the bounds.
func CheckPeriod(d time.Duration) error {
	if d < MinPeriod || d > MaxPeriod {
		return fmt.Errorf("sample period %v outside [%v, %v]", d, MinPeriod, MaxPeriod)
	}
	return nil
}

// maxSamples bounds a series: past it every other sample is dropped and
// the period doubles, so memory stays bounded however long the run.
const maxSamples = 1 << 15

// Set is the accounting of one process's stages and its series. Stages
// may join while it runs (a stream seen for the first time); each
// sampling reads every stage at the same instant.
type Set struct {
	clock  *tsc.Clock
	period time.Duration

	mu       sync.Mutex
	accounts []*Account
	series   Series
	last     []Reading // latest reading per account
	stride   int       // samples recorded every stride ticks (after thinning)
	tick     int
	hooks    []func(Snapshot)
	labels   map[string]string // the live diagnosis (cp_stage_label)
	stopped  bool
	periods  bool // accounts close service-rate periods (EnableServicePeriods)
	liveSize int  // changes each account keeps for Live (EnableLive; 0: none)
	liveOn   bool // a live view asked: every account keeps its changes
	stop     chan struct{}
	done     chan struct{}
}

// NewSet returns an empty set sampled every period.
func NewSet(clock *tsc.Clock, period time.Duration) *Set {
	return &Set{clock: clock, period: period, stride: 1,
		series: Series{PeriodNs: period.Nanoseconds(), Hz: clock.Hz}}
}

// Period is the set's sampling period.
func (s *Set) Period() time.Duration { return s.period }

// EnableServicePeriods makes every account added from now on close its
// service-rate periods (periods.go). Call it before the first Add.
func (s *Set) EnableServicePeriods() {
	if s != nil {
		s.mu.Lock()
		s.periods = true
		s.mu.Unlock()
	}
}

// Add creates a stage's account. queue, if not nil, returns the stage's
// queue occupancy (read at each sample, from the sampling goroutine).
func (s *Set) Add(name string, kind Kind, queue func() int64) *Account {
	if s == nil {
		return nil
	}
	a := &Account{name: name, kind: kind, queue: queue}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.periods && len(kindStates[kind]) > 0 { // a black box has no thread to close periods
		a.EnablePeriods(s.clock.Ticks(MinServicePeriod), s.clock.Ticks(MaxServicePeriod))
	}
	if s.liveOn && len(kindStates[kind]) > 0 {
		a.live.Store(newLive(s.liveSize))
	}
	s.accounts = append(s.accounts, a)
	s.last = append(s.last, Reading{})
	names := make([]string, 0, len(kindStates[kind]))
	for _, st := range kindStates[kind] {
		names = append(names, st.Name)
	}
	ss := StageSeries{Name: name, Kind: kind, States: names, From: len(s.series.TSC),
		StateNs: make([][]int64, len(names))}
	if queue == nil {
		ss.NoQueue = true
	}
	s.series.Stages = append(s.series.Stages, ss)
	return a
}

// Snapshot is one sample of every stage.
type Snapshot struct {
	TSC      uint64
	Accounts []*Account
	Readings []Reading
}

// SetCapacity records the capacity of a's queue (for the diagnosis's
// evidence: a full ring).
func (s *Set) SetCapacity(a *Account, c int64) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.accounts {
		if x == a {
			s.series.Stages[i].QueueCap = c
		}
	}
}

// SoleShare: a stage that took at least this share of the busy time of a
// thread it shares is named alone for the thread's limit, the thread said
// beside it (the diagnosis's and the service rates' rule alike): the
// thread is full, but that stage is what to make faster.
const SoleShare = 0.8

// MaxThreadName bounds a thread's name (SetThread).
const MaxThreadName = 64

// SetThread says that a runs on the thread named thread, with the other
// stages said to: their busy times add up on it, so that each is at most
// a share of the thread's capacity (a job's operators chained on one
// thread). The name is 1 to MaxThreadName printable bytes.
func (s *Set) SetThread(a *Account, thread string) error {
	if s == nil || a == nil {
		return nil
	}
	if !validThread(thread) {
		return fmt.Errorf("stage %q: thread name %q: 1 to %d printable bytes", a.name, thread, MaxThreadName)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.accounts {
		if x == a {
			s.series.Stages[i].Thread = thread
			a.thread.Store(&thread)
			return nil
		}
	}
	return fmt.Errorf("stage %q: not of this set", a.name)
}

func validThread(name string) bool {
	if name == "" || len(name) > MaxThreadName {
		return false
	}
	for _, c := range name {
		if c < ' ' || c > '~' {
			return false
		}
	}
	return true
}

// OnSample registers fn, called on the sampling goroutine after every
// sample (recorded or not) with the sample's readings.
func (s *Set) OnSample(fn func(Snapshot)) {
	s.mu.Lock()
	s.hooks = append(s.hooks, fn)
	s.mu.Unlock()
}

// Ticker is a sampler whose ticks a set can follow: the profiler's
// counter sampler, so that stage samples and counter periods line up.
type Ticker interface {
	Period() time.Duration
	OnSample(func())
}

// Start begins sampling (a first sample now): on every tick of t when it
// has the set's period (nil: none), else on a goroutine of its own at the
// wall clock's period boundaries; until Stop.
func (s *Set) Start(t Ticker) {
	if s == nil {
		return
	}
	s.Sample()
	if t != nil && t.Period() == s.period {
		t.OnSample(s.Sample)
		return
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		// Tick on the wall clock's period boundaries: every process (on
		// every host whose clock is synchronised) samples at nearly the
		// same instants, so a snapshot across processes is nearly a cut.
		now := time.Now()
		select {
		case <-time.After(now.Truncate(s.period).Add(s.period).Sub(now)):
			s.Sample()
		case <-s.stop:
			return
		}
		t := time.NewTicker(s.period)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				s.Sample()
			case <-s.stop:
				return
			}
		}
	}()
}

// Stop ends Start's sampling and takes a last sample, so the series ends
// with the run's totals; a tick after it is ignored.
func (s *Set) Stop() {
	if s == nil {
		return
	}
	if s.stop != nil {
		close(s.stop)
		<-s.done
		s.stop = nil
	}
	s.sample(true)
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
}

// Sample reads every stage now (one tick of the sampler).
func (s *Set) Sample() { s.sample(false) }

func (s *Set) sample(final bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	snap, hooks := s.record(final)
	s.mu.Unlock()
	for _, fn := range hooks {
		fn(snap)
	}
}

// record takes a sample (under the lock) and returns it for the hooks.
func (s *Set) record(final bool) (Snapshot, []func(Snapshot)) {
	s.tick++
	now := tsc.ReadFast()
	for i, a := range s.accounts {
		r := a.Read(now)
		prev := s.last[i]
		for j := range r.Ticks { // a read that raced a change never goes back
			r.Ticks[j] = max(r.Ticks[j], prev.Ticks[j])
		}
		r.Items = max(r.Items, prev.Items)
		r.Tuples = max(r.Tuples, prev.Tuples)
		s.last[i] = r
	}
	snap := Snapshot{TSC: now, Accounts: append([]*Account(nil), s.accounts...), Readings: append([]Reading(nil), s.last...)}
	if !final && s.tick%s.stride != 0 {
		return snap, s.hooks
	}
	if len(s.series.TSC) == maxSamples {
		s.series.thin()
		s.stride *= 2
	}
	s.series.TSC = append(s.series.TSC, now)
	s.series.UnixNs = append(s.series.UnixNs, s.clock.UnixNano(now))
	for i, a := range s.accounts {
		r := s.last[i]
		ss := &s.series.Stages[i]
		for j := range ss.States {
			ss.StateNs[j] = append(ss.StateNs[j], int64(s.clock.TicksToNs(r.Ticks[j])))
		}
		ss.Items = append(ss.Items, r.Items)
		if a.queue != nil {
			ss.Queue = append(ss.Queue, r.Queue)
		}
	}
	return snap, s.hooks
}

// Readings returns the latest sample's readings, by stage (for metrics).
func (s *Set) Readings() ([]*Account, []Reading) {
	if s == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Account(nil), s.accounts...), append([]Reading(nil), s.last...)
}

// Series returns a copy of the recorded series.
func (s *Set) Series() *Series {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.series.clone()
	c.PeriodNs = s.period.Nanoseconds() * int64(s.stride)
	return c
}
