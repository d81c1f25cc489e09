package probing

import (
	"testing"
)

// TestPointsOneRule: the reference and a node on its machine translate
// exactly; another machine's node by the narrower of its two bounds, which
// holds the truth; a node the relation does not know is refused.
func TestPointsOneRule(t *testing.T) {
	clocks := map[string]simClock{"a": {1, 0}, "b": {0.75 * (1 + 250e-6), 1e12}, "c": {1.2 * (1 - 150e-6), 5e11}}
	rf := syntheticFile(t, clocks, "a")
	for i := range rf.Nodes { // c is said to run on a's machine: the rule then takes its ticks as a's
		switch rf.Nodes[i].Name {
		case "a", "c":
			rf.Nodes[i].Info.Machine = "m1"
		case "b":
			rf.Nodes[i].Info.Machine = "m2"
		}
	}
	p := rf.PointsFor([]string{"a", "b", "c", "x"})
	if !p.IsRef[0] || p.IsRef[1] || !p.IsRef[2] || p.IsRef[3] {
		t.Fatalf("IsRef %v, want a and c (a's machine)", p.IsRef)
	}
	for _, i := range []int{0, 2} {
		if b, ok := p.At(i, 12345); !ok || b.Value != 12345 || b.Err != 0 {
			t.Errorf("node %s: %+v %v, want exact", p.Names[i], b, ok)
		}
	}
	truth := 2e9
	b, ok := p.At(1, clocks["b"].at(truth))
	if !ok || b.Value-b.Err > truth+2 || b.Value+b.Err < truth-2 {
		t.Errorf("b at truth %.0f: %+v %v", truth, b, ok)
	}
	if tr, err := rf.Translate("b", clocks["b"].at(truth)); err != nil || b.Err > tr.Tighter.Err {
		t.Errorf("b's bound %v is wider than the tighter relation's %+v (%v)", b.Err, tr.Tighter, err)
	}
	if _, ok := p.At(3, 1); ok {
		t.Error("a node the relation does not know was translated")
	}
	if i, ok := p.Index("b"); !ok || i != 1 {
		t.Errorf("Index(b) = %d %v", i, ok)
	}
}
