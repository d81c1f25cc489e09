package analysis

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/cloudprofiler-go/cp/rundir"
)

// Joins is a run directory's logs opened for a consumer of the joins (the
// activity graph): its logs by point, its nodes' clocks related to the
// reference node's, and the pairwise join. Times are ns of the reference
// node's clock.
type Joins struct {
	points map[string][]source
	tr     *translator
	lag    float64
	jobs   runJobs

	// joined keeps every finished join's result, so that Analyze with
	// Options.Reuse does not join the same pair again (analyze --pag reads
	// and joins the logs once for both analyses). Joins run concurrently.
	mu     sync.Mutex
	joined map[[2]string]joinedPair
	runs   int // joins run (JoinsRun)
}

// JoinsRun is how many joins this run has performed: the activity graph's
// pass joins each message pair once (it had once run each twice, a check
// of whether it could being a whole join).
func (r *Joins) JoinsRun() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs
}

// joinedPair is a finished join of Run.Join: its result as Analyze
// reports it.
type joinedPair struct {
	res      PairResult
	n        uint64
	problems []string
}

// joinedResult is the pair's finished join, if Join ran it.
func (r *Joins) joinedResult(pr [2]string) (joinedPair, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.joined[pr]
	return j, ok
}

// Log is one log file of a point on a node.
type Log struct {
	Node, Channel, Path string
	// NodeIndex is the node's index for At.
	NodeIndex int
}

// OpenJoins opens d's logs and clock relation. problems lists what the
// relation could not say (read, not fatal); lag is the join's (0:
// DefaultLag).
func OpenJoins(d *rundir.Dir, lag time.Duration) (*Joins, []string, error) {
	jobs := readJobs(d)
	points, nodes := sourcesOf(d, jobs.several)
	tr, err := newTranslator(d, nodes, false)
	if err != nil {
		return nil, nil, err
	}
	if lag <= 0 {
		lag = DefaultLag
	}
	return &Joins{points: points, tr: tr, lag: float64(lag.Nanoseconds()), jobs: jobs}, append([]string(nil), tr.problems...), nil
}

// JobEdges are the dataflow edges, [from, to] by operator, of the jobs in
// the run's profiled trial (none without a job or a profiled trial; with
// several jobs, their operators named with their nodes and chained by
// their topics), or why they could not be read.
func (r *Joins) JobEdges() ([][2]string, error) { return r.jobs.edges, r.jobs.err }

// Points lists the points that have logs, sorted.
func (r *Joins) Points() []string {
	var out []string
	for p := range r.points {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Logs are a point's log files ordered by node, channel and segment, so
// that a channel's segments come in order.
func (r *Joins) Logs(point string) []Log {
	var out []Log
	for _, s := range r.points[point] {
		out = append(out, Log{Node: s.node, Channel: s.channel, Path: s.path, NodeIndex: r.tr.index[s.node]})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].Channel < out[j].Channel
	})
	return out
}

// At is the reference time (ns) of a TSC value of node (Log.NodeIndex);
// false outside the clock relation's probed window.
func (r *Joins) At(node int, tsc uint64) (int64, bool) {
	at, ok := r.tr.point(node, tsc)
	if !ok {
		return 0, false
	}
	return clampNs(r.tr.ns(at.Value)), true
}

// NodeAt is At for a node named as the run directory names it
// ("sender0"); false for a node the run does not know.
func (r *Joins) NodeAt(node string, tsc uint64) (int64, bool) {
	i, ok := r.tr.index[node]
	if !ok {
		return 0, false
	}
	return r.At(i, tsc)
}

// Join streams the matches of the pair from -> to to visit; mark, if set,
// is told now and then the earliest reference time (ns) a match still to
// come can have been at from. skip says why the pair cannot be joined
// (then nothing ran); problems are what the join could not read.
func (r *Joins) Join(from, to string, visit func(Match), mark func(floorNs float64)) (skip string, problems []string) {
	if skip := r.Skip(from, to); skip != "" {
		return skip, nil
	}
	f, t := r.points[from], r.points[to]
	res, n, problems := join(from, to, f, t, r.tr, r.lag, visit, mark)
	r.mu.Lock()
	if r.joined == nil {
		r.joined = map[[2]string]joinedPair{}
	}
	r.joined[[2]string{from, to}] = joinedPair{res: res, n: n, problems: problems}
	r.runs++
	r.mu.Unlock()
	return "", problems
}

// Skip says why the pair from -> to cannot be joined ("": it can), without
// joining it.
func (r *Joins) Skip(from, to string) string {
	f, t := r.points[from], r.points[to]
	if len(f) == 0 || len(t) == 0 {
		return fmt.Sprintf("no logs of %s", missingOf([2]string{from, to}, f))
	}
	if r.tr.rf == nil && spansNodes(f, t) {
		return "on different nodes and no relation.json (run cpsweep with --clock)"
	}
	return ""
}

// ClampNs rounds v (ns) to an int64, saturating.
func ClampNs(v float64) int64 { return clampNs(v) }
