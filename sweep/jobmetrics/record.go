package jobmetrics

import (
	"fmt"
	"slices"
	"time"

	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/stage"
)

// Recorder turns scrapes into operator series: the times per second
// integrated over the time between scrapes (cumulative ns, as every stage
// series counts), the records counter as it is (or its rate integrated).
type Recorder struct {
	m      Mapping
	series stage.Series
	idx    map[string]int // operator -> its stage in series
	first  map[string]float64
	rated  map[string]float64 // records integrated from a rate, unrounded
}

// NewRecorder records scrapes taken every period by m.
func NewRecorder(m Mapping, period time.Duration) *Recorder {
	return &Recorder{m: m, idx: map[string]int{}, first: map[string]float64{}, rated: map[string]float64{},
		series: stage.Series{PeriodNs: period.Nanoseconds(), Hz: 1e9}}
}

// MaxSamples bounds a recorder's samples (a day at 100 ms is 864 k).
const MaxSamples = 1 << 20

// Add records one scrape taken at atNs (Unix ns). An operator's records
// counter that goes back is an error: the job restarted.
func (r *Recorder) Add(ops map[string]*Operator, atNs int64) error {
	s := &r.series
	n := len(s.UnixNs)
	if n == MaxSamples {
		return fmt.Errorf("more than %d scrapes", MaxSamples)
	}
	if n > 0 && atNs <= s.UnixNs[n-1] {
		return nil // the clock did not move: nothing to add
	}
	dt := 0.0 // s since the last scrape
	if n > 0 {
		dt = float64(atNs-s.UnixNs[n-1]) / 1e9
	}
	var fresh []string // new operators, in name order: the series is the same for the same scrapes
	for name, o := range ops {
		if _, ok := r.idx[name]; !ok && o.Times > 0 {
			fresh = append(fresh, name)
		}
	}
	slices.Sort(fresh)
	for _, name := range fresh {
		if len(r.idx) == MaxOperators {
			return fmt.Errorf("more than %d operators", MaxOperators)
		}
		r.idx[name] = len(s.Stages)
		s.Stages = append(s.Stages, stage.StageSeries{Name: name, Kind: stage.Operator, States: []string{"waiting", "busy", "blocked"},
			From: n, StateNs: make([][]int64, 3), NoQueue: true})
	}
	s.TSC = append(s.TSC, uint64(atNs)) // ns as the series' ticks (Hz 1e9)
	s.UnixNs = append(s.UnixNs, atNs)
	for name, i := range r.idx {
		st := &s.Stages[i]
		o := ops[name]
		k := len(st.Items) // this operator's samples so far
		state := [3]float64{}
		var items uint64
		if k > 0 {
			for j := range state {
				state[j] = float64(st.StateNs[j][k-1])
			}
			items = st.Items[k-1]
		}
		if o != nil && o.Times > 0 && k > 0 { // a missing operator keeps its last counts
			state[stage.OpWaiting] += o.Idle * 1e6 * dt
			state[stage.OpBusy] += o.Busy * 1e6 * dt
			state[stage.OpBlocked] += o.BackPressured * 1e6 * dt
		}
		switch {
		case o != nil && o.HasRecords:
			if _, ok := r.first[name]; !ok {
				r.first[name] = o.Records
			}
			v := o.Records - r.first[name]
			if v < float64(items) {
				return fmt.Errorf("operator %s's %s went back from %d to %.0f: the job restarted", name, r.m.RecordsIn, items+uint64(r.first[name]), o.Records)
			}
			items = uint64(v)
		case o != nil && o.HasRate && k > 0:
			r.rated[name] += o.Rate * dt
			items = uint64(r.rated[name])
		}
		for j := range state {
			st.StateNs[j] = append(st.StateNs[j], int64(state[j]))
		}
		st.Items = append(st.Items, items)
	}
	return nil
}

// Samples is how many scrapes were recorded.
func (r *Recorder) Samples() int { return len(r.series.UnixNs) }

// Result is the job's operators as a job agent's result would carry
// them, with their edges from the mapping (those between operators seen).
func (r *Recorder) Result() *protocol.JobResult {
	res := &protocol.JobResult{Name: r.m.Job, StageSeries: &r.series, ItemsAreRecords: true}
	for _, e := range r.m.Edges {
		_, a := r.idx[e[0]]
		_, b := r.idx[e[1]]
		if a && b {
			res.Edges = append(res.Edges, e)
		}
	}
	return res
}
