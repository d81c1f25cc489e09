package activity

import (
	"math"
	"testing"
)

// TestAReleaseCarriesPathsThroughAThread: a filter and the join it feeds
// on one thread take turns (the filter blocked while the join works,
// released when it ends): without the release edges every path is cut
// by one of them waiting; with them, one path runs through both
// operators' busy activities from the window's start to its end.
func TestAReleaseCarriesPathsThroughAThread(t *testing.T) {
	tr := &Trace{
		Workers: []string{"job0/op.filter", "job0/op.join"},
		Activities: [][]Activity{
			{{Busy, 0, 10, 1}, {Blocked, 10, 30, 0}, {Waiting, 30, 31, 0}, {Busy, 31, 50, 1}, {Blocked, 50, 70, 0}, {Waiting, 70, 71, 0}, {Busy, 71, 100, 1}},
			{{Waiting, 0, 10, 0}, {Busy, 10, 30, 1}, {Waiting, 30, 50, 0}, {Busy, 50, 70, 1}, {Waiting, 70, 100, 0}},
		},
		Transfers: []Transfer{{From: 0, To: 1, SentNs: 10, RecvNs: 10, Tuples: 5, Internal: true},
			{From: 0, To: 1, SentNs: 50, RecvNs: 50, Tuples: 5, Internal: true}},
	}
	for _, tc := range []struct {
		name     string
		releases [][2]int
		paths    bool
	}{{"without", nil, false}, {"with", [][2]int{{0, 1}}, true}} {
		ws := windows(t, tr, Options{WindowNs: 100, WaitNs: DefaultWaitNs, Releases: tc.releases})
		if len(ws) != 1 {
			t.Fatalf("%s: %d windows", tc.name, len(ws))
		}
		if has := !math.IsInf(ws[0].Paths, -1); has != tc.paths {
			t.Errorf("%s releases: paths %v (log %v), want %v; edges %+v", tc.name, has, ws[0].Paths, tc.paths, ws[0].Edges)
		}
	}
	if _, err := NewBuilder(tr, Options{WindowNs: 100, Releases: [][2]int{{0, 0}}}); err == nil {
		t.Error("a release of a worker by itself was accepted")
	}
}
