package servicerate

import (
	"math"
	"testing"

	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/tsc"
)

// Two operators one after the other on one thread, each under half of
// every 100 ms period (issue 58: the filter 47% and the join 49% of one
// pipeline thread): the filter serves 10 k tuples per busy second, the
// join 3 k.
const (
	filterBusy, joinBusy = 0.47, 0.49
	filterRate, joinRate = 10e3, 3e3
	periodNs             = 100e6
	periods              = 8
)

// TestASharedThreadIsWarm: a stage on a shared thread is read in the
// periods its thread was busy, not only those it was: each operator
// alone is under the busy share, so without the thread neither converges.
func TestASharedThreadIsWarm(t *testing.T) {
	for _, shared := range []bool{false, true} {
		clock := tsc.NewClockHz(1e9)
		set := stage.NewSet(clock, stage.DefaultPeriod)
		tr := Track(set, clock)
		filter := set.Add("filter", stage.Operator, nil)
		join := set.Add("join", stage.Operator, nil)
		if shared {
			for _, a := range []*stage.Account{filter, join} {
				if err := set.SetThread(a, "pipeline thread 0"); err != nil {
					t.Fatal(err)
				}
			}
		}
		accounts := []*stage.Account{filter, join}
		readings := make([]stage.Reading, 2)
		now := uint64(1)
		tr.sample(stage.Snapshot{TSC: now, Accounts: accounts, Readings: append([]stage.Reading(nil), readings...)})
		for p := 0; p < periods; p++ {
			for i, share := range []float64{filterBusy, joinBusy} {
				readings[i].Ticks[stage.OpBusy] += uint64(share * periodNs)
				readings[i].Ticks[stage.OpWaiting] += uint64((1 - share) * periodNs)
				readings[i].Tuples += uint64(share * periodNs / 1e9 * []float64{filterRate, joinRate}[i])
			}
			now += periodNs
			tr.sample(stage.Snapshot{TSC: now, Accounts: accounts, Readings: append([]stage.Reading(nil), readings...)})
		}
		got := map[string]float64{}
		for _, r := range tr.Rates() {
			if v, ok := r.Value(); ok && r.Method == MethodBusyTime {
				got[r.Stage] = v
			}
			if shared != (r.Thread == "pipeline thread 0") {
				t.Errorf("shared %v: %s's rate on thread %q", shared, r.Stage, r.Thread)
			}
		}
		if !shared {
			if len(got) != 0 {
				t.Errorf("each on its own thread, under half busy: %v; want no rate", got)
			}
			continue
		}
		if math.Abs(got["filter"]-filterRate) > 1 || math.Abs(got["join"]-joinRate) > 1 {
			t.Errorf("on one thread: %v; want filter %v, join %v", got, filterRate, joinRate)
		}
	}
}

// TestBusyTimeOfASeriesOnASharedThread: the same, read from a recorded
// series (a job's metrics).
func TestBusyTimeOfASeriesOnASharedThread(t *testing.T) {
	const n = periods + 1
	s := &stage.Series{PeriodNs: periodNs, Hz: 1e9}
	for i := 0; i < n; i++ {
		s.TSC = append(s.TSC, uint64(i)*periodNs)
		s.UnixNs = append(s.UnixNs, int64(i)*periodNs)
	}
	mk := func(name string, share, rate float64) stage.StageSeries {
		st := stage.StageSeries{Name: name, Kind: stage.Operator, States: []string{"waiting", "busy", "blocked"},
			StateNs: [][]int64{make([]int64, n), make([]int64, n), make([]int64, n)}, NoQueue: true, Thread: "pipeline thread 0"}
		for k := 1; k < n; k++ {
			st.StateNs[0][k] = st.StateNs[0][k-1] + int64((1-share)*periodNs)
			st.StateNs[1][k] = st.StateNs[1][k-1] + int64(share*periodNs)
		}
		for k := 0; k < n; k++ {
			st.Items = append(st.Items, uint64(float64(k)*share*periodNs/1e9*rate))
		}
		return st
	}
	s.Stages = []stage.StageSeries{mk("filter", filterBusy, filterRate), mk("join", joinBusy, joinRate)}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	rates := BusyTimeOfSeries(s, 0, 0)
	for i, want := range []float64{filterRate, joinRate} {
		if v, ok := rates[i].Value(); !ok || math.Abs(v-want) > 1 || rates[i].Thread != "pipeline thread 0" {
			t.Errorf("%s: %+v; want %v on pipeline thread 0", rates[i].Stage, rates[i], want)
		}
	}
}

// TestAThreadsLimitAddsItsStagesCosts: a thread saturates where its
// stages' costs per pipeline tuple add up to a second (the filter sees
// every tuple, the join a third of them), below either stage's own limit;
// a thread one of whose stages has no estimate has no limit.
func TestAThreadsLimitAddsItsStagesCosts(t *testing.T) {
	rate := func(stage string, v, share float64) Rate {
		r := Rate{Stage: stage, Kind: "operator", Method: MethodBusyTime, Tuples: 1000, InputShare: share, Thread: "ysb/pipeline thread 0"}
		if v > 0 {
			r.TuplesPerS, r.Converged = &v, true
		}
		return r
	}
	ls := Limits([]Rate{rate("ysb/filter", filterRate, 1), rate("ysb/join", joinRate, 1.0/3)})
	want := 1 / (1/filterRate + 1/(3*joinRate)) // 4,737 tuples/s
	if len(ls) != 3 || ls[0].Stage != "ysb/pipeline thread 0" || math.Abs(ls[0].TuplesPerS-want) > 1e-6*want ||
		len(ls[0].Operators) != 2 || ls[1].Stage != "ysb/join" {
		t.Fatalf("limits %+v; want the thread first at %.0f, with its two operators, then the join at 9000", ls, want)
	}
	// A filter that costs the thread 90% of its time is named for it, at
	// the thread's limit.
	ls = Limits([]Rate{rate("ysb/filter", 1e3, 1), rate("ysb/join", joinRate, 1.0/3)})
	if want := 1 / (1/1e3 + 1/(3*joinRate)); ls[0].Stage != "ysb/filter" || ls[0].Thread != "ysb/pipeline thread 0" || math.Abs(ls[0].TuplesPerS-want) > 1e-6*want {
		t.Fatalf("limits %+v; want the filter at the thread's %.0f", ls, want)
	}
	ls = Limits([]Rate{rate("ysb/filter", filterRate, 1), rate("ysb/join", 0, 1.0/3)})
	if len(ls) != 1 || ls[0].Stage != "ysb/filter" {
		t.Fatalf("limits %+v; want the filter's alone: the join had no estimate, the thread no limit", ls)
	}
}
