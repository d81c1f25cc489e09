package capacity

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sender"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/trialcfg"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/wire"
)

// Plan measures one stage's capacity alone: the ground truth for
// its service-rate estimates (RaftLib §V-B: each kernel run by itself from
// a large resident data source).
type Plan struct {
	Stage    string // consumer or lane
	Work     time.Duration
	Bucket   int
	Scenario string
	Duration time.Duration // each measured run, about
	Repeats  int
	// CPUs pin the lane then the consumer (as dgrecv --cpus); nil: not
	// pinned. Give the stage the placement it has in the runs it is
	// compared with.
	CPUs  []int
	Clock *tsc.Clock
	Logf  func(format string, args ...any)
}

// The stages cpsweep capacity measures in process. The sender's capacity
// is dgsend unpaced into dgrecv --drain (the command runs the binaries).
const (
	Consumer = "consumer"
	Lane     = "lane"
	Sender   = "sender"
)

// Bounds of a capacity run's prefilled queue: enough buckets for the
// asked duration at the rate a calibration run measured, within memory.
const (
	minBuckets = 200
	maxBuckets = 1_000_000
	maxBytes   = 1 << 30
)

// Result is a stage's capacity, the median of the runs.
type Result struct {
	Stage      string        `json:"stage"`
	Work       time.Duration `json:"work_ns"`
	Bucket     int           `json:"bucket"`
	TuplesPerS float64       `json:"tuples_per_s"`
	Runs       []Run         `json:"runs"`
	// NotAlone are the runs measured again because the stage was starved
	// or blocked more than MaxStarved of them (another process took the
	// CPU its feeder needed); they are not in the answer.
	NotAlone []Run `json:"not_alone,omitempty"`
}

// Run is one measured run. Starved is the share of the run the
// stage spent without work (consumer: idle; lane: its ring full): above
// MaxStarved the stage was not measured alone, and the run says so.
type Run struct {
	TuplesPerS float64 `json:"tuples_per_s"`
	Tuples     uint64  `json:"tuples"`
	Seconds    float64 `json:"seconds"`
	Starved    float64 `json:"starved"`
}

// MaxStarved is the largest share of a run a stage may spend starved or
// blocked and still count as measured alone.
const MaxStarved = 0.05

// attemptsPerRun bounds how often one run is measured again after it was
// not alone: a moment of another process's work should not fail the
// measurement, a host that is busy throughout should.
const attemptsPerRun = 3

// errNotAlone marks a run in which the stage was starved or blocked.
var errNotAlone = errors.New("something else limited it")

// Measure runs the plan: a short calibration, then Repeats runs
// of about Duration each. It fails, rather than answer, when the stage was
// not alone (starved or blocked for more than MaxStarved of a run) in
// attemptsPerRun measurements of the same run.
func Measure(p Plan) (*Result, error) {
	if p.Stage != Consumer && p.Stage != Lane {
		return nil, fmt.Errorf("capacity of %q: measured in process are %s and %s", p.Stage, Consumer, Lane)
	}
	if p.Bucket < 1 || p.Bucket > sender.MaxBucketSize || p.Repeats < 1 || p.Duration <= 0 || p.Clock == nil {
		return nil, fmt.Errorf("capacity: bucket must be 1..%d tuples, repeats and duration positive (got %d, %d, %v)", sender.MaxBucketSize, p.Bucket, p.Repeats, p.Duration)
	}
	sc, err := scenarios.Load(p.Scenario)
	if err != nil {
		return nil, err
	}
	enc, err := sc.Generate()
	if err != nil {
		return nil, err
	}
	tpls, err := scenarios.Templates(enc, 1, p.Bucket)
	if err != nil {
		return nil, err
	}
	maxBuckets := min(maxBuckets, maxBytes/max(len(tpls[0].Msg), 1))
	if maxBuckets < minBuckets {
		return nil, fmt.Errorf("capacity: buckets of %d tuples (%d bytes) are too large to prefill %d of them in %d MiB", p.Bucket, len(tpls[0].Msg), minBuckets, maxBytes>>20)
	}
	// Calibrate on runs of growing length until one lasts 200 ms.
	var cal Run
	for c := minBuckets; ; c = min(c*8, maxBuckets) {
		if cal, err = measureRun(p, sc.Schema, tpls, c, true); err != nil {
			return nil, fmt.Errorf("calibration run: %w", err)
		}
		if cal.Seconds >= 0.2 || c == maxBuckets {
			break
		}
	}
	n := int(cal.TuplesPerS * p.Duration.Seconds() / float64(p.Bucket))
	n = max(minBuckets, min(n, maxBuckets))
	if p.Logf != nil {
		p.Logf("calibration: %.0f tuples/s; %d runs of %d buckets (~%v each)", cal.TuplesPerS, p.Repeats, n, p.Duration)
	}
	res := &Result{Stage: p.Stage, Work: p.Work, Bucket: p.Bucket}
	for i := 0; i < p.Repeats; i++ {
		r, err := measureAlone(p, sc.Schema, tpls, n, i+1, res)
		if err != nil {
			return res, fmt.Errorf("run %d: %w", i+1, err)
		}
		res.Runs = append(res.Runs, r)
		if p.Logf != nil {
			p.Logf("run %d: %.0f tuples/s (%d tuples in %.2fs, starved %.1f%%)", i+1, r.TuplesPerS, r.Tuples, r.Seconds, 100*r.Starved)
		}
	}
	rates := make([]float64, len(res.Runs))
	for i, r := range res.Runs {
		rates[i] = r.TuplesPerS
	}
	sort.Float64s(rates)
	res.TuplesPerS = rates[len(rates)/2]
	return res, nil
}

// measureAlone measures run number i until the stage was alone in it, at
// most attemptsPerRun times; the runs it discards go to res.NotAlone.
func measureAlone(p Plan, schema string, tpls []scenarios.Template, n, i int, res *Result) (Run, error) {
	for attempt := 1; ; attempt++ {
		r, err := measureRun(p, schema, tpls, n, false)
		if err == nil || !errors.Is(err, errNotAlone) {
			return r, err
		}
		res.NotAlone = append(res.NotAlone, r)
		if attempt == attemptsPerRun {
			return r, fmt.Errorf("%w, in each of %d attempts: measure on a quieter host, or give the stage its CPUs (--cpus, --other-cpus)", err, attempt)
		}
		if p.Logf != nil {
			p.Logf("run %d: not alone (starved %.1f%%), measured again", i, 100*r.Starved)
		}
	}
}

// measureRun measures one run of n prefilled buckets (a calibration only
// its rate, however short).
func measureRun(p Plan, schema string, tpls []scenarios.Template, n int, calibration bool) (Run, error) {
	msgs := make([][]byte, 0, n+1)
	now := time.Now().UnixNano()
	for k := 0; k < n; k++ {
		t := &tpls[k%len(tpls)]
		t.Patch(uint64(k), wire.TupleID(1, uint64(k*p.Bucket)), now)
		msgs = append(msgs, append([]byte(nil), t.Msg...))
	}
	end, err := wire.AppendEnd(nil, 1, wire.End{Tuples: uint64(n * p.Bucket), Buckets: uint64(n), Reason: "completed"})
	if err != nil {
		return Run{}, err
	}
	msgs = append(msgs, end)
	cfg := receiver.Config{
		Agent:         trialcfg.Agent{StagePeriod: stage.DefaultPeriod},
		Receiver:      trialcfg.Receiver{Schema: schema, WorkPerTuple: p.Work, EndTimeout: 10 * time.Second},
		Endpoints:     []string{"inproc://cp-capacity"},
		HWM:           min(n+2, 1_000_000),
		CPUs:          p.CPUs,
		ExpectStreams: 1,
		Clock:         p.Clock,
	}
	if p.Stage == Lane {
		cfg.WorkPerTuple = 0
	}
	r, err := receiver.New(cfg)
	if err != nil {
		return Run{}, err
	}
	defer r.Close()
	if err := r.Prefill(0, msgs); err != nil {
		return Run{}, err
	}
	res, err := r.Run()
	if err != nil {
		return Run{}, err
	}
	if !res.Complete || res.Consumed != uint64(n*p.Bucket) {
		return Run{}, fmt.Errorf("consumed %d of %d tuples (%s)", res.Consumed, n*p.Bucket, res.Reason)
	}
	return runOf(p.Stage, res, calibration)
}

// runOf reads the stage's rate over its active time (the consumer:
// from its first bucket to its last; the lane: from the start to its last
// message), and from the stage series the share of that time it was
// starved or blocked (up to the last sample before it finished).
func runOf(name string, res *tally.Result, calibration bool) (Run, error) {
	s := res.StageSeries
	if s == nil {
		return Run{}, errors.New("no stage series")
	}
	stageName := "consumer"
	if name == Lane {
		stageName = "lane0"
	}
	for _, st := range s.Stages {
		if st.Name != stageName || st.Len() < 2 {
			continue
		}
		total := st.Items[st.Len()-1]
		last := st.Len() - 1
		for last > 0 && st.Items[last] == total {
			last--
		}
		var sum, busy, starved int64
		for j, stName := range st.States {
			d := st.StateNs[j][last] - st.StateNs[j][0]
			sum += d
			for _, k := range stage.States(st.Kind) {
				if k.Name == stName && k.Class == stage.Busy {
					busy += d
				}
			}
		}
		starved = sum - busy
		secs := res.DurationS
		if name == Lane && len(res.Lanes) > 0 {
			secs = res.Lanes[0].ActiveS
		}
		if secs <= 0 || (last == 0 && !calibration) {
			return Run{}, errors.New("the run was too short to measure (less than one stage sample)")
		}
		tuples := res.Consumed
		run := Run{Tuples: tuples, Seconds: secs, TuplesPerS: float64(tuples) / secs, Starved: float64(starved) / float64(max(sum, 1))}
		if calibration {
			return run, nil
		}
		if run.Starved > MaxStarved {
			return run, fmt.Errorf("the %s was starved or blocked %.1f%% of the run (at most %.0f%% to count as alone): %w", stageName, 100*run.Starved, 100*MaxStarved, errNotAlone)
		}
		return run, nil
	}
	return Run{}, fmt.Errorf("no %s in the stage series", stageName)
}
