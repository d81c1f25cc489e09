package diagnose

import (
	"math"
	"testing"
)

// TestAStallsEdgesCount: a pause covering one whole period and most of
// the periods either side is a stall of their sum (its edges are the
// busy time its items do not explain there); a lone STALLED period whose
// neighbours' busy time their items explain stays transient.
func TestAStallsEdgesCount(t *testing.T) {
	const P = int64(100e6)
	healthy := work{busy: 0.1, items: 10} // 0.01 of a period per item
	for _, tc := range []struct {
		name          string
		before, after work
		stalls        int
		seconds       float64
		from, to      int64 // the stall's bounds, from the first snapshot's start
	}{
		{"a 220 ms pause", work{busy: 0.8, items: 10}, work{busy: 0.9, items: 40}, 1, 0.22, 11*P - P*7/10, 12*P + P/2},
		{"catching up is work", work{busy: 0.1, items: 10}, work{busy: 0.9, items: 90}, 0, 0, 0, 0},
		{"a black box's edges", work{busy: -1, items: 0}, work{busy: -1, items: 0}, 0, 0, 0, 0},
	} {
		// ten healthy periods either side: the stage's cost per item
		var labels [][]Label
		var works [][]work
		for i := 0; i < 10; i++ {
			labels, works = append(labels, []Label{Healthy}), append(works, []work{healthy})
		}
		labels = append(labels, []Label{Healthy}, []Label{Stalled}, []Label{Healthy})
		works = append(works, []work{tc.before}, []work{{busy: 1, items: 0}}, []work{tc.after})
		for i := 0; i < 10; i++ {
			labels, works = append(labels, []Label{Healthy}), append(works, []work{healthy})
		}
		d := &Diagnosis{PeriodNs: P, Modules: []Module{{Name: "consumer"}}}
		for i := range labels {
			d.Snapshots = append(d.Snapshots, Snapshot{UnixNs: int64(i+1) * P, Labels: labels[i]})
		}
		d.summarise(labels, works, 2)
		if len(d.Stalls) != tc.stalls {
			t.Errorf("%s: %d stalls, want %d (summary %+v)", tc.name, len(d.Stalls), tc.stalls, d.Summary[0])
			continue
		}
		if tc.stalls == 0 {
			if d.Summary[0].Transient != 1 {
				t.Errorf("%s: %d transient, want 1", tc.name, d.Summary[0].Transient)
			}
			continue
		}
		st := d.Stalls[0]
		near := func(a, b int64) bool { return a-b < 1000 && b-a < 1000 } // busy shares are float32
		if math.Abs(st.Seconds-tc.seconds) > 1e-6 || !near(st.FromNs, tc.from) || !near(st.ToNs, tc.to) || st.Snapshots != 1 {
			t.Errorf("%s: %+v; want %.3fs from %d to %d", tc.name, st, tc.seconds, tc.from, tc.to)
		}
	}
}
