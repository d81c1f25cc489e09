package servicerate

import (
	"testing"

	"github.com/cloudprofiler-go/cp/stage"
)

// TestBusyTimeCarriesAnOperatorsLongItems: a window operator whose one
// batch takes 240 ms (busy three periods, finishing 500 tuples 40 ms into
// the third) serves 500 tuples per 0.24 busy seconds; periods busy without a
// finished tuple are a stall for the harness's own stages, not counted.
func TestBusyTimeCarriesAnOperatorsLongItems(t *testing.T) {
	const n = 13
	s := &stage.Series{PeriodNs: 1e8, Hz: 1e9}
	for i := 0; i < n; i++ {
		s.TSC = append(s.TSC, uint64(i)*1e8)
		s.UnixNs = append(s.UnixNs, int64(i)*1e8)
	}
	mk := func(kind stage.Kind) stage.StageSeries {
		st := stage.StageSeries{Name: string(kind), Kind: kind, States: []string{"waiting", "busy", "blocked"}, StateNs: [][]int64{make([]int64, n), make([]int64, n), make([]int64, n)}, NoQueue: true}
		if kind == stage.Consumer {
			st.States, st.StateNs = []string{"idle", "working"}, [][]int64{make([]int64, n), make([]int64, n)}
		}
		var busy, idle int64
		var items uint64
		for k := 0; k < n; k++ {
			if k > 0 {
				// four windows: busy 100, 100, 40 ms (its 500 tuples done), idle 60 ms
				switch (k - 1) % 3 {
				case 0, 1:
					busy += 1e8
				case 2:
					busy, idle, items = busy+4e7, idle+6e7, items+500
				}
			}
			st.StateNs[0][k], st.StateNs[1][k] = idle, busy // both kinds: idle first, busy second
			st.Items = append(st.Items, items)
		}
		return st
	}
	s.Stages = []stage.StageSeries{mk(stage.Operator), mk(stage.Consumer)}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	rates := BusyTimeOfSeries(s, 0, 0)
	if v, ok := rates[0].Value(); !ok || v < 2083 || v > 2084 {
		t.Errorf("the operator: %+v; want 2083 tuples per busy second", rates[0])
	}
	if v, ok := rates[1].Value(); ok {
		t.Errorf("the consumer read %v from periods that stalled; want no rate (a harness stage's busy periods without a tuple are stalls)", v)
	}
}
