package analysis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cloudprofiler-go/cp/rundir"
)

// OperatorPrefix begins the point of a job's operator (op.join: its
// channel, dataflow.PointChannel) and its worker's name in the activity
// graph after the node's (job0/op.join).
const OperatorPrefix = "op."

// OperatorPoint is the point of a job's operator (dataflow.PointChannel
// without a copy's suffix: join.1 logs at op.join too).
func OperatorPoint(operator string) string { return PointOf(OperatorPrefix + operator) }

// JobEdges are the dataflow edges, [from, to] by operator, of the jobs in
// the run's profiled trial (outcome.jobs of its trial file; none without
// a job or a profiled trial).
func JobEdges(d *rundir.Dir) ([][2]string, error) {
	if d.Summary == nil {
		return nil, nil
	}
	t, ok := d.Summary.ProfiledTrial()
	if !ok {
		return nil, nil
	}
	f, err := d.Trial(t.N)
	if err != nil {
		return nil, fmt.Errorf("the profiled trial's file: %w", err)
	}
	var edges [][2]string
	if f.Outcome != nil {
		for _, j := range f.Outcome.Jobs {
			if j != nil {
				edges = append(edges, j.Edges...)
			}
		}
	}
	return edges, nil
}

// HopPairs are the points a tuple passes from stage to stage, as pairs
// in the order it passes them, of the points that have logs (has): a
// sender's emit to a receiver's receive, or, through a job whose
// operators log points, emit to the first operators with points, on
// along the dataflow's edges (skipping operators without points, such as
// an input that only reads), and from the last ones to receive; then
// receive to deserialized to consumed (a point without logs skipped). An
// operator with points that no edge reaches gets no pair (a problem says
// so).
func HopPairs(edges [][2]string, has func(point string) bool) (pairs [][2]string, problems []string) {
	add := func(a, b string) {
		if a != b && has(a) && has(b) && !slices.Contains(pairs, [2]string{a, b}) {
			pairs = append(pairs, [2]string{a, b})
		}
	}
	g := newFlow(edges, has)
	firsts, lasts, linked := g.ends()
	for _, op := range g.names {
		if firsts[op] {
			add("emit", OperatorPoint(op))
		}
	}
	for _, op := range g.order() { // pairs in the order tuples pass them
		if g.traced(op) {
			for _, o := range g.reach(op) {
				add(OperatorPoint(op), OperatorPoint(o))
			}
		}
	}
	// the receivers' points present, in order: the job's last operators
	// (or emit, without a job) hand over to the first of them
	var tail []string
	for _, p := range Pipeline[1:] {
		if has(p) {
			tail = append(tail, p)
		}
	}
	if len(tail) > 0 {
		for _, op := range g.names {
			if lasts[op] && linked[op] {
				add(OperatorPoint(op), tail[0])
			}
		}
		if len(pairs) == 0 {
			add("emit", tail[0])
		}
	}
	for i := 1; i < len(tail); i++ {
		add(tail[i-1], tail[i])
	}
	var orphans []string
	for _, op := range g.names {
		if g.traced(op) && !linked[op] {
			orphans = append(orphans, op)
		}
	}
	if len(orphans) > 0 {
		problems = append(problems, fmt.Sprintf("operators %s log points but no edge from the job's input reaches them: not joined", strings.Join(orphans, ", ")))
	}
	return pairs, problems
}

// flow is a job's dataflow, by operator, and which operators log points.
type flow struct {
	names   []string // sorted
	next    map[string][]string
	inbound map[string]bool
	has     func(point string) bool
}

func newFlow(edges [][2]string, has func(point string) bool) *flow {
	g := &flow{next: map[string][]string{}, inbound: map[string]bool{}, has: has}
	ops := map[string]bool{}
	for _, e := range edges {
		g.next[e[0]] = append(g.next[e[0]], e[1])
		g.inbound[e[1]] = true
		ops[e[0]], ops[e[1]] = true, true
	}
	for op := range ops {
		g.names = append(g.names, op)
	}
	slices.Sort(g.names)
	return g
}

func (g *flow) traced(op string) bool { return g.has(OperatorPoint(op)) }

// reach lists the operators with points first met from op's outputs.
func (g *flow) reach(op string) []string {
	var out []string
	seen := map[string]bool{op: true}
	queue := slices.Clone(g.next[op])
	for len(queue) > 0 {
		o := queue[0]
		queue = queue[1:]
		if seen[o] {
			continue
		}
		seen[o] = true
		if g.traced(o) {
			out = append(out, o)
		} else {
			queue = append(queue, g.next[o]...)
		}
	}
	return out
}

// ends are the operators with points that tuples meet first (from the
// job's input) and last (none after them), and those an edge from the
// input reaches (linked).
func (g *flow) ends() (firsts, lasts, linked map[string]bool) {
	firsts, lasts, linked = map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, op := range g.names {
		switch {
		case g.inbound[op]:
		case g.traced(op):
			firsts[op] = true
		default:
			for _, o := range g.reach(op) {
				firsts[o] = true
			}
		}
	}
	for op := range firsts {
		linked[op] = true
	}
	for _, op := range g.names {
		if !g.traced(op) {
			continue
		}
		r := g.reach(op)
		lasts[op] = len(r) == 0
		for _, o := range r {
			linked[o] = true
		}
	}
	return firsts, lasts, linked
}

// order lists the operators depth first from those no edge leads to
// (then any left, in a cycle), each once.
func (g *flow) order() []string {
	var out, queue []string
	seen := map[string]bool{}
	for _, op := range g.names {
		if !g.inbound[op] {
			queue = append(queue, op)
		}
	}
	queue = append(queue, g.names...)
	for len(queue) > 0 {
		op := queue[0]
		queue = queue[1:]
		if seen[op] {
			continue
		}
		seen[op] = true
		out = append(out, op)
		queue = append(slices.Clone(g.next[op]), queue...)
	}
	return out
}
