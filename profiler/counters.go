package profiler

import (
	"sync"
	"sync/atomic"
	"time"
)

// spc is the single-writer periodic counter: one plain increment per call
// (see spc_norace.go); the sampler reads it from another goroutine.
type spc struct{ c spcCell }

func (s *spc) log(uint64)           { s.c.inc() }
func (s *spc) logAt(uint64, uint64) { s.c.inc() }
func (s *spc) close() error         { return nil }
func (s *spc) total() uint64        { return s.c.load() }

// mpc is the multi-writer periodic counter: an atomic add per call.
type mpc struct{ n atomic.Uint64 }

func (m *mpc) log(uint64)           { m.n.Add(1) }
func (m *mpc) logAt(uint64, uint64) { m.n.Add(1) }
func (m *mpc) close() error         { return nil }
func (m *mpc) total() uint64        { return m.n.Load() }

type counter interface {
	handler
	total() uint64
}

// sampler reads every counter channel at the same instants, so all
// channels' periods line up; the last (partial) period is taken at stop,
// so each channel's periods add up to its total.
type sampler struct {
	period time.Duration
	mu     sync.Mutex
	chans  map[string]*series
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once
}

type series struct {
	c       counter
	prev    uint64
	periods []uint64
}

func newSampler(period time.Duration) *sampler {
	s := &sampler{period: period, chans: map[string]*series{}, quit: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *sampler) add(name string, c counter) counter {
	s.mu.Lock()
	s.chans[name] = &series{c: c}
	s.mu.Unlock()
	return c
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
	defer s.mu.Unlock()
	for _, ser := range s.chans {
		v := ser.c.total()
		ser.periods = append(ser.periods, v-ser.prev)
		ser.prev = v
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
