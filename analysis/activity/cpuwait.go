package activity

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cloudprofiler-go/cp/analysis"
	"github.com/cloudprofiler-go/cp/rundir"
)

// ThreadWait is one worker's thread over the profiled trial: the seconds
// it had waited runnable but not running (schedstat), cumulative, at
// times of the graph (ns, ascending).
type ThreadWait struct {
	Worker string
	AtNs   []int64
	WaitS  []float64
}

// CPUWaitNote says what Report.ApportionCPUWait did, for the reader of
// the shares it changed.
type CPUWaitNote struct {
	// Threads are the workers whose runnable wait was placed on the graph.
	Threads []string `json:"threads"`
	// PeriodNs is how often their host accounting was sampled: the
	// resolution of the apportioning (0: not at a fixed period).
	PeriodNs int64 `json:"period_ns"`
	// Windows is how many windows with a path had a thread's wait
	// apportioned; PathWindows how many have a path.
	Windows     int `json:"windows"`
	PathWindows int `json:"path_windows"`
	// Share is the waiting for CPUs over the critical paths (all workers).
	Share float64 `json:"share"`
}

// minCoverage is how much of a window a thread's samples must span for
// its wait to be apportioned there.
const minCoverage = 0.5

// AddRunnableWait apportions the wait for a CPU of the threads of the run
// directory's profiled trial (RunnableWaits, ApportionCPUWait); the
// problems say what it left out. A run without a profiled trial or host
// accounting keeps its shares as they are.
func (r *Report) AddRunnableWait(d *rundir.Dir, run *analysis.Joins) (problems []string) {
	if d.Summary == nil || run == nil {
		return nil
	}
	t, ok := d.Summary.ProfiledTrial()
	if !ok {
		return nil
	}
	series, err := d.HostSeries(t.N)
	if err != nil {
		return []string{fmt.Sprintf("the profiled trial's host samples: %v; the threads' wait for a CPU is left out", err)}
	}
	if len(series) == 0 {
		return []string{"the profiled trial has no host accounting: the threads' wait for a CPU is left out"}
	}
	waits, periodNs, problems := RunnableWaits(series, run.NodeAt, r.Workers)
	r.ApportionCPUWait(waits, periodNs)
	return problems
}

// RunnableWaits places the host samples of the profiled trial's agents
// on the graph's time: at maps a node's TSC to it (analysis.Joins.NodeAt),
// and each agent's stage series pairs its TSC with the Unix time its
// samples carry. Every worker ("receiver0/lane0") whose thread the
// samples name gets a ThreadWait; problems say which agents could not be
// placed.
func RunnableWaits(series []rundir.AgentSeries, at func(node string, tsc uint64) (int64, bool), workers []string) (waits []ThreadWait, periodNs int64, problems []string) {
	for _, a := range series {
		base, slope, ok := unixToGraph(a, at)
		if !ok {
			why := fmt.Sprintf("%d clock pairs, or pairs that disagree with Unix time", len(a.TSC))
			if len(a.TSC) == 0 {
				why = "no clock pairs: its stage accounting was off (--stage-period 0)"
			}
			problems = append(problems, fmt.Sprintf("%s: its host samples cannot be placed on the graph's time (%s); its threads' wait for a CPU is left out", a.Node, why))
			continue
		}
		periodNs = max(periodNs, a.PeriodNs)
		for _, w := range workers {
			node, role, _ := strings.Cut(w, "/")
			if node != a.Node {
				continue
			}
			tw := ThreadWait{Worker: w}
			for _, s := range a.Samples {
				if t, ok := s.Threads[role]; ok {
					tw.AtNs = append(tw.AtNs, base+int64(slope*float64(s.UnixNs-a.UnixNs[0])))
					tw.WaitS = append(tw.WaitS, t.Runqueue)
				}
			}
			if len(tw.AtNs) >= 2 && sort.SliceIsSorted(tw.AtNs, func(i, j int) bool { return tw.AtNs[i] < tw.AtNs[j] }) {
				waits = append(waits, tw)
			}
		}
	}
	return waits, periodNs, problems
}

// unixToGraph fits graph time = base + slope × (Unix time − the first
// pair's) by least squares over the agent's clock pairs (offsets from the
// first pair, so that float64 keeps nanoseconds).
func unixToGraph(a rundir.AgentSeries, at func(string, uint64) (int64, bool)) (base int64, slope float64, ok bool) {
	var xs, ys []float64
	var y0 int64
	for i, tsc := range a.TSC {
		g, ok := at(a.Node, tsc)
		if !ok {
			continue
		}
		if len(ys) == 0 {
			y0 = g - (a.UnixNs[i] - a.UnixNs[0])
		}
		xs = append(xs, float64(a.UnixNs[i]-a.UnixNs[0]))
		ys = append(ys, float64(g-y0))
	}
	n := float64(len(xs))
	if n < 2 {
		return 0, 0, false
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i] / n
		my += ys[i] / n
	}
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return 0, 0, false
	}
	slope = sxy / sxx
	// A clock pair that disagrees with Unix time by more than a few per
	// cent is not this agent's clock: refuse rather than misplace.
	if slope < 0.9 || slope > 1.1 {
		return 0, 0, false
	}
	return y0 + int64(my-slope*mx), slope, true
}

// share is the thread's runnable wait over [from, to): the share of the
// time its samples span there (ok false: they span less than
// minCoverage of it).
func (tw *ThreadWait) share(from, to int64) (float64, bool) {
	lo, hi := max(from, tw.AtNs[0]), min(to, tw.AtNs[len(tw.AtNs)-1])
	if hi <= lo || float64(hi-lo) < minCoverage*float64(to-from) {
		return 0, false
	}
	f := (tw.waitAt(hi) - tw.waitAt(lo)) / (float64(hi-lo) / 1e9)
	return min(max(f, 0), 1), true
}

// waitAt is the cumulative wait at t (within the samples), linear
// between two samples.
func (tw *ThreadWait) waitAt(t int64) float64 {
	i := sort.Search(len(tw.AtNs), func(i int) bool { return tw.AtNs[i] >= t })
	if i == 0 {
		return tw.WaitS[0]
	}
	if i == len(tw.AtNs) {
		return tw.WaitS[i-1]
	}
	t0, t1 := tw.AtNs[i-1], tw.AtNs[i]
	if t1 == t0 {
		return tw.WaitS[i]
	}
	return tw.WaitS[i-1] + (tw.WaitS[i]-tw.WaitS[i-1])*float64(t-t0)/float64(t1-t0)
}

// ApportionCPUWait moves, in every window with a path, the share of each
// worker's time on the critical paths that its thread spent runnable but
// not running to that worker's cpu-wait: a thread's runnable wait there
// is the thread's share of the window (sampled every periodNs), taken as
// spread evenly over what it did in the window. The graph has no other
// view of a CPU a thread did not get: a paced sender held off its CPU
// past its slot is late on the schedule's path, not waiting for the
// schedule. Messages in flight are not the sender's thread's time and
// keep their share. It then sums the windows again into CP, CPByKind and
// the system's shares. Calling it again does nothing.
func (r *Report) ApportionCPUWait(waits []ThreadWait, periodNs int64) {
	if r.CPUWait != nil || len(waits) == 0 {
		return
	}
	by := map[string]*ThreadWait{}
	note := &CPUWaitNote{PeriodNs: periodNs}
	for i := range waits {
		by[waits[i].Worker] = &waits[i]
		note.Threads = append(note.Threads, waits[i].Worker)
	}
	sort.Strings(note.Threads)
	for i := range r.Windows {
		if win := &r.Windows[i]; win.HasPath {
			note.PathWindows++
			if apportionWindow(win, by) {
				note.Windows++
			}
		}
	}
	r.CPUWait = note
	r.sumWindows()
	for _, s := range r.CPByKind {
		if s.Kind == CPUWait.String() {
			note.Share = s.Value
		}
	}
}

// apportionWindow moves one window's shares (ApportionCPUWait); it says
// whether it moved any.
func apportionWindow(win *Result, by map[string]*ThreadWait) bool {
	wait := map[string]float64{}
	for j := range win.CP {
		s := &win.CP[j]
		tw := by[s.Worker]
		if tw == nil || s.Kind == Message.String() || s.Kind == CPUWait.String() {
			continue
		}
		if f, ok := tw.share(win.From, win.To); ok && f > 0 {
			wait[s.Worker] += s.Value * f
			s.Value *= 1 - f
		}
	}
	if len(wait) == 0 {
		return false
	}
	for w, v := range wait {
		win.CP = append(win.CP, Share{Worker: w, Kind: CPUWait.String(), Value: v})
	}
	kinds := map[string]float64{}
	for _, s := range win.CP {
		kinds[s.Kind] += s.Value
	}
	win.CPByKind = win.CPByKind[:0]
	for k, v := range kinds {
		win.CPByKind = append(win.CPByKind, Share{Kind: k, Value: v})
	}
	sortShares(win.CP)
	sortShares(win.CPByKind)
	return true
}
