package diagnose

import (
	"slices"

	"github.com/cloudprofiler-go/cp/stage"
)

// roleJob is a job agent's role (protocol.RoleJob, which this package
// does not import).
const roleJob = "job"

// operators adds the job processes' edges between their operators, and
// between jobs chained by a topic (one's last operators to the next's
// first), and returns the operators that read the system's input (no
// edge into them, in a job no other feeds) and those that write its
// output (no edge out, in a job that feeds none).
func (b *builder) operators() (heads, tails []int) {
	type ends struct {
		p            *Process
		heads, tails []int
		fed, feeds   bool
	}
	var jobs []*ends
	for pi := range b.in.Processes {
		p := &b.in.Processes[pi]
		if p.Role != roleJob {
			continue
		}
		j := &ends{p: p}
		pre := b.prefix(*p)
		in, out := map[int]bool{}, map[int]bool{}
		for _, e := range p.Edges {
			from, ok1 := b.byName[pre+e[0]]
			to, ok2 := b.byName[pre+e[1]]
			if ok1 && ok2 {
				b.edges = append(b.edges, [2]int{from, to})
				out[from], in[to] = true, true
			}
		}
		for _, st := range p.Series.Stages {
			if m, ok := b.byName[pre+st.Name]; ok && st.Kind == stage.Operator {
				if !in[m] {
					j.heads = append(j.heads, m)
				}
				if !out[m] {
					j.tails = append(j.tails, m)
				}
			}
		}
		jobs = append(jobs, j)
	}
	for _, a := range jobs {
		for _, c := range jobs {
			if a == c || !slices.ContainsFunc(a.p.Writes, func(tp string) bool { return slices.Contains(c.p.Reads, tp) }) {
				continue
			}
			a.feeds, c.fed = true, true
			for _, t := range a.tails {
				for _, h := range c.heads {
					b.edges = append(b.edges, [2]int{t, h})
				}
			}
		}
	}
	for _, j := range jobs {
		if !j.fed {
			heads = append(heads, j.heads...)
		}
		if !j.feeds {
			tails = append(tails, j.tails...)
		}
	}
	return heads, tails
}
