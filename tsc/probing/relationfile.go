package probing

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"text/tabwriter"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/internal/readfile"
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
	// The node's TSC frequency derived from the two MinRTT probes (§5.2)
	// and the reference's calibrated one, next to the node's own calibration.
	PaperHz      float64 `json:"paper_hz,omitempty"`
	CalibratedHz float64 `json:"calibrated_hz,omitempty"`
	// The tighter method: every probe of both directions.
	AlphaLo      float64   `json:"alpha_lo,omitempty"` // A ticks per node tick
	AlphaHi      float64   `json:"alpha_hi,omitempty"`
	AlphaPPM     float64   `json:"alpha_width_ppm,omitempty"`
	Window       [2]uint64 `json:"window,omitempty"` // node's TSC range covered
	MidHalfWidth float64   `json:"mid_half_width_ticks,omitempty"`
	Status       string    `json:"status"` // "ok" or "no bound: ..."
	// Compare puts the methods side by side (§6.4), in nanoseconds.
	Compare *Comparison `json:"compare,omitempty"`
}

// Comparison is the error bound of one cross-node timestamp by each
// method, in nanoseconds of the reference clock. The return-trip method
// (ReT) is as good as the return leg of its acknowledgement, which the
// probes' round trips bound: its error ranges from the fastest to the
// slowest round trip seen. The system clock's is what the kernel's NTP
// discipline reports (adjtimex maxerror and esterror) on both nodes,
// summed, since a cross-node duration reads two clocks.
type Comparison struct {
	PaperNs float64 `json:"cp_paper_ns"`
	// The MinRTT of the sessions before and after: the paper's e is
	// max(before, after)/2 (0 when a session had no probe).
	MinRTTNs    [2]float64 `json:"cp_min_rtt_ns"`
	TighterNs   float64    `json:"cp_tighter_ns"`
	ReTMinNs    float64    `json:"ret_min_ns"`
	ReTMedianNs float64    `json:"ret_median_ns"`
	ReTMaxNs    float64    `json:"ret_max_ns"`
	NTPMaxNs    float64    `json:"ntp_maxerror_ns"`
	NTPEstNs    float64    `json:"ntp_esterror_ns"`
	NTPSynced   bool       `json:"ntp_synced"` // both nodes' kernels say synchronised
}

// RelationFile is what other tools load: the nodes, the sessions' probes
// (so every relation can be recomputed) and the per-node relations.
type RelationFile struct {
	FormatVersion int            `json:"format_version"`
	Reference     string         `json:"reference"`
	Nodes         []Node         `json:"nodes"`
	Sessions      []*Session     `json:"sessions"`
	Relations     []PairRelation `json:"relations"`

	// cache holds the relations Translate needs, computed once: an analysis
	// translates millions of values.
	cacheMu sync.Mutex
	cache   map[[2]string]*nodeRelations // (node, into)
	netOnce sync.Once
	net     *tsc.Network
	netErr  error
}

type nodeRelations struct {
	lin      *tsc.LinearRelation
	linErr   error
	paper    *tsc.PaperRelation
	paperErr error
	probed   bool
}

// relations relates node's TSC to into's, computed once per pair.
func (rf *RelationFile) relations(node, into string) *nodeRelations {
	rf.cacheMu.Lock()
	defer rf.cacheMu.Unlock()
	key := [2]string{node, into}
	if nr := rf.cache[key]; nr != nil {
		return nr
	}
	if rf.cache == nil {
		rf.cache = map[[2]string]*nodeRelations{}
	}
	first, last, fwd, rev := rf.probesBetween(into, node)
	nr := &nodeRelations{probed: len(fwd) > 0}
	nr.lin, nr.linErr = tsc.NewLinearRelationBoth(fwd, rev)
	nr.paper, nr.paperErr = tsc.NewPaperRelation(first, last)
	rf.cache[key] = nr
	return nr
}

func (rf *RelationFile) networkOnce() (*tsc.Network, error) {
	rf.netOnce.Do(func() { rf.net, rf.netErr = rf.network() })
	return rf.net, rf.netErr
}

// ReadRelationFile loads a relation file and checks its format version.
func ReadRelationFile(path string) (*RelationFile, error) {
	var rf RelationFile
	if err := readJSON(path, "relation file", &rf); err != nil {
		return nil, err
	}
	if rf.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("relation file %s: format %d, this version reads format %d", path, rf.FormatVersion, FormatVersion)
	}
	return &rf, nil
}

// MaxFileBytes bounds a session or relation file read from disk: far
// above what probing writes (a few MB for thousands of probes per pair).
const MaxFileBytes = 256 << 20

// ReadSession reads a session file written by "cpsweep clock probe".
func ReadSession(path string) (*Session, error) {
	var s Session
	if err := readJSON(path, "session file", &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// readJSON reads a bounded regular file at path into v.
func readJSON(path, what string, v any) error {
	b, err := readfile.Limited(path, MaxFileBytes)
	if err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	return nil
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
	return rf.probesBetween(rf.Reference, node)
}

// probesBetween returns the a->b probes of the first and last sessions,
// and of all sessions in both directions.
func (rf *RelationFile) probesBetween(a, b string) (first, last, fwd, rev []tsc.Probe) {
	for i, s := range rf.Sessions {
		for _, p := range s.Pairs {
			switch {
			case p.A == a && p.B == b:
				fwd = append(fwd, p.Probes...)
				if i == 0 {
					first = p.Probes
				}
				if i == len(rf.Sessions)-1 {
					last = p.Probes
				}
			case p.A == b && p.B == a:
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
		for _, n := range rf.Nodes {
			switch n.Name {
			case rf.Reference:
				if n.Info.TSCHz > 0 {
					pr.PaperHz = paper.FrequencyFromProbes(n.Info.TSCHz)
				}
			case node:
				pr.CalibratedHz = n.Info.TSCHz
			}
		}
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
	pr.Compare = rf.compare(node, pr, fwd) // the reference stamped these: its ticks
	return pr
}

// compare converts the bounds to nanoseconds with the reference's
// calibrated frequency; nil when the reference did not report one.
func (rf *RelationFile) compare(node string, pr PairRelation, probes []tsc.Probe) *Comparison {
	var ref, other *Info
	for i := range rf.Nodes {
		switch rf.Nodes[i].Name {
		case rf.Reference:
			ref = &rf.Nodes[i].Info
		case node:
			other = &rf.Nodes[i].Info
		}
	}
	if ref == nil || other == nil || ref.TSCHz <= 0 || len(probes) == 0 {
		return nil
	}
	ns := 1e9 / ref.TSCHz
	rtts := make([]float64, len(probes))
	for i, p := range probes {
		rtts[i] = float64(p.RTT())
	}
	sort.Float64s(rtts)
	return &Comparison{
		PaperNs: pr.PaperErr * ns, TighterNs: pr.MidHalfWidth * ns, MinRTTNs: [2]float64{float64(pr.MinRTT[0]) * ns, float64(pr.MinRTT[1]) * ns},
		ReTMinNs: rtts[0] * ns, ReTMedianNs: rtts[len(rtts)/2] * ns, ReTMaxNs: rtts[len(rtts)-1] * ns,
		NTPMaxNs:  float64(ref.NTPMaxErrorUs+other.NTPMaxErrorUs) * 1e3,
		NTPEstNs:  float64(ref.NTPEstErrorUs+other.NTPEstErrorUs) * 1e3,
		NTPSynced: ref.NTPSynced && other.NTPSynced,
	}
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
	// Error says why this value has no translation (from TranslateEach;
	// the bounds are then empty).
	Error string `json:"error,omitempty"`
}

// TranslateEach translates every value of node; one that cannot be
// translated (outside the probed window, say) is marked with its Error
// and the others are answered. It returns how many were marked.
func (rf *RelationFile) TranslateEach(node string, values []uint64) ([]Translation, int) {
	out := make([]Translation, len(values))
	failed := 0
	for i, v := range values {
		t, err := rf.Translate(node, v)
		if err != nil {
			t = Translation{Node: node, TSC: v, Reference: rf.Reference, Error: err.Error()}
			failed++
		}
		out[i] = t
	}
	return out, failed
}

// Translate maps a TSC value of node into the reference domain.
func (rf *RelationFile) Translate(node string, value uint64) (Translation, error) {
	t := Translation{Node: node, TSC: value, Reference: rf.Reference}
	if node == rf.Reference {
		t.Tighter, t.Paper = tsc.Bound{Value: float64(value)}, &tsc.Bound{Value: float64(value)}
		return t, nil
	}
	nr := rf.relations(node, rf.Reference)
	if !nr.probed {
		return t, fmt.Errorf("no probes between %s and reference %s", node, rf.Reference)
	}
	if nr.linErr != nil {
		return t, nr.linErr
	}
	var err error
	if t.Tighter, err = nr.lin.Translate(value); err != nil {
		return t, err
	}
	if net, err := rf.networkOnce(); err != nil {
		t.NetworkNote = err.Error()
	} else if b, err := net.Tighten(node, value, rf.Reference); err != nil {
		t.NetworkNote = err.Error()
	} else {
		t.Network = &b
	}
	if nr.paperErr != nil {
		t.PaperNote = nr.paperErr.Error()
		return t, nil
	}
	if a, e, err := nr.paper.Translate(value); err == nil {
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

// WriteText prints every method's error bound of one timestamp side by
// side (§6.4): the paper's, the tighter one, the return-trip method's
// round trips and the system clock's.
func (rf *RelationFile) WriteText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "error bound of one timestamp\tCP (paper)\tCP (tighter)\tReT (min / median / max)\tsystem clock (NTP max / est)")
	for _, r := range rf.Relations {
		c := r.Compare
		if c == nil {
			continue
		}
		ntp := fmt.Sprintf("%s / %s", numfmt.Ns(c.NTPMaxNs), numfmt.Ns(c.NTPEstNs))
		if !c.NTPSynced {
			ntp += " (not synchronised)"
		}
		fmt.Fprintf(tw, "%s -> %s\t±%s\t±%s\t%s / %s / %s\t±%s\n", r.Node, r.Reference, numfmt.Ns(c.PaperNs), numfmt.Ns(c.TighterNs),
			numfmt.Ns(c.ReTMinNs), numfmt.Ns(c.ReTMedianNs), numfmt.Ns(c.ReTMaxNs), ntp)
	}
	tw.Flush()
}
