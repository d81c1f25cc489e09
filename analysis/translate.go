package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/tsc/probing"
)

// translator maps (node, TSC) to the reference's ticks with a strict bound.
// Nodes are indices (the hot path does no map lookups).
type translator struct {
	reference string
	hz        float64 // the reference's TSC frequency
	rf        *probing.RelationFile
	names     []string
	index     map[string]int
	// isRef, clock, lin and paper are the one rule of a point's
	// translation (probing.Points), whose slices they are.
	pts      *probing.Points
	isRef    []bool
	clock    []int
	lin      []*tsc.LinearRelation // node -> reference
	paper    []*tsc.PaperRelation
	between  [][]*tsc.LinearRelation // [to][from]: from's ticks into to's (non-reference pairs)
	problems []string
}

// newTranslator prepares the translation of nodes' TSC values. With
// separate, nodes on one machine are bounded through the relation as if
// each were a machine of its own (Options.RelateSameMachine).
func newTranslator(d *rundir.Dir, nodes []string, separate bool) (*translator, error) {
	t := &translator{names: nodes, index: map[string]int{}, isRef: make([]bool, len(nodes)),
		lin: make([]*tsc.LinearRelation, len(nodes)), paper: make([]*tsc.PaperRelation, len(nodes))}
	for i, n := range nodes {
		t.index[n] = i
	}
	if d.Relation == nil {
		if len(nodes) > 1 {
			t.problems = append(t.problems, "no relation.json: cross-node durations cannot be bounded (run cpsweep with --clock)")
		}
		t.reference = nodes[0]
		t.isRef[0] = len(nodes) == 1
		t.hz = hzFromConfig(d)
		if t.hz == 0 {
			return nil, errors.New("no relation.json and no agent TSC frequency in config.json: cannot convert ticks to time")
		}
		return t, nil
	}
	rf := d.Relation
	if separate {
		rf = ownClocks(rf)
	}
	t.rf, t.reference = rf, rf.Reference
	for _, n := range rf.Nodes {
		if n.Name == rf.Reference {
			t.hz = n.Info.TSCHz
		}
	}
	if t.hz <= 0 {
		return nil, fmt.Errorf("relation.json: the reference %s has no TSC frequency", rf.Reference)
	}
	t.pts = rf.PointsFor(nodes)
	t.isRef, t.clock, t.lin, t.paper = t.pts.IsRef, t.pts.Clock, t.pts.Lin, t.pts.Paper
	t.problems = append(t.problems, t.pts.Problems...)
	// Direct relations between non-reference nodes, for Scenario 3.
	t.between = make([][]*tsc.LinearRelation, len(nodes))
	for i, x := range nodes {
		t.between[i] = make([]*tsc.LinearRelation, len(nodes))
		for j, y := range nodes {
			if i != j && !t.isRef[i] && !t.isRef[j] {
				if lin, err := rf.Linear(y, x); err == nil {
					t.between[i][j] = lin
				}
			}
		}
	}
	return t, nil
}

// ownClocks is a relation file whose nodes all read clocks of their own:
// without their machines' boot ids, every node but the reference is
// translated through its relation.
func ownClocks(rf *probing.RelationFile) *probing.RelationFile {
	out := &probing.RelationFile{FormatVersion: rf.FormatVersion, Reference: rf.Reference, Nodes: slices.Clone(rf.Nodes),
		Sessions: rf.Sessions, Relations: rf.Relations}
	for i := range out.Nodes {
		out.Nodes[i].Info.Machine = ""
	}
	return out
}

// sameClock says whether two nodes read one clock (one machine).
func (t *translator) sameClock(n1, n2 int) bool {
	return n1 == n2 || (t.clock != nil && t.clock[n1] == t.clock[n2])
}

func hzFromConfig(d *rundir.Dir) float64 {
	var cfg struct {
		Agents []struct {
			TSCHz float64 `json:"tsc_hz"`
		} `json:"agents"`
	}
	if b := d.Config(); b != nil {
		_ = json.Unmarshal(b, &cfg)
	}
	for _, a := range cfg.Agents {
		if a.TSCHz > 0 {
			return a.TSCHz
		}
	}
	return 0
}

// point translates one node's TSC value into the reference's ticks
// (probing.Points.At; a node's own ticks without a relation). ok is false
// when there is no bound.
func (t *translator) point(node int, v uint64) (tsc.Bound, bool) {
	if t.pts == nil {
		if t.isRef[node] {
			return tsc.Bound{Value: float64(v)}, true
		}
		return tsc.Bound{}, false
	}
	return t.pts.At(node, v)
}

// approxFunc returns a quick mapping of a node's ticks to reference ticks,
// for ordering reads (no bound needed).
func (t *translator) approxFunc(node int) (a0, b0, r float64) {
	if t.isRef[node] || t.rf == nil {
		return 0, 0, 1
	}
	if p := t.paper[node]; p != nil {
		return p.Start.A, float64(p.Start.B), p.R
	}
	if lin := t.lin[node]; lin != nil {
		lo, hi := lin.Alpha()
		w0, _ := lin.Window()
		if at, err := lin.Translate(w0); err == nil {
			return at.Value, float64(w0), (lo + hi) / 2
		}
	}
	return 0, 0, 1
}

// duration bounds the time from (n1, v1) to (n2, v2) in reference ticks,
// choosing the tightest case (§3.3): exact on the reference, the slope
// interval on one other node, and the sum of both ends' bounds across nodes.
func (t *translator) duration(n1 int, v1 uint64, n2 int, v2 uint64) (tsc.Bound, bool) {
	if n1 == n2 {
		if t.isRef[n1] || t.rf == nil { // the reference, or one node's own ticks
			return tsc.TrivialDuration(v1, v2), true
		}
		best, ok := tsc.Bound{}, false
		if lin := t.lin[n1]; lin != nil {
			if b, err := lin.Duration(v1, v2); err == nil {
				best, ok = b, true
			}
		}
		if p := t.paper[n1]; p != nil {
			if b, err := tsc.DurationOnOneNode(p, v1, v2); err == nil && (!ok || b.Err < best.Err) {
				best, ok = b, true
			}
		}
		return best, ok
	}
	if t.rf == nil {
		return tsc.Bound{}, false
	}
	if t.sameClock(n1, n2) { // two agents on one machine: one node's ticks
		return t.duration(n1, v1, n1, v2)
	}
	a, ok1 := t.point(n1, v1)
	b, ok2 := t.point(n2, v2)
	best, ok := tsc.Bound{}, ok1 && ok2
	if ok {
		best = tsc.Bound{Value: b.Value - a.Value, Err: a.Err + b.Err}
	}
	if s3, ok3 := t.scenario3(n1, v1, n2, v2); ok3 && (!ok || s3.Err < best.Err) {
		best, ok = s3, true
	}
	return best, ok
}

// scenario3 is §3.3.4 with the polygon relations (tsc.DurationAcross) for
// two non-reference nodes.
func (t *translator) scenario3(n1 int, v1 uint64, n2 int, v2 uint64) (tsc.Bound, bool) {
	if t.between == nil || t.isRef[n1] || t.isRef[n2] || t.between[n1][n2] == nil || t.lin[n1] == nil {
		return tsc.Bound{}, false
	}
	b, err := tsc.DurationAcross(t.lin[n1], t.between[n1][n2], v1, v2)
	return b, err == nil
}

func (t *translator) ns(ticks float64) float64 { return ticks * 1e9 / t.hz }

func clampNs(v float64) int64 {
	if v > math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return int64(v)
}
