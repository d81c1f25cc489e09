package probing

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cloudprofiler-go/cp/tsc"
)

// simClock is a node's clock in terms of true time t (reference ticks).
type simClock struct{ scale, offset float64 }

func (c simClock) at(t float64) uint64 { return uint64(c.scale*t + c.offset) }

// syntheticFile probes every ordered pair of nodes count times around
// t=start with jittered one-way delays, in two sessions, and relates them.
func syntheticFile(t *testing.T, clocks map[string]simClock, reference string) *RelationFile {
	rng := rand.New(rand.NewPCG(1, 2))
	var sessions []*Session
	for _, start := range []float64{1e9, 3e9} {
		ses := &Session{}
		for name := range clocks {
			ses.Nodes = append(ses.Nodes, Node{Name: name})
		}
		now := start
		for a, ca := range clocks {
			for b, cb := range clocks {
				if a == b {
					continue
				}
				var probes []tsc.Probe
				for i := 0; i < 100; i++ {
					fwd, proc, back := 20e3+rng.Float64()*30e3, 1e3, 15e3+rng.Float64()*50e3
					probes = append(probes, tsc.Probe{ASend: ca.at(now), BRecv: cb.at(now + fwd), BReply: cb.at(now + fwd + proc), ABack: ca.at(now + fwd + proc + back)})
					now += 200e3
				}
				ses.Pairs = append(ses.Pairs, Pair{A: a, B: b, Probes: probes})
			}
		}
		sessions = append(sessions, ses)
	}
	rf, err := Relate(sessions, reference)
	if err != nil {
		t.Fatal(err)
	}
	return rf
}

// TestDurationCases checks every case of §3.3 against the truth: the true
// duration lies inside the tighter bound, the paper's bound and the
// baseline, and the tighter bound is the narrowest.
func TestDurationCases(t *testing.T) {
	clocks := map[string]simClock{"a": {1, 0}, "b": {0.75 * (1 + 250e-6), 1e12}, "c": {1.2 * (1 - 150e-6), 5e11}}
	rf := syntheticFile(t, clocks, "a")
	cases := []struct {
		from, to string
		want     string
	}{
		{"a", "a", "reference"}, {"b", "b", "one node"}, {"a", "b", "from reference"}, {"c", "a", "to reference"}, {"b", "c", "across"},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range cases {
		var tightSum, paperSum float64
		n := 0
		for i := 0; i < 500; i++ {
			// inside both sessions' probes (the paper's window is between
			// the MinRTT probes, which may be anywhere in a session)
			t1 := 1.2e9 + rng.Float64()*1.5e9
			t2 := t1 + rng.Float64()*5e6
			d, err := rf.Duration(tc.from, clocks[tc.from].at(t1), tc.to, clocks[tc.to].at(t2))
			if err != nil {
				t.Fatal(err)
			}
			if d.Case != tc.want {
				t.Fatalf("%s->%s: case %q, want %q", tc.from, tc.to, d.Case, tc.want)
			}
			truth := t2 - t1
			if d.Tighter == nil || !within(*d.Tighter, truth) {
				t.Fatalf("%s->%s: tighter %+v (%s) misses %.0f", tc.from, tc.to, d.Tighter, d.TighterNote, truth)
			}
			if d.Paper == nil {
				t.Fatalf("%s->%s: no paper bound: %s", tc.from, tc.to, d.PaperNote)
			}
			if !within(*d.Paper, truth) {
				t.Fatalf("%s->%s: paper %+v misses %.0f", tc.from, tc.to, *d.Paper, truth)
			}
			if d.Baseline != nil && !within(*d.Baseline, truth) {
				t.Fatalf("%s->%s: baseline %+v misses %.0f", tc.from, tc.to, *d.Baseline, truth)
			}
			if b := d.Best(); b.Err > d.Tighter.Err || b.Err > d.Paper.Err {
				t.Fatalf("%s->%s: Best %+v is not the narrowest", tc.from, tc.to, b)
			}
			tightSum, paperSum, n = tightSum+d.Tighter.Err, paperSum+d.Paper.Err, n+1
		}
		t.Logf("%-15s mean half-width: tighter %8.0f ticks, paper %8.0f ticks", tc.want, tightSum/float64(n), paperSum/float64(n))
	}
	if _, err := rf.Duration("a", 1, "zz", 2); err == nil {
		t.Fatal("an unknown node was accepted")
	}
	if d, _ := rf.Duration("b", 1, "c", 2); d.Tighter != nil || d.TighterNote == "" {
		t.Fatalf("values outside the probed window got a bound: %+v", d)
	}
}

// within allows two ticks for the simulated clocks' rounding.
func within(b tsc.Bound, x float64) bool { return math.Abs(b.Value-x) <= b.Err+2 }

// TestTranslateEachMarksOnlyTheBadValues: values inside the probed window
// are answered with bounds that contain the truth; one outside it is
// marked with why, never extrapolated; the order is kept.
func TestTranslateEachMarksOnlyTheBadValues(t *testing.T) {
	b := simClock{0.75 * (1 + 250e-6), 1e12}
	rf := syntheticFile(t, map[string]simClock{"a": {1, 0}, "b": b}, "a")
	truth := []float64{1.5e9, 0.2e9, 2.5e9, 9e12} // the second and last are outside [1e9, ~3e9]
	values := make([]uint64, len(truth))
	for i, x := range truth {
		values[i] = b.at(x)
	}
	out, failed := rf.TranslateEach("b", values)
	if len(out) != 4 || failed != 2 {
		t.Fatalf("%d translations, %d marked: %+v", len(out), failed, out)
	}
	for i, tr := range out {
		if tr.TSC != values[i] || tr.Node != "b" {
			t.Fatalf("translation %d is of %d on %s, want %d on b", i, tr.TSC, tr.Node, values[i])
		}
		bad := i == 1 || i == 3
		if bad != (tr.Error != "") {
			t.Errorf("value %d (true %.0f): error %q", i, truth[i], tr.Error)
		}
		if !bad && !within(tr.Tighter, truth[i]) {
			t.Errorf("value %d: %+v does not contain %.0f", i, tr.Tighter, truth[i])
		}
		if bad && (tr.Tighter != tsc.Bound{} || tr.Paper != nil) {
			t.Errorf("value %d is marked but has bounds: %+v", i, tr)
		}
	}
	if _, failed := rf.TranslateEach("nosuch", []uint64{1}); failed != 1 {
		t.Error("a node without probes was translated")
	}
}
