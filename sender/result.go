package sender

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/sender/tally"

	"github.com/cloudprofiler-go/cp/internal/histo"
	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/servicerate"
	"github.com/cloudprofiler-go/cp/stage"
)

// result sums every thread's counts into the run's result, from the
// common start to end (MaxUint64: the run was stopped or count-bounded).
func (s *Sender) result(start, end uint64) *tally.Result {
	cfg := &s.cfg
	r := &tally.Result{Scenario: cfg.Scenario.Name, TargetRate: cfg.Rate, Shape: cfg.Shape, Threads: cfg.Threads, BucketSize: cfg.BucketSize,
		TupleBytes: len(s.threads[0].tpls[0].Msg), Overflow: string(cfg.Overflow), Idle: string(cfg.Idle),
		SendCostNs: s.sendCost.Nanoseconds(), SendBatch: len(s.threads[0].items), LateThreshNs: cfg.LateThreshold.Nanoseconds(),
		Windows: []uint64{}, Errors: []string{}, Injected: inject.NewRecord(cfg.Stalls, 0, nil)}
	r.Injected.SendWork = cfg.SendWork
	if cfg.Expect != nil {
		r.Expect = cfg.Expect.Expr
	}
	if cfg.ExpectWindow > 0 {
		var outside uint64
		r.ExpectWindowMs = cfg.ExpectWindow.Milliseconds()
		r.ExpectedWindows, outside = windowCounts(s.threads)
		if outside > 0 { // the cells cover the run: a bug, never a guess
			r.Errors = append(r.Errors, fmt.Sprintf("%d tuple(s) sent in a window outside the run's: the windows owed are not exact", outside))
		}
	}
	merged := histo.NewPrecise()
	last, measured, windows := addThreads(r, merged, s.threads, uint64(cfg.BucketSize))
	r.Stages, r.ServiceRates = []stage.Total{}, []servicerate.Rate{} // always present (docs/json.md)
	if s.stages != nil {
		r.StageSeries = s.stages.Series()
		r.Stages = r.StageSeries.Totals(0, 0)
		r.ServiceRates = s.rates.Rates()
	}
	if r.EmittedBkts > 0 {
		r.CPUPerBucketNs = float64(r.EmissionCPUNs) / float64(r.EmittedBkts)
	}
	if r.ScheduledTups > r.Emitted+r.DroppedTups {
		r.Shortfall = r.ScheduledTups - r.Emitted - r.DroppedTups
	}
	clock := cfg.Clock
	span := last - start
	if end != math.MaxUint64 && !r.Interrupted {
		span = end - start
	} else if cfg.Rate > 0 {
		span += uint64(float64(cfg.BucketSize) * float64(cfg.Threads) / cfg.Rate * clock.Hz) // include the last slot
	}
	r.DurationS = clock.TicksToNs(span) / 1e9
	if r.DurationS > 0 {
		r.AchievedRate = float64(r.Emitted) / r.DurationS
	}
	// Full windows only: a window w is complete if the run lasted past its end.
	full := int(span / uint64(clock.Hz))
	var prev uint64
	for i := 0; i < full && i < len(windows); i++ {
		r.Windows = append(r.Windows, windows[i]-prev)
		prev = windows[i]
	}
	if cfg.Rate > 0 {
		for _, n := range r.Windows {
			r.WindowMaxDev = max(r.WindowMaxDev, math.Abs(float64(n)-cfg.Rate)/cfg.Rate)
		}
	}
	if measured > 0 {
		r.LateFraction = float64(r.LateSlots) / float64(measured)
	}
	r.Lateness = merged.Summary()
	r.MaxLateFraction = cfg.MaxLateFraction
	judgeSchedule(r, cfg)
	return r
}

// addThreads adds every thread's counts, streams, links and errors, and
// returns the last send (ticks), the slots measured for lateness, and the
// cumulative tuples sent per 1-second window.
func addThreads(r *tally.Result, merged *histo.Precise, threads []*thread, bucket uint64) (last, measured uint64, windows []uint64) {
	for _, t := range threads {
		r.Emitted += t.emittedTuples.Load()
		r.Matched += t.matched
		r.EmittedBkts += t.emittedBuckets.Load()
		r.DroppedBkts += t.droppedBuckets.Load()
		r.DroppedTups += t.droppedTuples.Load()
		r.LateSlots += t.lateSlots.Load()
		r.ScheduledTups += t.scheduled * bucket
		measured += t.measuredSlots
		r.EmissionCPUNs += t.cpuNs
		r.Interrupted = r.Interrupted || t.interrupted
		merged.Merge(t.precise)
		last = max(last, t.lastSend)
		r.Streams = append(r.Streams, tally.StreamEnd{Thread: t.id, Stream: t.stream, Endpoint: t.endpoint, CPU: t.cpu, Tuples: t.emittedTuples.Load(),
			Dropped: t.droppedBuckets.Load(), MarkerSent: t.endMarker == nil, LateSlots: t.lateSlots.Load(), P99Lateness: t.precise.Summary().P99})
		for _, err := range []error{t.err, t.endMarker} {
			if err != nil {
				r.Errors = append(r.Errors, err.Error())
			}
		}
		// A failed flush is already the link's problem (below); a broker's
		// failure among these is also the system's.
		for _, err := range []error{t.err, t.endMarker, t.flushErr} {
			if driver.IsFailure(err) {
				r.SystemFailures = append(r.SystemFailures, err.Error())
			}
		}
		if windows == nil {
			windows = make([]uint64, len(t.windows))
		}
		for i, c := range t.windows {
			windows[i] += c
		}
	}
	for _, t := range threads {
		r.Links = append(r.Links, t.link.Link)
		if p := t.link.Problem(); p != "" {
			r.Errors = append(r.Errors, p)
		}
	}
	return last, measured, windows
}

// judgeSchedule says whether a paced run kept its schedule: no shortfall
// and no more late slots than MaxLateFraction.
func judgeSchedule(r *tally.Result, cfg *Config) {
	r.ScheduleKept, r.Schedule = true, ""
	if cfg.Rate <= 0 {
		return
	}
	var missed []string
	if r.Shortfall > 0 {
		missed = append(missed, fmt.Sprintf("%d tuples behind schedule", r.Shortfall))
	}
	if r.LateFraction > cfg.MaxLateFraction {
		missed = append(missed, fmt.Sprintf("%.1f%% of slots late (over %s; limit %.1f%%), p99 lateness %s",
			100*r.LateFraction, numfmt.Duration(cfg.LateThreshold), 100*cfg.MaxLateFraction, numfmt.Ns(float64(r.Lateness.P99))))
	}
	if len(missed) > 0 {
		r.ScheduleKept, r.Schedule = false, strings.Join(missed, "; ")
	}
}

// Progress is a live view of the totals, safe to take while running.
type Progress struct {
	Elapsed        time.Duration
	Emitted        uint64
	DroppedBuckets uint64
	LateSlots      uint64
	Threads        []ThreadProgress
	Running        bool          // the emission threads run
	TargetRate     float64       // configured total (0: unpaced)
	SendCost       time.Duration // measured cost of one send of one bucket
}

// ThreadProgress is one emission thread's published counters.
type ThreadProgress struct {
	ID                                                         int
	Stream                                                     uint32
	Emitted, Buckets, DroppedBuckets, DroppedTuples, LateSlots uint64
	Lateness                                                   histo.Counts // ns: the same buckets on every host
}

// Snapshot returns the live totals: it reads the threads' published
// counters, so it costs the emission loops nothing.
func (s *Sender) Snapshot() Progress {
	p := Progress{Elapsed: time.Since(s.started), Running: s.running.Load(), TargetRate: s.cfg.Rate, SendCost: s.sendCost}
	for _, t := range s.threads {
		tp := ThreadProgress{ID: t.id, Stream: t.stream, Emitted: t.emittedTuples.Load(), Buckets: t.emittedBuckets.Load(),
			DroppedBuckets: t.droppedBuckets.Load(), DroppedTuples: t.droppedTuples.Load(), LateSlots: t.lateSlots.Load()}
		tp.Lateness.Add(&t.lateness)
		p.Emitted += tp.Emitted
		p.DroppedBuckets += tp.DroppedBuckets
		p.LateSlots += tp.LateSlots
		p.Threads = append(p.Threads, tp)
	}
	return p
}

// Stages is the sender's stage accounting (nil: off).
func (s *Sender) Stages() *stage.Set { return s.stages }

// Rates is the sender's service-rate tracker (nil: off).
func (s *Sender) Rates() *servicerate.Tracker { return s.rates }

// CPU measures the process's threads and the host.
func (s *Sender) CPU() *cpustat.Sampler { return s.cpu }
