package analysis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cloudprofiler-go/cp/rundir"
)

// OperatorPoint is the point of a job's operator (dataflow.PointChannel
// without a copy's suffix: join.1 logs at op.join too).
func OperatorPoint(operator string) string { return PointOf("op." + operator) }

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
// receive to deserialized to consumed. An operator with points that no
// edge reaches gets no pair (a problem says so).
func HopPairs(edges [][2]string, has func(point string) bool) (pairs [][2]string, problems []string) {
	add := func(a, b string) {
		if a != b && has(a) && has(b) && !slices.Contains(pairs, [2]string{a, b}) {
			pairs = append(pairs, [2]string{a, b})
		}
	}
	next := map[string][]string{}
	inbound := map[string]bool{}
	ops := map[string]bool{}
	for _, e := range edges {
		next[e[0]] = append(next[e[0]], e[1])
		inbound[e[1]] = true
		ops[e[0]], ops[e[1]] = true, true
	}
	traced := func(op string) bool { return has(OperatorPoint(op)) }
	// reach lists the operators with points first met from op's outputs.
	reach := func(op string) []string {
		var out []string
		seen := map[string]bool{op: true}
		queue := slices.Clone(next[op])
		for len(queue) > 0 {
			o := queue[0]
			queue = queue[1:]
			if seen[o] {
				continue
			}
			seen[o] = true
			if traced(o) {
				out = append(out, o)
			} else {
				queue = append(queue, next[o]...)
			}
		}
		return out
	}
	firsts, lasts, linked := map[string]bool{}, map[string]bool{}, map[string]bool{}
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	slices.Sort(names)
	for _, op := range names {
		if inbound[op] {
			continue
		}
		if traced(op) {
			firsts[op] = true
		} else {
			for _, o := range reach(op) {
				firsts[o] = true
			}
		}
	}
	for _, op := range names {
		if !traced(op) {
			continue
		}
		r := reach(op)
		if len(r) == 0 {
			lasts[op] = true
		}
		for _, o := range r {
			linked[o] = true
		}
	}
	for _, op := range names {
		if firsts[op] {
			linked[op] = true
			add("emit", OperatorPoint(op))
		}
	}
	for _, op := range names {
		if traced(op) {
			for _, o := range reach(op) {
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
		for _, op := range names {
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
	for _, op := range names {
		if traced(op) && !linked[op] {
			orphans = append(orphans, op)
		}
	}
	if len(orphans) > 0 {
		problems = append(problems, fmt.Sprintf("operators %s log points but no edge from the job's input reaches them: not joined", strings.Join(orphans, ", ")))
	}
	return pairs, problems
}
