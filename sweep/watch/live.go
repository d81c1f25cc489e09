package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/analysis"
	"github.com/cloudprofiler-go/cp/analysis/activity"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/stage"
)

// MaxActivityBytes bounds one activity reply: at most
// protocol.MaxActivityChanges changes of ~45 bytes per stage, for a few
// stages.
const MaxActivityBytes = 64 << 20

// Defaults of the live critical participation.
const (
	DefaultCPWindow  = time.Second
	DefaultCPWindows = 3
	maxShares        = 5 // per window, the largest
	maxThreadRoles   = 64
	maxWaitSamples   = 256 // per agent: far more than the windows shown need
)

// CPWindow is the critical participation of one recent window, built
// from the agents' stage state changes.
type CPWindow struct {
	Start string `json:"start"` // RFC 3339 (the window's fixed boundaries)
	End   string `json:"end"`
	// HasPath is false when every stage waited at some point of the
	// window (no path crosses it: every share is 0).
	HasPath bool `json:"has_path"`
	// Top is per stage and activity, largest first (the first few);
	// ByKind adds the stages up.
	Top    []activity.Share `json:"top"`
	ByKind []activity.Share `json:"by_kind"`
	// Incomplete: state changes of the window were lost (the watch asked
	// too rarely for how fast a stage changed state), so the graph has a
	// hole there.
	Incomplete bool `json:"incomplete"`
}

// liveAgent is one agent's activity stream as far as the watch has read
// it.
type liveAgent struct {
	trial   int
	nowNs   int64 // the agent's clock when it last answered
	running bool  // its trial ran then
	answers bool  // it answered the latest step
	stages  map[string]*liveStage
	// waits are its threads' runqueue counters at each answer, on its
	// clock (the activities'), oldest first.
	waits []waitSample
}

// waitSample is one scrape's runqueue counters (s, by thread role) at the
// agent's time of its activity reply in the same step.
type waitSample struct {
	atNs     int64
	runqueue map[string]float64
}

// liveStage is one stage's recent activities.
type liveStage struct {
	cursor uint64
	tl     *activity.Timeline
	acts   []activity.Activity // ended, oldest first
	holes  [][2]int64          // spans whose changes were lost
	lastNs int64               // the latest change read
}

// fetchActivity reads an agent's changes since the watch's cursors.
func (w *Watcher) fetchActivity(ctx context.Context, addr string, la *liveAgent) (protocol.ActivityReply, error) {
	var since []string
	if la != nil {
		for _, name := range sortedKeys(la.stages) {
			since = append(since, name+":"+strconv.FormatUint(la.stages[name].cursor, 10))
		}
	}
	url := addr + protocol.PathActivity
	if len(since) > 0 && len(since) <= protocol.MaxActivityStages {
		url += "?since=" + strings.Join(since, ",")
	}
	var reply protocol.ActivityReply
	err := w.get(ctx, url, true, MaxActivityBytes, func(body io.Reader) error {
		return json.NewDecoder(body).Decode(&reply)
	})
	return reply, err
}

// maxUnixNs bounds the instants an agent may answer (year 2116): the
// window arithmetic stays far from overflowing.
const maxUnixNs = 1 << 62

// absorb adds an agent's reply to what the watch keeps of it, and drops
// what is older than keepFrom.
func absorb(la *liveAgent, reply protocol.ActivityReply, keepFrom int64) *liveAgent {
	if reply.NowNs <= 0 || reply.NowNs >= maxUnixNs { // not a clock: nothing to place the changes on
		if la != nil {
			la.answers = false
		}
		return la
	}
	if la == nil || la.trial != reply.Trial { // a new trial: new stages, new cursors
		la = &liveAgent{trial: reply.Trial, stages: map[string]*liveStage{}}
	}
	la.nowNs, la.answers, la.running = reply.NowNs, true, reply.Running
	for _, sa := range reply.Stages {
		name := sa.Stage
		if sa.Kind == string(stage.Operator) { // a job's operator, of any name (cpsweep watch --job-agent)
			name = analysis.OperatorPrefix + name
		}
		kinds, ok := activity.StageKinds(name)
		if !ok || len(sa.Changes) > protocol.MaxActivityChanges {
			continue // not a stage with activities (or not an agent's reply)
		}
		st := la.stages[sa.Stage]
		if st == nil {
			if len(la.stages) >= protocol.MaxActivityStages {
				continue
			}
			st = &liveStage{tl: activity.NewTimeline(kinds)}
			la.stages[sa.Stage] = st
		}
		if sa.Lost > 0 && st.cursor > 0 {
			st.tl.Break()
			to := reply.NowNs
			if len(sa.Changes) > 0 {
				to = sa.Changes[0][0]
			}
			st.holes = append(st.holes, [2]int64{st.lastNs, to})
		}
		st.cursor = sa.Next
		for _, c := range sa.Changes {
			if c[0] <= 0 || c[0] > reply.NowNs || c[1] < 0 || c[2] < 0 || c[0] < st.lastNs { // not an agent's change, or back in time
				st.tl.Bad++
				continue
			}
			if a, ok := st.tl.Change(c[0], int(c[1]), uint64(c[2])); ok {
				st.acts = append(st.acts, a)
			}
			st.lastNs = max(st.lastNs, c[0])
		}
		st.trim(keepFrom)
	}
	return la
}

// trim drops the activities and holes that ended before from.
func (st *liveStage) trim(from int64) {
	i := sort.Search(len(st.acts), func(i int) bool { return st.acts[i].EndNs > from })
	if i > 0 {
		st.acts = append(st.acts[:0], st.acts[i:]...)
	}
	h := st.holes[:0]
	for _, x := range st.holes {
		if x[1] > from {
			h = append(h, x)
		}
	}
	st.holes = h
}

// absorbWaits keeps each answering agent's runqueue counters at its
// reply's time, as far back as its activities (w.mu held).
func (w *Watcher) absorbWaits(cur map[string]scrape, replies map[string]protocol.ActivityReply) {
	keep := int64(w.opt.CPWindows+2) * w.opt.CPWindow.Nanoseconds()
	for addr, reply := range replies {
		la, s := w.live[addr], cur[addr]
		if la == nil || !la.answers || s.runqueue == nil {
			continue
		}
		if n := len(la.waits); n > 0 && la.waits[n-1].atNs >= reply.NowNs {
			continue // not later than the last: not placed
		}
		la.waits = append(la.waits, waitSample{atNs: reply.NowNs, runqueue: s.runqueue})
		drop := 0
		for drop < len(la.waits)-2 && (la.waits[drop+1].atNs < reply.NowNs-keep || len(la.waits)-drop > maxWaitSamples) {
			drop++
		}
		la.waits = la.waits[drop:]
	}
}

// threadWaits are the live agents' threads' runqueue series, by worker
// (node/role) as the graph names its workers.
func (w *Watcher) threadWaits() []activity.ThreadWait {
	var out []activity.ThreadWait
	for _, addr := range sortedKeys(w.live) {
		la := w.live[addr]
		roles := map[string]bool{}
		for _, smp := range la.waits {
			for role := range smp.runqueue {
				roles[role] = true
			}
		}
		for _, role := range sortedKeys(roles) {
			tw := activity.ThreadWait{Worker: w.nodeOf(addr) + "/" + role}
			for _, smp := range la.waits {
				if v, ok := smp.runqueue[role]; ok {
					tw.AtNs, tw.WaitS = append(tw.AtNs, smp.atNs), append(tw.WaitS, v)
				}
			}
			if len(tw.AtNs) >= 2 {
				out = append(out, tw)
			}
		}
	}
	return out
}

// criticalParticipation builds the activity graph of the last complete
// windows from what the watch has read, and what the view says of it.
func (w *Watcher) criticalParticipation() ([]CPWindow, string) {
	win := w.opt.CPWindow.Nanoseconds()
	k := int64(w.opt.CPWindows)
	end := int64(0)
	for _, la := range w.live {
		if la.answers && la.running && len(la.stages) > 0 && (end == 0 || la.nowNs < end) {
			end = la.nowNs
		}
	}
	if end == 0 {
		if w.activityErrors > 0 && len(w.live) == 0 {
			return nil, "not available: no agent's state changes could be read (see the errors)"
		}
		return nil, "no trial running: the agents publish their stages' state changes while a trial runs"
	}
	last := end / win * win
	first := last - k*win
	for _, la := range w.live { // a trial that began since: its first whole window
		for _, st := range la.stages {
			if len(st.acts) > 0 && st.acts[0].StartNs > first {
				first = min(last, (st.acts[0].StartNs+win-1)/win*win)
			}
		}
	}
	if first >= last {
		return nil, fmt.Sprintf("no whole window of %v yet since the trial began", w.opt.CPWindow)
	}
	tr, holes := w.liveTrace(first, last)
	b, err := activity.NewBuilder(tr, activity.Options{WindowNs: win, WaitNs: w.opt.WaitNs})
	if err != nil {
		return nil, fmt.Sprintf("not built: %v", err)
	}
	rep := &activity.Report{}
	var g activity.Window
	for b.Next(&g) {
		if g.StartNs%win != 0 || g.EndNs-g.StartNs != win {
			continue // not a whole window yet (a trial that just began)
		}
		rep.Windows = append(rep.Windows, activity.Summarize(tr, &g))
	}
	// As offline (docs/activity.md): a thread's time runnable but not
	// running is the host's, measured between two scrapes.
	rep.ApportionCPUWait(w.threadWaits(), 0) // sampled at the scrapes, not a fixed period
	var out []CPWindow
	for _, r := range rep.Windows {
		cw := CPWindow{Start: time.Unix(0, r.From).UTC().Format(time.RFC3339Nano), End: time.Unix(0, r.To).UTC().Format(time.RFC3339Nano),
			HasPath: r.HasPath, Top: r.CP[:min(len(r.CP), maxShares)], ByKind: r.CPByKind}
		if cw.Top == nil {
			cw.Top = []activity.Share{}
		}
		if cw.ByKind == nil {
			cw.ByKind = []activity.Share{}
		}
		for _, h := range holes {
			if h[0] < r.To && h[1] > r.From {
				cw.Incomplete = true
			}
		}
		out = append(out, cw)
	}
	note := fmt.Sprintf("live, over windows of %v from the agents' stage state changes; local edges only (the per-tuple points that make message edges are not streamed: cpsweep analyze --pag on a profiled run has them)", w.opt.CPWindow)
	if c := rep.CPUWait; c != nil && c.Windows > 0 {
		note += "; cpu-wait: a thread runnable but not running, from its runqueue counter between two scrapes"
	}
	if len(out) == 0 {
		note = fmt.Sprintf("no whole window of %v yet; ", w.opt.CPWindow) + note
	}
	return out, note
}

// liveTrace is the answering agents' running stages' activities within
// [first, last), and the spans whose changes were lost.
func (w *Watcher) liveTrace(first, last int64) (*activity.Trace, [][2]int64) {
	tr := &activity.Trace{}
	var holes [][2]int64
	for _, addr := range sortedKeys(w.live) {
		la := w.live[addr]
		if !la.answers || !la.running {
			continue
		}
		for _, name := range sortedKeys(la.stages) {
			st := la.stages[name]
			acts := make([]activity.Activity, 0, len(st.acts)+1)
			acts = append(acts, st.acts...)
			if a, ok := st.tl.Open(la.nowNs); ok { // still in it when the agent answered
				acts = append(acts, a)
			}
			tr.Workers = append(tr.Workers, w.nodeOf(addr)+"/"+name)
			tr.Activities = append(tr.Activities, clip(acts, first, last))
			holes = append(holes, st.holes...)
		}
	}
	return tr, holes
}

// clip keeps the parts of acts inside [from, to).
func clip(acts []activity.Activity, from, to int64) []activity.Activity {
	out := acts[:0]
	for _, a := range acts {
		if a.EndNs <= from || a.StartNs >= to || a.EndNs <= a.StartNs {
			continue
		}
		a.StartNs, a.EndNs = max(a.StartNs, from), min(a.EndNs, to)
		out = append(out, a)
	}
	return out
}

// nodeOf is the node name of the agent at addr.
func (w *Watcher) nodeOf(addr string) string {
	for _, a := range w.agents {
		if a.Addr == addr {
			return a.Node
		}
	}
	return addr
}
