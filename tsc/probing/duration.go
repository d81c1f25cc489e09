package probing

import (
	"fmt"
	"math"

	"github.com/cloudprofiler-go/cp/tsc"
)

// Duration is the time from an event on one node to an event on another
// (or the same) node, in reference ticks, by each method.
type Duration struct {
	From    string `json:"from"`
	FromTSC uint64 `json:"from_tsc"`
	To      string `json:"to"`
	ToTSC   uint64 `json:"to_tsc"`
	// Case is the paper's case (§3.3): "reference" (both events on the
	// reference node), "one node" (both on the same other node), "from
	// reference", "to reference", or "across" (two non-reference nodes).
	Case string `json:"case"`
	// Tighter uses the polygon relations (through every path of nodes when
	// there are several): the narrowest strict bound this file gives.
	Tighter     *tsc.Bound `json:"tighter,omitempty"`
	TighterNote string     `json:"tighter_note,omitempty"`
	// Paper is the paper's bound for the case; Baseline its 2e baseline
	// for "across" (§3.3.5).
	Paper     *tsc.Bound `json:"paper,omitempty"`
	PaperNote string     `json:"paper_note,omitempty"`
	Baseline  *tsc.Bound `json:"baseline,omitempty"`
}

// Best is the narrowest bound available (nil if there is none).
func (d Duration) Best() *tsc.Bound {
	best := d.Tighter
	if d.Paper != nil && (best == nil || d.Paper.Err < best.Err) {
		best = d.Paper
	}
	return best
}

// Duration measures from (fromNode, fromTSC) to (toNode, toTSC) in the
// reference node's ticks. Both methods are strict: the true duration lies
// inside every bound returned. A method that cannot bound it (a value
// outside its window, a broken relation) says why in its note.
func (rf *RelationFile) Duration(fromNode string, fromTSC uint64, toNode string, toTSC uint64) (Duration, error) {
	d := Duration{From: fromNode, FromTSC: fromTSC, To: toNode, ToTSC: toTSC}
	for _, n := range []string{fromNode, toNode} {
		if !rf.hasNode(n) {
			return d, fmt.Errorf("node %q is not in the relation file (nodes: %v)", n, rf.nodeNames())
		}
	}
	ref := rf.Reference
	switch {
	case fromNode == ref && toNode == ref:
		d.Case = "reference"
		b := tsc.TrivialDuration(fromTSC, toTSC)
		d.Tighter, d.Paper = &b, &b
		return d, nil
	case fromNode == toNode:
		rf.durationOnOneNode(&d)
		return d, nil
	}
	// Two nodes: translate both ends (the network bound when there is
	// one) and subtract; the errors add.
	from, errFrom := rf.Translate(fromNode, fromTSC)
	to, errTo := rf.Translate(toNode, toTSC)
	switch {
	case errFrom != nil:
		d.TighterNote = fmt.Sprintf("%s: %v", fromNode, errFrom)
	case errTo != nil:
		d.TighterNote = fmt.Sprintf("%s: %v", toNode, errTo)
	default:
		a, b := narrowest(from), narrowest(to)
		d.Tighter = &tsc.Bound{Value: b.Value - a.Value, Err: a.Err + b.Err}
	}
	switch {
	case fromNode == ref:
		d.Case = "from reference"
		d.Paper, d.PaperNote = paperDiff(tsc.Bound{Value: float64(fromTSC)}, to.Paper, to.PaperNote, errTo)
	case toNode == ref:
		d.Case = "to reference"
		if from.Paper != nil {
			d.Paper, d.PaperNote = paperDiff(*from.Paper, &tsc.Bound{Value: float64(toTSC)}, "", errFrom)
		} else {
			d.PaperNote = firstNote(from.PaperNote, errFrom)
		}
	default:
		rf.durationAcross(&d, from, to)
	}
	return d, nil
}

// durationOnOneNode bounds a duration between two values of one
// non-reference node (§3.3, one node).
func (rf *RelationFile) durationOnOneNode(d *Duration) {
	d.Case = "one node"
	nr := rf.relations(d.From, rf.Reference)
	if nr.linErr != nil {
		d.TighterNote = nr.linErr.Error()
	} else if b, err := nr.lin.Duration(d.FromTSC, d.ToTSC); err != nil {
		d.TighterNote = err.Error()
	} else {
		d.Tighter = &b
	}
	if nr.paperErr != nil {
		d.PaperNote = nr.paperErr.Error()
	} else if b, err := tsc.DurationOnOneNode(nr.paper, d.FromTSC, d.ToTSC); err != nil {
		d.PaperNote = err.Error()
	} else {
		d.Paper = &b
	}
}

// durationAcross bounds a duration between two non-reference nodes: the
// tighter method's best of both ends translated and Scenario 3, the
// paper's Scenario 3 (Eq. 8), and its 2e baseline.
func (rf *RelationFile) durationAcross(d *Duration, from, to Translation) {
	d.Case = "across"
	if b, err := rf.tighterAcross(d.From, d.FromTSC, d.To, d.ToTSC); err == nil && (d.Tighter == nil || b.Err < d.Tighter.Err) {
		d.Tighter, d.TighterNote = &b, ""
	}
	// Scenario 3: relate the end to the start's node, then translate the
	// duration on that node to the reference (Eq. 8).
	ab, bc := rf.relations(d.From, rf.Reference), rf.relations(d.To, d.From)
	switch {
	case ab.paperErr != nil:
		d.PaperNote = ab.paperErr.Error()
	case bc.paperErr != nil:
		d.PaperNote = fmt.Sprintf("%s -> %s: %v", d.To, d.From, bc.paperErr)
	default:
		if b, err := tsc.DurationAcrossNonReference(ab.paper, bc.paper, d.FromTSC, d.ToTSC); err != nil {
			d.PaperNote = err.Error()
		} else {
			d.Paper = &b
		}
	}
	if from.Paper != nil && to.Paper != nil {
		d.Baseline = &tsc.Bound{Value: to.Paper.Value - from.Paper.Value, Err: from.Paper.Err + to.Paper.Err}
	}
}

// tighterAcross is Scenario 3 with the polygon relations (tsc.DurationAcross).
func (rf *RelationFile) tighterAcross(fromNode string, fromTSC uint64, toNode string, toTSC uint64) (tsc.Bound, error) {
	ab, bc := rf.relations(fromNode, rf.Reference), rf.relations(toNode, fromNode)
	if ab.linErr != nil {
		return tsc.Bound{}, ab.linErr
	}
	if bc.linErr != nil {
		return tsc.Bound{}, bc.linErr
	}
	return tsc.DurationAcross(ab.lin, bc.lin, fromTSC, toTSC)
}

func narrowest(t Translation) tsc.Bound {
	if t.Network != nil && t.Network.Err < t.Tighter.Err {
		return *t.Network
	}
	return t.Tighter
}

func paperDiff(from tsc.Bound, to *tsc.Bound, note string, err error) (*tsc.Bound, string) {
	if to == nil {
		return nil, firstNote(note, err)
	}
	return &tsc.Bound{Value: to.Value - from.Value, Err: math.Abs(from.Err) + math.Abs(to.Err)}, ""
}

func firstNote(note string, err error) string {
	if err != nil {
		return err.Error()
	}
	return note
}

func (rf *RelationFile) hasNode(name string) bool {
	for _, n := range rf.Nodes {
		if n.Name == name {
			return true
		}
	}
	return false
}

func (rf *RelationFile) nodeNames() []string {
	var out []string
	for _, n := range rf.Nodes {
		out = append(out, n.Name)
	}
	return out
}

// Linear is the polygon relation mapping node's TSC into into's (computed
// once per pair; an error when there are no probes or no line fits).
func (rf *RelationFile) Linear(node, into string) (*tsc.LinearRelation, error) {
	nr := rf.relations(node, into)
	if !nr.probed {
		return nil, fmt.Errorf("no probes between %s and %s", node, into)
	}
	return nr.lin, nr.linErr
}

// Paper is the paper's MinRTT relation of node to the reference.
func (rf *RelationFile) Paper(node string) (*tsc.PaperRelation, error) {
	nr := rf.relations(node, rf.Reference)
	if !nr.probed {
		return nil, fmt.Errorf("no probes between %s and %s", node, rf.Reference)
	}
	return nr.paper, nr.paperErr
}
