package profiler

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudprofiler-go/cp/tsc"
)

// The single-writer periodic counter (SPC) is a channel state's spcCell:
// one plain increment per call (see spc_norace.go); the sampler reads it
// from another goroutine.

// mpc is the multi-writer periodic counter: an atomic add per call.
type mpc struct{ n atomic.Uint64 }

func (m *mpc) log(uint64)           { m.n.Add(1) }
func (m *mpc) logAt(uint64, uint64) { m.n.Add(1) }
func (m *mpc) close() error         { return nil }

func (m *mpc) logRangeAt(_, _, n uint64) { m.n.Add(n) }
func (m *mpc) total() uint64             { return m.n.Load() }

type counter interface {
	total() uint64
}

// sampler reads every counter channel at the same instants, so all
// channels' periods line up; the last (partial) period is taken at stop,
// so each channel's periods add up to its total.
type sampler struct {
	period time.Duration
	// when sampling started, on the wall clock and the TSC
	started    time.Time
	startedTSC uint64
	mu         sync.Mutex
	chans      map[string]*series
	quit       chan struct{}
	done       chan struct{}
	once       sync.Once
	hooks      []func() // called after every sample (OnSample)
}

// series is one channel's counter across switches: every generation keeps
// being sampled (a writer may still add to an old one briefly), so the
// periods always sum to everything counted.
type series struct {
	gens    []counter
	prev    uint64
	periods []uint64
}

func (s *series) total() uint64 {
	var t uint64
	for _, c := range s.gens {
		t += c.total()
	}
	return t
}

func newSampler(period time.Duration) *sampler {
	s := &sampler{period: period, chans: map[string]*series{}, quit: make(chan struct{}), done: make(chan struct{}),
		started: time.Now().UTC(), startedTSC: tsc.Read()}
	go s.run()
	return s
}

func (s *sampler) add(name string, c counter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ser, ok := s.chans[name]; ok {
		ser.gens = append(ser.gens, c)
		return
	}
	s.chans[name] = &series{gens: []counter{c}}
}

func (s *sampler) run() {
	defer close(s.done)
	t := time.NewTicker(s.period)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.sample()
		case <-s.quit:
			s.sample()
			return
		}
	}
}

func (s *sampler) sample() {
	s.mu.Lock()
	for _, ser := range s.chans {
		v := ser.total()
		ser.periods = append(ser.periods, v-ser.prev)
		ser.prev = v
	}
	hooks := s.hooks
	s.mu.Unlock()
	for _, fn := range hooks {
		fn()
	}
}

func (s *sampler) series(name string) []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ser, ok := s.chans[name]; ok {
		return append([]uint64(nil), ser.periods...)
	}
	return nil
}

func (s *sampler) stop() {
	s.once.Do(func() { close(s.quit); <-s.done })
}

// CounterLog is the file a profiler writes its counters' series to on
// Close (Profiler.CountersPath): every counter channel's count per period,
// all periods sampled at the same instants from Started on.
type CounterLog struct {
	FormatVersion int                 `json:"format_version"`
	Started       time.Time           `json:"started"`
	StartedTSC    uint64              `json:"started_tsc"`
	PeriodNs      int64               `json:"period_ns"`
	Channels      map[string][]uint64 `json:"channels"`
}

func (s *sampler) log() CounterLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := CounterLog{FormatVersion: 1, Started: s.started, StartedTSC: s.startedTSC, PeriodNs: s.period.Nanoseconds(), Channels: map[string][]uint64{}}
	for name, ser := range s.chans {
		out.Channels[name] = append([]uint64(nil), ser.periods...)
	}
	return out
}
