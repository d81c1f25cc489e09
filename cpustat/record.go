package cpustat

import (
	"runtime"
	"time"
)

// MaxSamples bounds a run's series: past it every other sample is dropped
// and the period doubles, as often as needed.
const MaxSamples = 4096

// Record is a run's host accounting: the samples and what happened
// between the first and the last.
type Record struct {
	PeriodNs int64    `json:"period_ns"`
	Samples  []Sample `json:"samples"`
	Summary  Summary  `json:"summary"`
	// Error says why there is no accounting (no /proc), or what stopped it.
	Error string `json:"error,omitempty"`
}

// Recorder samples a run in the background.
type Recorder struct {
	s      *Sampler
	period time.Duration
	rec    Record
	every  int // samples are every period × every apart (doubles when the series is full)
	stop   chan struct{}
	done   chan struct{}
}

// Start samples now and then every period (at least 10 ms) until Stop.
func (s *Sampler) Start(period time.Duration) *Recorder {
	period = max(period, 10*time.Millisecond)
	r := &Recorder{s: s, period: period, every: 1, stop: make(chan struct{}), done: make(chan struct{})}
	r.take()
	go r.loop()
	return r
}

func (r *Recorder) loop() {
	defer close(r.done)
	tick := time.NewTicker(r.period)
	defer tick.Stop()
	n := 0
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		if n++; n%r.every != 0 || r.rec.Error != "" {
			continue
		}
		r.take()
		if len(r.rec.Samples) >= MaxSamples {
			kept := r.rec.Samples[:0]
			for i := 0; i < len(r.rec.Samples); i += 2 {
				kept = append(kept, r.rec.Samples[i])
			}
			r.rec.Samples = kept
			r.every *= 2
		}
	}
}

func (r *Recorder) take() {
	smp, err := r.s.Read()
	if err != nil {
		r.rec.Error = err.Error()
		return
	}
	r.rec.Samples = append(r.rec.Samples, smp)
}

// Stop takes a last sample and returns the record (nil for a nil
// recorder).
func (r *Recorder) Stop() *Record {
	if r == nil {
		return nil
	}
	close(r.stop)
	<-r.done
	if r.rec.Error == "" {
		r.take()
	}
	rec := r.rec
	rec.PeriodNs = r.period.Nanoseconds() * int64(r.every)
	rec.Summary = SummarizeSeries(rec.Samples, runtime.NumCPU())
	return &rec
}

// SummarizeSeries is Summarize over a run's series: the host and the
// process from the first sample to the last, and each thread role from the
// first sample that has it (a thread started later counts from zero) to
// the last that has it (a thread that ended before the last sample, such
// as an emission thread or libzmq's after its context closed, keeps what
// it used).
func SummarizeSeries(samples []Sample, cpus int) Summary {
	n := len(samples)
	if n < 2 {
		return Summary{CPUs: cpus}
	}
	first, last := samples[0], samples[n-1]
	a := first
	a.Threads = map[string]Times{}
	b := last
	b.Threads = map[string]Times{}
	for i := n - 1; i >= 0; i-- {
		for name, t := range samples[i].Threads {
			if _, ok := b.Threads[name]; !ok {
				b.Threads[name] = t
			}
		}
	}
	for name, t := range first.Threads {
		a.Threads[name] = t
	}
	sum := Summarize(a, b, cpus)
	if threads, procs := peakSUT(samples, PeakSpan); threads != nil {
		sum.SUTThreads, sum.SUTProcesses = threads, procs
	}
	return sum
}

// PeakSpan is the span over which the system under test's threads are
// summarized: their busiest stretch of at least this long. A trial's
// series runs from before the senders start to after the job drained,
// and a thread saturated over the measured window reads half busy over
// all of it.
const PeakSpan = time.Second

// peakSUT is the system under test's threads and processes over the
// stretch of at least span between two samples in which its busiest
// thread was busiest (nil: no samples of them).
func peakSUT(samples []Sample, span time.Duration) ([]SUTThreadShare, []SUTProcessShare) {
	var threads []SUTThreadShare
	var procs []SUTProcessShare
	best := -1.0
	j := 0
	for i := range samples {
		if samples[i].SUTThreads == nil {
			continue
		}
		for j < len(samples) && samples[j].UnixNs-samples[i].UnixNs < span.Nanoseconds() {
			j++
		}
		if j == len(samples) {
			break
		}
		wall := float64(samples[j].UnixNs-samples[i].UnixNs) / 1e9
		t, p := sutThreadShares(samples[i].SUTThreads, samples[j].SUTThreads, wall, MaxSUTThreadShares)
		if len(t) > 0 && t[0].Cores > best {
			best, threads, procs = t[0].Cores, t, p
		}
	}
	return threads, procs
}
