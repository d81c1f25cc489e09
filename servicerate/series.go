package servicerate

import (
	"github.com/cloudprofiler-go/cp/stage"
)

// BusyTimeOfSeries is the busy-time estimate of every timed stage of a
// recorded series (a job's operators read from its metrics, which no
// tracker watched live), by the tracker's rule: the tuples over the busy
// time of the sampling periods busy at least half their length that
// finished a tuple. Only the samples within [fromNs, toNs] count (both
// 0: all).
func BusyTimeOfSeries(s *stage.Series, fromNs, toNs int64) []Rate {
	out := []Rate{}
	onThread := threadBusyOfSeries(s)
	for _, st := range s.Stages {
		classes := stage.States(st.Kind)
		if len(classes) == 0 {
			continue // a black box: no busy time
		}
		busy := func(k int) int64 { return seriesBusy(&st, k) }
		all := func(k int) int64 {
			var b int64
			for j := range classes {
				b += st.StateNs[j][k]
			}
			return b
		}
		r := Rate{Stage: st.Name, Kind: st.Kind, Thread: st.Thread, Method: MethodBusyTime, Status: NotConverged, T: float64(s.PeriodNs) / 1e9}
		var busyNs, tuples float64
		var carry int64
		var spread periodSpread
		first := -1
		for k := 1; k < len(st.Items); k++ {
			at := s.UnixNs[st.From+k]
			if fromNs != 0 || toNs != 0 {
				if s.UnixNs[st.From+k-1] < fromNs || at > toNs {
					continue
				}
			}
			if first < 0 {
				first = k - 1
			}
			done := st.Items[k] - st.Items[k-1]
			r.Tuples += done
			db, dt := busy(k)-busy(k-1), float64(s.UnixNs[st.From+k]-s.UnixNs[st.From+k-1])
			warm := db // on a shared thread, warm when the thread is busy
			if st.Thread != "" {
				warm = onThread[st.Thread][st.From+k]
			}
			switch { // as the tracker reads its periods (an operator's long items carried)
			case done > 0 && (float64(warm) >= busyShare*dt || carry > 0):
				r.Periods++
				busyNs += float64(db + carry)
				tuples += float64(done)
				spread.add(float64(done) / float64(db+carry))
				carry = 0
			case done == 0 && float64(db) >= busyShare*dt && st.Kind == stage.Operator:
				carry += db
			default:
				carry = 0
			}
			if el := all(k) - all(first); el > 0 {
				r.Utilisation = float64(busy(k)-busy(first)) / float64(el)
			}
		}
		r.judge(busyNs, uint64(tuples))
		if r.Converged {
			r.Error = spread.relative()
		}
		out = append(out, r)
	}
	return out
}

// seriesBusy is a stage's busy ns up to its sample k.
func seriesBusy(st *stage.StageSeries, k int) int64 {
	var b int64
	for j, c := range stage.States(st.Kind) {
		if c.Class == stage.Busy {
			b += st.StateNs[j][k]
		}
	}
	return b
}

// threadBusyOfSeries is each shared thread's busy ns in the period
// before each sample of the series (by the series' index), its stages'
// added.
func threadBusyOfSeries(s *stage.Series) map[string][]int64 {
	out := map[string][]int64{}
	for i := range s.Stages {
		st := &s.Stages[i]
		if st.Thread == "" || len(stage.States(st.Kind)) == 0 {
			continue
		}
		v := out[st.Thread]
		if v == nil {
			v = make([]int64, len(s.TSC))
			out[st.Thread] = v
		}
		for k := 1; k < len(st.Items); k++ {
			v[st.From+k] += seriesBusy(st, k) - seriesBusy(st, k-1)
		}
	}
	return out
}
