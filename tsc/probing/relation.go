package probing

import (
	"errors"
	"fmt"

	"github.com/cloudprofiler-go/cp/tsc"
)

// FormatVersion of relation files.
const FormatVersion = 1

// PairRelation relates one node's TSC to the reference node's.
type PairRelation struct {
	Node      string    `json:"node"`          // translated from
	Reference string    `json:"reference"`     // translated to
	Probes    int       `json:"probes"`        // both directions, both sessions
	MinRTT    [2]uint64 `json:"min_rtt_ticks"` // before, after (reference probing node)
	// The paper's method: MinRTT probes before and after.
	PaperRatio  float64 `json:"paper_ratio,omitempty"`
	PaperErr    float64 `json:"paper_err_ticks,omitempty"` // e = max(MinRTT)/2
	PaperStatus string  `json:"paper_status"`
	// The tighter method: every probe of both directions.
	AlphaLo      float64   `json:"alpha_lo,omitempty"` // A ticks per node tick
	AlphaHi      float64   `json:"alpha_hi,omitempty"`
	AlphaPPM     float64   `json:"alpha_width_ppm,omitempty"`
	Window       [2]uint64 `json:"window,omitempty"` // node's TSC range covered
	MidHalfWidth float64   `json:"mid_half_width_ticks,omitempty"`
	Status       string    `json:"status"` // "ok" or "no bound: ..."
}

// RelationFile is what other tools load: the nodes, the sessions' probes
// (so every relation can be recomputed) and the per-node relations.
type RelationFile struct {
	FormatVersion int            `json:"format_version"`
	Reference     string         `json:"reference"`
	Nodes         []Node         `json:"nodes"`
	Sessions      []*Session     `json:"sessions"`
	Relations     []PairRelation `json:"relations"`
}

// Relate builds the relation file from sessions taken before and after
// (at least two; the first is "before", the last "after").
func Relate(sessions []*Session, reference string) (*RelationFile, error) {
	if len(sessions) < 2 {
		return nil, errors.New("need probing sessions before and after the experiment (two or more)")
	}
	rf := &RelationFile{FormatVersion: FormatVersion, Reference: reference, Nodes: sessions[0].Nodes, Sessions: sessions}
	found := false
	for _, n := range rf.Nodes {
		found = found || n.Name == reference
	}
	if !found {
		return nil, fmt.Errorf("reference node %q is not among the probed nodes", reference)
	}
	for _, n := range rf.Nodes {
		if n.Name == reference {
			continue
		}
		rf.Relations = append(rf.Relations, rf.relate(n.Name))
	}
	return rf, nil
}

// probes returns the reference->node probes of one session and of all.
func (rf *RelationFile) probes(node string) (first, last, fwd, rev []tsc.Probe) {
	for i, s := range rf.Sessions {
		for _, p := range s.Pairs {
			switch {
			case p.A == rf.Reference && p.B == node:
				fwd = append(fwd, p.Probes...)
				if i == 0 {
					first = p.Probes
				}
				if i == len(rf.Sessions)-1 {
					last = p.Probes
				}
			case p.A == node && p.B == rf.Reference:
				rev = append(rev, p.Probes...)
			}
		}
	}
	return first, last, fwd, rev
}

func (rf *RelationFile) relate(node string) PairRelation {
	pr := PairRelation{Node: node, Reference: rf.Reference}
	first, last, fwd, rev := rf.probes(node)
	pr.Probes = len(fwd) + len(rev)
	if p, ok := tsc.MinRTT(first); ok {
		pr.MinRTT[0] = p.RTT()
	}
	if p, ok := tsc.MinRTT(last); ok {
		pr.MinRTT[1] = p.RTT()
	}
	if paper, err := tsc.NewPaperRelation(first, last); err != nil {
		pr.PaperStatus = "no relation: " + err.Error()
	} else {
		pr.PaperRatio, pr.PaperErr, pr.PaperStatus = paper.R, paper.E, "ok"
	}
	lin, err := tsc.NewLinearRelationBoth(fwd, rev)
	if err != nil {
		pr.Status = "no bound: " + err.Error()
		return pr
	}
	pr.AlphaLo, pr.AlphaHi = lin.Alpha()
	pr.AlphaPPM = (pr.AlphaHi - pr.AlphaLo) / ((pr.AlphaHi + pr.AlphaLo) / 2) * 1e6
	pr.Window[0], pr.Window[1] = lin.Window()
	if b, err := lin.Translate(pr.Window[0]/2 + pr.Window[1]/2); err == nil {
		pr.MidHalfWidth = b.Err
	}
	pr.Status = "ok"
	return pr
}

// Translation is a node's TSC value in the reference domain by both methods.
type Translation struct {
	Node      string     `json:"node"`
	TSC       uint64     `json:"tsc"`
	Reference string     `json:"reference"`
	Tighter   tsc.Bound  `json:"tighter"`
	Paper     *tsc.Bound `json:"paper,omitempty"`
	PaperNote string     `json:"paper_note,omitempty"` // why there is no paper bound
	// Network is the bound through every path of pairwise relations (at
	// least as tight as Tighter); NetworkNote says why there is none.
	Network     *tsc.Bound `json:"network,omitempty"`
	NetworkNote string     `json:"network_note,omitempty"`
}

// Translate maps a TSC value of node into the reference domain.
func (rf *RelationFile) Translate(node string, value uint64) (Translation, error) {
	t := Translation{Node: node, TSC: value, Reference: rf.Reference}
	if node == rf.Reference {
		t.Tighter, t.Paper = tsc.Bound{Value: float64(value)}, &tsc.Bound{Value: float64(value)}
		return t, nil
	}
	first, last, fwd, rev := rf.probes(node)
	if len(fwd) == 0 {
		return t, fmt.Errorf("no probes between %s and reference %s", node, rf.Reference)
	}
	lin, err := tsc.NewLinearRelationBoth(fwd, rev)
	if err != nil {
		return t, err
	}
	if t.Tighter, err = lin.Translate(value); err != nil {
		return t, err
	}
	if net, err := rf.network(); err != nil {
		t.NetworkNote = err.Error()
	} else if b, err := net.Tighten(node, value, rf.Reference); err != nil {
		t.NetworkNote = err.Error()
	} else {
		t.Network = &b
	}
	paper, err := tsc.NewPaperRelation(first, last)
	if err != nil {
		t.PaperNote = err.Error()
		return t, nil
	}
	if a, e, err := paper.Translate(value); err == nil {
		t.Paper = &tsc.Bound{Value: a, Err: e}
	} else {
		t.PaperNote = err.Error() // the paper's window is the MinRTT probes only
	}
	return t, nil
}

// network builds the pairwise relations of every ordered pair of nodes
// (x's ticks into y's domain, from the probes of both directions).
func (rf *RelationFile) network() (*tsc.Network, error) {
	probes := map[[2]string][]tsc.Probe{}
	for _, s := range rf.Sessions {
		for _, p := range s.Pairs {
			k := [2]string{p.A, p.B}
			probes[k] = append(probes[k], p.Probes...)
		}
	}
	net := &tsc.Network{Links: map[string]map[string]*tsc.LinearRelation{}}
	for _, x := range rf.Nodes {
		for _, y := range rf.Nodes {
			if x.Name == y.Name {
				continue
			}
			yx, xy := probes[[2]string{y.Name, x.Name}], probes[[2]string{x.Name, y.Name}]
			if len(yx) == 0 {
				continue
			}
			rel, err := tsc.NewLinearRelationBoth(yx, xy)
			if err != nil {
				return nil, fmt.Errorf("%s -> %s: %w", x.Name, y.Name, err)
			}
			if net.Links[x.Name] == nil {
				net.Links[x.Name] = map[string]*tsc.LinearRelation{}
			}
			net.Links[x.Name][y.Name] = rel
		}
	}
	return net, nil
}
