package stage

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// Series is a process's stages sampled at the same instants: sample i
// was taken at TSC[i] (UnixNs[i] on this host's clock). Every counter is
// cumulative from the stage's start, so any two samples give the
// period's deltas, and a thinned series stays exact.
type Series struct {
	PeriodNs int64         `json:"period_ns"`
	Hz       float64       `json:"tsc_hz"`
	TSC      []uint64      `json:"tsc"`
	UnixNs   []int64       `json:"unix_ns"`
	Stages   []StageSeries `json:"stages"`
}

// StageSeries is one stage's counters from sample From on (a stage that
// joined later has no samples before). StateNs[j][k] is the time spent in
// States[j] up to sample From+k, Items[k] the items processed, Queue[k]
// the queue then (absent when the stage has no queue counter).
type StageSeries struct {
	Name    string    `json:"name"`
	Kind    Kind      `json:"kind"`
	States  []string  `json:"states"`
	From    int       `json:"from"`
	StateNs [][]int64 `json:"state_ns"`
	Items   []uint64  `json:"items"`
	Queue   []int64   `json:"queue,omitempty"`
	NoQueue bool      `json:"no_queue,omitempty"`
	// QueueCap is the queue's capacity (the consumer's rings), 0: unbounded
	// or unknown.
	QueueCap int64 `json:"queue_capacity,omitempty"`
	// Thread names the thread the stage shares with the other stages of
	// the same Thread ("": its own, or not said): their busy times add up
	// on it (Set.SetThread).
	Thread string `json:"thread,omitempty"`
}

// Len is the stage's number of samples.
func (s *StageSeries) Len() int { return len(s.Items) }

func (s *Series) clone() *Series {
	c := *s
	c.TSC = append([]uint64(nil), s.TSC...)
	c.UnixNs = append([]int64(nil), s.UnixNs...)
	c.Stages = make([]StageSeries, len(s.Stages))
	for i, st := range s.Stages {
		cs := st
		cs.StateNs = make([][]int64, len(st.StateNs))
		for j := range st.StateNs {
			cs.StateNs[j] = append([]int64(nil), st.StateNs[j]...)
		}
		cs.Items = append([]uint64(nil), st.Items...)
		cs.Queue = append([]int64(nil), st.Queue...)
		if st.NoQueue {
			cs.Queue = nil
		}
		c.Stages[i] = cs
	}
	return &c
}

// thin keeps the even samples (the period doubles).
func (s *Series) thin() {
	keep := func(n int) int { return (n + 1) / 2 }
	s.TSC = thinned(s.TSC, 0)
	s.UnixNs = thinned(s.UnixNs, 0)
	for i := range s.Stages {
		st := &s.Stages[i]
		// A stage's sample k is global sample From+k: keep the even globals.
		off := st.From % 2
		for j := range st.StateNs {
			st.StateNs[j] = thinned(st.StateNs[j], off)
		}
		st.Items = thinned(st.Items, off)
		if !st.NoQueue {
			st.Queue = thinned(st.Queue, off)
		}
		st.From = keep(st.From)
	}
}

// thinned keeps every other element from off, in place.
func thinned[T any](v []T, off int) []T {
	n := 0
	for i := off; i < len(v); i += 2 {
		v[n] = v[i]
		n++
	}
	return v[:n]
}

// Validate checks a series read from a file: lengths agree, samples are
// in order and counters never decrease, so every analysis can index it
// without checks.
func (s *Series) Validate() error {
	if s.PeriodNs <= 0 || s.Hz <= 0 {
		return errors.New("stage series: period and TSC frequency must be positive")
	}
	n := len(s.TSC)
	if len(s.UnixNs) != n {
		return fmt.Errorf("stage series: %d TSC stamps but %d times", n, len(s.UnixNs))
	}
	for i := 1; i < n; i++ {
		if s.TSC[i] < s.TSC[i-1] || s.UnixNs[i] < s.UnixNs[i-1] {
			return fmt.Errorf("stage series: sample %d goes back in time", i)
		}
	}
	seen := map[string]bool{}
	for _, st := range s.Stages {
		if err := st.validate(n); err != nil {
			return fmt.Errorf("stage series: stage %q: %w", st.Name, err)
		}
		if seen[st.Name] {
			return fmt.Errorf("stage series: stage %q twice", st.Name)
		}
		seen[st.Name] = true
	}
	return nil
}

func (st *StageSeries) validate(n int) error {
	if !Known(st.Kind) {
		return fmt.Errorf("unknown kind %q", st.Kind)
	}
	if len(st.States) != len(kindStates[st.Kind]) || len(st.StateNs) != len(st.States) {
		return fmt.Errorf("%d states for a %s", len(st.States), st.Kind)
	}
	if st.From < 0 || st.From+len(st.Items) != n {
		return fmt.Errorf("samples from %d with %d items do not end at the series' %d", st.From, len(st.Items), n)
	}
	if st.Thread != "" && !validThread(st.Thread) {
		return fmt.Errorf("thread name %q: 1 to %d printable bytes", st.Thread, MaxThreadName)
	}
	if !st.NoQueue && len(st.Queue) != len(st.Items) {
		return fmt.Errorf("%d queue samples for %d", len(st.Queue), len(st.Items))
	}
	for j, v := range st.StateNs {
		if len(v) != len(st.Items) {
			return fmt.Errorf("state %s: %d samples for %d", st.States[j], len(v), len(st.Items))
		}
		for k := 1; k < len(v); k++ {
			if v[k] < v[k-1] {
				return fmt.Errorf("state %s decreases at sample %d", st.States[j], st.From+k)
			}
		}
	}
	for k := 1; k < len(st.Items); k++ {
		if st.Items[k] < st.Items[k-1] {
			return fmt.Errorf("items decrease at sample %d", st.From+k)
		}
	}
	return nil
}

// Total is a stage's accounting over a window: seconds per state, items,
// and the largest queue sampled.
type Total struct {
	Name     string             `json:"name"`
	Kind     Kind               `json:"kind"`
	Seconds  map[string]float64 `json:"seconds"`
	Items    uint64             `json:"items"`
	QueueMax *int64             `json:"queue_max,omitempty"` // absent: no queue counter
}

// Fraction is the share of the window's accounted time spent in states
// of class c (0 when nothing was accounted).
func (t *Total) Fraction(c Class) float64 {
	var in, all float64
	for _, st := range kindStates[t.Kind] {
		v := t.Seconds[st.Name]
		all += v
		if st.Class == c {
			in += v
		}
	}
	if all <= 0 {
		return 0
	}
	return in / all
}

// Totals sums every stage over the samples taken within [fromNs, toNs]
// on the series' clock; when both are 0, from each stage's start to the
// last sample.
func (s *Series) Totals(fromNs, toNs int64) []Total {
	lo, hi := 0, len(s.TSC)-1
	whole := fromNs == 0 && toNs == 0
	if !whole {
		lo = sort.Search(len(s.UnixNs), func(i int) bool { return s.UnixNs[i] >= fromNs })
		for hi >= 0 && s.UnixNs[hi] > toNs {
			hi--
		}
	}
	out := make([]Total, 0, len(s.Stages))
	for _, st := range s.Stages {
		t := Total{Name: st.Name, Kind: st.Kind, Seconds: map[string]float64{}}
		a, b := max(lo, st.From)-st.From, hi-st.From
		switch {
		case whole && b >= 0:
			for j, name := range st.States {
				t.Seconds[name] = float64(st.StateNs[j][b]) / 1e9
			}
			t.Items = st.Items[b]
		case b > a && a >= 0:
			for j, name := range st.States {
				t.Seconds[name] = float64(st.StateNs[j][b]-st.StateNs[j][a]) / 1e9
			}
			t.Items = st.Items[b] - st.Items[a]
		}
		if !st.NoQueue {
			var m int64
			for k := max(a, 0); k <= b && k < len(st.Queue); k++ {
				m = max(m, st.Queue[k])
			}
			t.QueueMax = &m
		}
		out = append(out, t)
	}
	return out
}

// Resample keeps every k-th sample (and the last) so that samples are
// periodNs apart; periodNs must be a multiple of the recorded period.
func (s *Series) Resample(periodNs int64) error {
	if periodNs == s.PeriodNs {
		return nil
	}
	if periodNs < s.PeriodNs || periodNs%s.PeriodNs != 0 {
		return fmt.Errorf("period %v is not a multiple of the recorded %v", time.Duration(periodNs), time.Duration(s.PeriodNs))
	}
	k := int(periodNs / s.PeriodNs)
	n := len(s.TSC)
	keep := func(i int) bool { return i%k == 0 || i == n-1 }
	pick := func(from int, idx func(int) bool) []int {
		var out []int
		for i := from; i < n; i++ {
			if idx(i) {
				out = append(out, i-from)
			}
		}
		return out
	}
	glob := pick(0, keep)
	s.TSC = gather(s.TSC, glob)
	s.UnixNs = gather(s.UnixNs, glob)
	for i := range s.Stages {
		st := &s.Stages[i]
		loc := pick(st.From, keep)
		for j := range st.StateNs {
			st.StateNs[j] = gather(st.StateNs[j], loc)
		}
		st.Items = gather(st.Items, loc)
		if !st.NoQueue {
			st.Queue = gather(st.Queue, loc)
		}
		newFrom := 0
		for _, g := range glob {
			if g < st.From {
				newFrom++
			}
		}
		st.From = newFrom
	}
	s.PeriodNs = periodNs
	return nil
}

func gather[T any](v []T, idx []int) []T {
	out := make([]T, len(idx))
	for i, j := range idx {
		out[i] = v[j]
	}
	return out
}

// Cut returns the samples of a window: those taken within [fromNs, toNs]
// on the series' clock and the last one before it, so that the window's
// first period has its deltas (a long-lived process serving one trial's
// part of its series). Counters stay cumulative from each stage's start.
func (s *Series) Cut(fromNs, toNs int64) *Series {
	lo := sort.Search(len(s.UnixNs), func(i int) bool { return s.UnixNs[i] >= fromNs })
	lo = max(lo-1, 0)
	hi := sort.Search(len(s.UnixNs), func(i int) bool { return s.UnixNs[i] > toNs }) // past the last kept
	hi = max(hi, lo)
	c := &Series{PeriodNs: s.PeriodNs, Hz: s.Hz,
		TSC: append([]uint64{}, s.TSC[lo:hi]...), UnixNs: append([]int64{}, s.UnixNs[lo:hi]...)}
	for _, st := range s.Stages {
		a, b := max(lo, st.From)-st.From, max(hi, st.From)-st.From
		cs := StageSeries{Name: st.Name, Kind: st.Kind, States: append([]string(nil), st.States...),
			From: max(st.From, lo) - lo, StateNs: make([][]int64, len(st.StateNs)),
			Items: append([]uint64{}, st.Items[a:b]...), NoQueue: st.NoQueue, QueueCap: st.QueueCap, Thread: st.Thread}
		if b <= a { // joined after the window: no samples in it
			cs.From = hi - lo
		}
		for j := range st.StateNs {
			cs.StateNs[j] = append([]int64{}, st.StateNs[j][a:b]...)
		}
		if !st.NoQueue {
			cs.Queue = append([]int64{}, st.Queue[a:b]...)
		}
		c.Stages = append(c.Stages, cs)
	}
	return c
}
