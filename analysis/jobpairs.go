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
// without a copy's suffix: join.1 logs at op.join too); of an operator
// named with its node (job1/join, a run of several jobs: chainJobs), the
// point of that node only (job1/op.join).
func OperatorPoint(operator string) string {
	if node, op, ok := strings.Cut(operator, "/"); ok {
		return node + "/" + PointOf(OperatorPrefix+op)
	}
	return PointOf(OperatorPrefix + operator)
}

// IsOperatorPoint says whether a point is a job's operator's (op.join,
// job1/op.join).
func IsOperatorPoint(point string) bool {
	if i := strings.IndexByte(point, '/'); i >= 0 {
		point = point[i+1:]
	}
	return strings.HasPrefix(point, OperatorPrefix)
}

// pointKey is the point a channel of a node logs at: PointOf, and for a
// job's operator in a run of several jobs its node's point (job1/op.join):
// two jobs may each have an input, and one tuple passes both.
func pointKey(node, channel string, severalJobs bool) string {
	if severalJobs && strings.HasPrefix(channel, OperatorPrefix) {
		return node + "/" + PointOf(channel)
	}
	return PointOf(channel)
}

// jobFlow is what the analyses read of a job in a trial's outcome: its
// node, dataflow edges and topics.
type jobFlow struct {
	node          string
	edges         [][2]string
	reads, writes []string
}

// profiledJobs are the jobs of the run's profiled trial (outcome.jobs of
// its trial file; none without a job or a profiled trial).
func profiledJobs(d *rundir.Dir) ([]jobFlow, error) {
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
	var jobs []jobFlow
	if f.Outcome != nil {
		for _, j := range f.Outcome.Jobs {
			if j != nil {
				jobs = append(jobs, jobFlow{node: j.Node, edges: j.Edges, reads: j.Reads, writes: j.Writes})
			}
		}
	}
	return jobs, nil
}

// runJobs is what a run's profiled trial says of its jobs, read once per
// analysis: whether there are several (their operators are then named
// with their nodes: job0/filter), and their dataflow edges, [from, to] by
// operator (chainJobs), or why they could not be read.
type runJobs struct {
	several bool
	edges   [][2]string
	err     error
}

// readJobs reads the jobs of d's profiled trial (none without a job or a
// profiled trial).
func readJobs(d *rundir.Dir) runJobs {
	jobs, err := profiledJobs(d)
	if err != nil || len(jobs) == 0 {
		return runJobs{err: err}
	}
	return runJobs{several: len(jobs) > 1, edges: chainJobs(jobs)}
}

// chainJobs are the dataflow edges of a trial's jobs. With several jobs
// the operators are named with their nodes (job0/filter), and a job that
// writes a topic another reads (JobResult.Writes, Reads) feeds it: edges
// from its last operators (none after them) to the other's first.
func chainJobs(jobs []jobFlow) [][2]string {
	if len(jobs) == 1 {
		return jobs[0].edges
	}
	var edges [][2]string
	nodes := make([]string, len(jobs))
	for i, j := range jobs {
		if nodes[i] = j.node; nodes[i] == "" {
			nodes[i] = fmt.Sprintf("job%d", i)
		}
		for _, e := range j.edges {
			edges = append(edges, [2]string{nodes[i] + "/" + e[0], nodes[i] + "/" + e[1]})
		}
	}
	for a, ja := range jobs {
		for b, jb := range jobs {
			if a == b || !slices.ContainsFunc(ja.writes, func(tp string) bool { return slices.Contains(jb.reads, tp) }) {
				continue
			}
			_, lasts := jobEnds(ja.edges)
			firsts, _ := jobEnds(jb.edges)
			for _, from := range lasts {
				for _, to := range firsts {
					edges = append(edges, [2]string{nodes[a] + "/" + from, nodes[b] + "/" + to})
				}
			}
		}
	}
	return edges
}

// jobEnds are a job's operators that no edge leads to, and those no edge
// leaves, sorted.
func jobEnds(edges [][2]string) (firsts, lasts []string) {
	in, out := map[string]bool{}, map[string]bool{}
	for _, e := range edges {
		out[e[0]], in[e[1]] = true, true
	}
	for op := range out {
		if !in[op] {
			firsts = append(firsts, op)
		}
	}
	for op := range in {
		if !out[op] {
			lasts = append(lasts, op)
		}
	}
	slices.Sort(firsts)
	slices.Sort(lasts)
	return firsts, lasts
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
