package diagnose

import (
	"sort"
)

// DefaultConfirm is how many consecutive STALLED snapshots confirm a
// stall unless told otherwise (two, as the dissertation advises, §2.2.1).
const DefaultConfirm = 2

// Options of an analysis.
type Options struct {
	Confirm    int        // consecutive STALLED snapshots that confirm a stall (default 2)
	Thresholds Thresholds // zero: DefaultThresholds
	// Window, if set, is the [from, to] (Unix ns, reference clock) over
	// which the limiting stage is named (a trial's measured window).
	Window [2]int64
	// Overloaded says the window is known not to have kept up (a failed
	// trial): the question is only which stage, so a stage before a
	// candidate blocked OverloadedBlocked of the window already counts as
	// work waiting for it, and a black box's queue that grew by
	// OverloadedBoxGrowth of what it passed is growth.
	Overloaded bool
}

// OverloadedBlocked is the blocked share that counts as pressure in a
// window known to be overloaded.
const OverloadedBlocked = 0.05

// OverloadedBoxGrowth is a black box's queue growth, as a share of what
// it passed, that counts in a window known to be overloaded: a relay 1%
// slower than the offered rate grows its queue by 1% over the window,
// never by the 5% a window that may have kept up needs (BENCHMARKS.md,
// sixteenth session: a relay forwarding 300 k/s, failing at 303 k/s).
// Over a whole trial the in-flight count's noise is far smaller: the
// processes' snapshots are a few hundred µs apart.
const OverloadedBoxGrowth = 0.01

// Diagnosis is a timeline's analysis (diagnosis.json holds one per trial).
type Diagnosis struct {
	PeriodNs  int64       `json:"period_ns"`
	Confirm   int         `json:"confirm"`
	Aligned   string      `json:"aligned"`
	Modules   []Module    `json:"modules"`
	Edges     [][2]string `json:"edges"`
	Snapshots []Snapshot  `json:"snapshots"`
	// Summary is the dissertation's per-stage summary (Ch. 5): how often
	// each label, and the confirmed stalls' count, mean and longest length.
	Summary []ModuleSummary `json:"summary"`
	// Limiting is the stage that limits throughput over the window
	// ("none": no stage is busy and pressed), with its evidence.
	Limiting string `json:"limiting_stage"`
	Evidence string `json:"evidence,omitempty"`
	// Stalls are the confirmed stalls, in time order.
	Stalls []Stall `json:"stalls"`
	// WindowBusy is each timed stage's busy share over the window (its own
	// work over all its accounted time).
	WindowBusy map[string]float64 `json:"window_busy,omitempty"`
	// BoxRates are the black boxes' service rates over the window, from
	// the periods in which they were backlogged (boxrate.go).
	BoxRates []BoxRate `json:"box_rates,omitempty"`
}

// Snapshot is one period's labels and bottleneck ranks, by module.
type Snapshot struct {
	UnixNs   int64   `json:"t_unix_ns"` // the period's end
	Labels   []Label `json:"labels"`
	Ranks    []int   `json:"ranks"`              // the rule's ranks this period: 1 first, 0 not a candidate
	Limiting string  `json:"limiting,omitempty"` // the limiting stage, when confirmed (ranked first over --confirm periods)
}

// Stall is a confirmed stall of one stage.
type Stall struct {
	Stage string `json:"stage"`
	// FromNs and ToNs bound it: its STALLED snapshots' periods, widened
	// by the stalled shares of the periods on either side (stalls.go).
	FromNs    int64   `json:"from_unix_ns"`
	ToNs      int64   `json:"to_unix_ns"`
	Snapshots int     `json:"snapshots"` // STALLED snapshots in it
	Seconds   float64 `json:"seconds"`   // ToNs - FromNs: its estimated length
}

// ModuleSummary is one stage's labels over the analysis.
type ModuleSummary struct {
	Stage     string         `json:"stage"`
	Labels    map[string]int `json:"labels"`
	Stalls    int            `json:"confirmed_stalls"`
	Transient int            `json:"transient_stalls"` // STALLED runs shorter than the confirmation
	MeanStall float64        `json:"mean_stall_s"`
	MaxStall  float64        `json:"max_stall_s"`
	Limiting  int            `json:"limiting_snapshots"` // confirmed limiting
}

// Analyze labels and ranks every period of t.
func Analyze(t *Timeline, o Options) *Diagnosis {
	if o.Confirm <= 0 {
		o.Confirm = DefaultConfirm
	}
	if o.Thresholds == (Thresholds{}) {
		o.Thresholds = DefaultThresholds
	}
	g := t.Graph
	M, S := g.Len(), t.Snapshots()
	d := &Diagnosis{PeriodNs: t.PeriodNs, Confirm: o.Confirm, Aligned: t.Aligned, Modules: g.Modules, Snapshots: []Snapshot{}, Stalls: []Stall{}}
	for m := range g.Modules {
		for _, c := range g.children[m] {
			d.Edges = append(d.Edges, [2]string{g.Modules[m].Name, g.Modules[c].Name})
		}
	}
	dg := NewDiagnoser(g)
	bn := NewBottlenecks(g, t.Timed, o.Thresholds)
	act := make([]Activity, M)
	var rk Ranking
	labels := make([][]Label, 0, S)
	works := make([][]work, 0, S)
	for s := 0; s < S; s++ {
		out := make([]Label, M)
		if !dg.Step(t.Total[s*M:(s+1)*M], t.Wait[s*M:(s+1)*M], t.Queue[s*M:(s+1)*M], out) {
			continue
		}
		t.activity(s-1, s, act)
		bn.Rank(act, &rk)
		d.Snapshots = append(d.Snapshots, Snapshot{UnixNs: t.UnixNs[s], Labels: out, Ranks: append([]int(nil), rk.Rank...)})
		labels = append(labels, out)
		w := make([]work, M)
		for m, x := range act {
			w[m] = work{busy: -1, items: x.Items}
			if x.Timed {
				w[m].busy = float32(x.Busy)
			}
		}
		works = append(works, w)
	}
	d.confirmLimiting(o.Confirm)
	d.summarise(labels, works, o.Confirm)
	d.Limiting, d.Evidence = "none", ""
	if lo, hi := t.window(o.Window); hi > lo {
		t.activity(lo, hi, act)
		d.WindowBusy = map[string]float64{}
		for m, x := range act {
			if x.Timed {
				d.WindowBusy[g.Modules[m].Name] = x.Busy
			}
		}
		if o.Overloaded {
			th := o.Thresholds
			th.Blocked = min(th.Blocked, OverloadedBlocked)
			th.BoxGrowth = min(th.BoxGrowth, OverloadedBoxGrowth)
			bn = NewBottlenecks(g, t.Timed, th)
		}
		bn.Rank(act, &rk)
		if rk.Limiting >= 0 {
			d.Limiting, d.Evidence = rk.Stage, rk.Evidence
		}
		d.BoxRates = t.boxRates(bn, lo, hi, act)
	}
	return d
}

// window returns the first and last snapshot indexes inside w (the
// whole timeline when w is zero).
func (t *Timeline) window(w [2]int64) (int, int) {
	S := t.Snapshots()
	if w == ([2]int64{}) {
		return 0, S - 1
	}
	lo := sort.Search(S, func(i int) bool { return t.UnixNs[i] >= w[0] })
	hi := sort.Search(S, func(i int) bool { return t.UnixNs[i] > w[1] }) - 1
	return lo, hi
}

// activity fills each module's behaviour between snapshots a and b.
func (t *Timeline) activity(a, b int, act []Activity) {
	M := t.Graph.Len()
	for m := 0; m < M; m++ {
		i, j := a*M+m, b*M+m
		x := &act[m]
		*x = Activity{Timed: t.Timed[m], QueueFrom: t.Queue[i], QueueTo: t.Queue[j], QueueCap: t.QueueCap[m], Items: sub(t.Total[j], t.Total[i])}
		for s := a; s <= b; s++ {
			x.QueueMax = max(x.QueueMax, t.Queue[s*M+m])
		}
		busy := float64(sub(t.Busy[j], t.Busy[i]))
		blocked := float64(sub(t.Blocked[j], t.Blocked[i]))
		idle := float64(sub(t.Idle[j], t.Idle[i]))
		if all := busy + blocked + idle; all > 0 {
			x.Busy, x.Blocked, x.Idle = busy/all, blocked/all, idle/all
		}
	}
}

func sub(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return 0
}

// confirmLimiting names a period's limiting stage only when the same
// stage ranks first in at least confirm consecutive periods, as a stall is
// confirmed: a burst in flight for 100 ms is not a bottleneck.
func (d *Diagnosis) confirmLimiting(confirm int) {
	first := func(s int) int {
		for m, r := range d.Snapshots[s].Ranks {
			if r == 1 {
				return m
			}
		}
		return -1
	}
	for s := 0; s < len(d.Snapshots); {
		m, e := first(s), s+1
		for e < len(d.Snapshots) && first(e) == m {
			e++
		}
		if m >= 0 && e-s >= confirm {
			for i := s; i < e; i++ {
				d.Snapshots[i].Limiting = d.Modules[m].Name
			}
		}
		s = e
	}
}

// summarise fills the per-stage summary and the confirmed stalls. A run
// of STALLED snapshots is a stall when its estimated length, the run and
// the stalled shares of the periods on either side (stalls.go), is at
// least confirm periods; its length and bounds are that estimate's.
func (d *Diagnosis) summarise(labels [][]Label, works [][]work, confirm int) {
	M := len(d.Modules)
	period := float64(d.PeriodNs) / 1e9
	d.Summary = make([]ModuleSummary, M)
	for m := range d.Modules {
		s := &d.Summary[m]
		s.Stage = d.Modules[m].Name
		s.Labels = map[string]int{}
		for _, n := range labelNames {
			s.Labels[n] = 0
		}
	}
	for i, out := range labels {
		for m, l := range out {
			d.Summary[m].Labels[l.String()]++
			if d.Snapshots[i].Limiting == d.Modules[m].Name {
				d.Summary[m].Limiting++
			}
		}
	}
	perItem := make([]float64, M)
	for m := range perItem {
		perItem[m] = perItemCost(works, labels, m)
	}
	for _, r := range StallRuns(labels, M, 1) {
		if d.Modules[r.Module].LagQueue { // nothing of its own confirms it
			continue
		}
		s := &d.Summary[r.Module]
		length, before, after := stallLength(r, works, labels, perItem[r.Module])
		if length < float64(confirm) {
			s.Transient++
			continue
		}
		secs := length * period
		s.Stalls++
		s.MeanStall += secs
		s.MaxStall = max(s.MaxStall, secs)
		d.Stalls = append(d.Stalls, Stall{Stage: d.Modules[r.Module].Name,
			FromNs: d.Snapshots[r.From].UnixNs - d.PeriodNs - int64(before*float64(d.PeriodNs)),
			ToNs:   d.Snapshots[r.To].UnixNs + int64(after*float64(d.PeriodNs)), Snapshots: r.Len(), Seconds: secs})
	}
	for m := range d.Summary {
		if s := &d.Summary[m]; s.Stalls > 0 {
			s.MeanStall /= float64(s.Stalls)
		}
	}
	sort.SliceStable(d.Stalls, func(i, j int) bool { return d.Stalls[i].FromNs < d.Stalls[j].FromNs })
}
