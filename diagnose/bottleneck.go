package diagnose

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cloudprofiler-go/cp/stage"
)

// Activity is a module's behaviour over a window: the shares of its
// accounted time spent busy, blocked by the stage after it, and idle
// (Timed modules only; network and system-under-test stages are black
// boxes), and its queue at the window's ends.
type Activity struct {
	Timed               bool
	Busy, Blocked, Idle float64
	QueueFrom, QueueTo  int64
	QueueMax, QueueCap  int64  // QueueCap 0: unknown
	Items               uint64 // processed in the window
}

// Thresholds of the bottleneck rule.
type Thresholds struct {
	// Saturated: a stage busy this share of the window is at its capacity
	// and limits whatever waits for it (0.95).
	Saturated float64
	Busy      float64 // a limiting stage is busy at least this share of the window (0.8) while work waits for it
	Blocked   float64 // an upstream stage blocked this share is held up (0.2)
	Idle      float64 // a black box limits when the stages after it idle this share (0.5)
	// BoxGrowth: a black box's queue (emitted - received, counted on two
	// hosts) grows when it grew by this share of what it passed (0.05):
	// what is in flight in the transport moves by more than 1% from one
	// period to the next while everything keeps up.
	BoxGrowth float64
}

// DefaultThresholds are the rule's defaults.
var DefaultThresholds = Thresholds{Saturated: 0.95, Busy: 0.8, Blocked: 0.2, Idle: 0.5, BoxGrowth: 0.05}

// Ranking is the bottleneck analysis of one window.
type Ranking struct {
	// Rank per module: 1 for the limiting stage, 2.. for the other
	// candidates by busy share, 0 for a stage that does not limit.
	Rank     []int
	Limiting int // module index, -1: none
	// Stage names what limits: the module Limiting, or the thread it
	// shares with other operators when the thread is full and no one of
	// them is most of it.
	Stage    string
	Evidence string // e.g. "consumer: busy 99%, lane0 blocked 63%, ring 100%"
}

// Bottlenecks ranks a graph's stages (Flink's isCausingBackPressure
// rule): the limiting stage is busy and not blocked while the stage
// before it is blocked or its queue grows. A job's operator that is most
// of a thread its operators share limits when the operator before it is
// blocked most of the time (chained). A root (a sender thread) has
// no stage before it: busy and not blocked is enough, its work being its
// schedule. A black box (the network, a system under test) limits when
// the stages after it idle while its queue grows or the stages before it
// are blocked: nothing else is left to hold the data up.
type Bottlenecks struct {
	g    *Graph
	th   Thresholds
	up   [][]int32 // nearest timed ancestors (through black boxes)
	box  [][]int32 // black-box ancestors on the way to them
	down [][]int32 // nearest timed descendants
	// thread: the operators on each operator's shared thread, in module
	// order (nil: its own thread, or not said)
	thread [][]int32
}

// NewBottlenecks prepares the rule for g; timed says which modules
// account their time.
func NewBottlenecks(g *Graph, timed []bool, th Thresholds) *Bottlenecks {
	b := &Bottlenecks{g: g, th: th, up: make([][]int32, g.Len()), box: make([][]int32, g.Len()), down: make([][]int32, g.Len())}
	for m := range g.Modules {
		b.up[m], b.box[m] = nearest(g.parents, timed, m)
		b.down[m], _ = nearest(g.children, timed, m)
	}
	b.thread = sharedThreads(g, timed)
	return b
}

// sharedThreads groups the timed operators by the thread they say they
// share; an operator alone on its thread has none.
func sharedThreads(g *Graph, timed []bool) [][]int32 {
	on := map[string][]int32{}
	for m, mod := range g.Modules {
		if mod.Thread != "" && timed[m] {
			on[mod.Thread] = append(on[mod.Thread], int32(m))
		}
	}
	out := make([][]int32, g.Len())
	for _, ms := range on {
		if len(ms) > 1 {
			for _, m := range ms {
				out[m] = ms
			}
		}
	}
	return out
}

// nearest walks next from m through untimed modules and returns the
// first timed ones met and the untimed ones passed.
func nearest(next [][]int32, timed []bool, m int) (found, passed []int32) {
	seen := map[int32]bool{int32(m): true}
	queue := append([]int32(nil), next[m]...)
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		if seen[v] {
			continue
		}
		seen[v] = true
		if timed[v] {
			found = append(found, v)
			continue
		}
		passed = append(passed, v)
		queue = append(queue, next[v]...)
	}
	return found, passed
}

// grows says whether a queue grew in earnest over the window: by at
// least 1% of what the stage processed meanwhile (and at least 2): a rate
// 1% above a stage's capacity is growth. A black box's queue must grow by
// the BoxGrowth share.
func (b *Bottlenecks) grows(a *Activity) bool {
	share := 0.01
	if !a.Timed {
		share = b.th.BoxGrowth
	}
	return a.QueueTo-a.QueueFrom >= max(2, int64(share*float64(a.Items))) && a.QueueTo > 0
}

func full(a *Activity) bool { return a.QueueCap > 0 && a.QueueMax >= a.QueueCap }

// Rank applies the rule to one window's activities, into r (reused).
func (b *Bottlenecks) Rank(act []Activity, r *Ranking) {
	n := b.g.Len()
	if cap(r.Rank) < n {
		r.Rank = make([]int, n)
	}
	r.Rank = r.Rank[:n]
	type cand struct {
		m     int
		score float64
	}
	var cands []cand
	for m := 0; m < n; m++ {
		r.Rank[m] = 0
		a := &act[m]
		if on := b.thread[m]; on != nil {
			if int(on[0]) == m { // the thread is judged once, by its first operator
				if busy, ok := b.threadFull(on, act); ok {
					cands = append(cands, cand{b.busiest(on, act), busy})
				}
			}
			continue
		}
		if a.Timed {
			if a.Busy >= b.th.Saturated || (a.Busy >= b.th.Busy && b.pressed(m, act)) || b.chained(m, act) {
				cands = append(cands, cand{m, a.Busy})
			}
			continue
		}
		if b.downIdle(m, act) && (b.grows(a) || b.upBlocked(m, act)) {
			cands = append(cands, cand{m, b.th.Busy})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].score > cands[j].score })
	for i, c := range cands {
		r.Rank[c.m] = i + 1
	}
	r.Limiting, r.Stage, r.Evidence = -1, "", ""
	if len(cands) > 0 {
		m := cands[0].m
		r.Limiting, r.Stage = m, b.g.Modules[m].Name
		if on := b.thread[m]; on != nil {
			r.Stage, r.Evidence = b.threadEvidence(m, on, act)
		} else {
			r.Evidence = b.evidence(m, act)
		}
		for _, c := range cands[1:] {
			if c.score >= b.th.Saturated && cands[0].score-c.score <= tieBusy {
				r.Evidence += fmt.Sprintf("; %s busy %s too: a tie", b.g.Modules[c.m].Name, pct(c.score))
			}
		}
	}
}

// tieBusy: another saturated candidate within this much of the limiting
// stage's busy share is as much the limit (two operators of one
// capacity, one after the other, are both full).
const tieBusy = 0.02

// pressed says whether work waits for m: it is a root, a stage before it
// is blocked, its queue grows or is full, or a black box before it grows.
func (b *Bottlenecks) pressed(m int, act []Activity) bool {
	a := &act[m]
	if len(b.g.parents[m]) == 0 || b.grows(a) || full(a) || b.upBlocked(m, act) {
		return true
	}
	for _, x := range b.box[m] {
		if b.grows(&act[x]) {
			return true
		}
	}
	return false
}

// chainShare is the least busy share of an operator that chained says
// may limit: the larger part of a thread that its operators share.
const chainShare = 0.5

// chained says whether operator m is the larger part of a saturated
// thread: operators a job runs one after another on one thread (an
// engine's input copy: reading, filter, join) share it, so none of them
// is busy 80% when the thread is full, but the operator before them is
// blocked that long. The one of them busy at least half the time limits.
func (b *Bottlenecks) chained(m int, act []Activity) bool {
	if b.g.Modules[m].Kind != stage.Operator || act[m].Busy < chainShare {
		return false
	}
	for _, u := range b.up[m] {
		if b.g.Modules[u].Kind == stage.Operator && act[u].Blocked >= b.th.Busy {
			return true
		}
	}
	return false
}

// upBlocked says whether a timed stage before m is blocked.
func (b *Bottlenecks) upBlocked(m int, act []Activity) bool {
	for _, u := range b.up[m] {
		if act[u].Blocked >= b.th.Blocked {
			return true
		}
	}
	return false
}

// downIdle says whether every timed stage after black box m idles.
func (b *Bottlenecks) downIdle(m int, act []Activity) bool {
	if len(b.down[m]) == 0 {
		return false
	}
	for _, d := range b.down[m] {
		if act[d].Idle < b.th.Idle {
			return false
		}
	}
	return true
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }

// evidence says why m limits: its busy share, the most blocked stage
// before it, and its queue.
func (b *Bottlenecks) evidence(m int, act []Activity) string {
	g, a := b.g, &act[m]
	var parts []string
	if a.Timed {
		parts = append(parts, "busy "+pct(a.Busy))
		for _, x := range b.box[m] { // its input is a system's backlog: a broker's topic
			if g.Modules[x].Kind == stage.SUT && b.grows(&act[x]) {
				parts = append(parts, fmt.Sprintf("its input %s growing %d -> %d", g.Modules[x].Name, act[x].QueueFrom, act[x].QueueTo))
			}
		}
	} else {
		if b.grows(a) {
			parts = append(parts, fmt.Sprintf("queue %d -> %d", a.QueueFrom, a.QueueTo))
		}
		for _, d := range b.down[m] {
			parts = append(parts, g.Modules[d].Name+" idle "+pct(act[d].Idle))
		}
	}
	best := int32(-1)
	for _, u := range b.up[m] {
		if best < 0 || act[u].Blocked > act[best].Blocked {
			best = u
		}
	}
	if best >= 0 && act[best].Blocked >= 0.005 {
		parts = append(parts, g.Modules[best].Name+" blocked "+pct(act[best].Blocked))
	}
	switch {
	case a.QueueCap > 0 && g.Modules[m].Kind == stage.Consumer && b.grows(a):
		parts = append(parts, fmt.Sprintf("ring %s -> %s", pct(float64(a.QueueFrom)/float64(a.QueueCap)), pct(float64(a.QueueTo)/float64(a.QueueCap))))
	case a.QueueCap > 0 && g.Modules[m].Kind == stage.Consumer:
		parts = append(parts, "ring "+pct(float64(a.QueueMax)/float64(a.QueueCap)))
	case a.QueueCap > 0:
		parts = append(parts, fmt.Sprintf("queue %s of %d", pct(float64(a.QueueMax)/float64(a.QueueCap)), a.QueueCap))
	case a.Timed && b.grows(a):
		parts = append(parts, fmt.Sprintf("queue %d -> %d", a.QueueFrom, a.QueueTo))
	}
	return g.Modules[m].Name + ": " + strings.Join(parts, ", ")
}
