package analysis

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/internal/histo"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/rundir"
)

// FormatVersion of the analysis output.
const FormatVersion = 1

// Pipeline is the order of dgsend/dgrecv's standard points.
var Pipeline = []string{"emit", "receive", "deserialized", "consumed"}

// DefaultLag bounds the latency (plus error) the join expects: memory is
// the tuples of one lag's worth of the first point.
const DefaultLag = 200 * time.Millisecond

// Options of an analysis.
type Options struct {
	// Pairs to join, as [from, to] points; empty: every consecutive pair of
	// the standard points present, and the first to the last (end to end).
	Pairs [][2]string
	// Lag is how far (in the reference's time) the second point of a pair
	// may be read ahead of the first before a tuple counts as missing at
	// the first: more than the largest latency plus error expected.
	Lag time.Duration
	// Visit, if set, sees every matched tuple (custom analyses, tests).
	Visit func(Match)
	// RelateSameMachine bounds the latency between two nodes on one
	// machine through the TSC relation, as if each were a machine of its
	// own, instead of reading their one clock: a check of the relation's
	// bounds where the truth is known (network namespaces, containers);
	// their pairs are then "cross node". Not with Reuse.
	RelateSameMachine bool
	// Reuse, if set, is a Run whose joins (Run.Join, with the same lag)
	// already ran: their results are taken instead of joining those
	// pairs again. Not with Visit (the joins' tuples are gone).
	Reuse *Joins
}

// Match is one tuple seen at both points of a pair: its latency in
// nanoseconds of the reference clock, within ±ErrorNs.
type Match struct {
	From, To               string
	ID                     uint64
	FromNode, ToNode       string
	FromChannel, ToChannel string  // the points' channels (emit.0, receive.1, ...)
	FromNs                 float64 // when it was at From, in ns of the reference clock
	LatencyNs              float64
	ErrorNs                float64
}

// Report is the analysis of a run directory.
type Report struct {
	FormatVersion int          `json:"format_version"`
	Run           string       `json:"run"`
	Reference     string       `json:"reference,omitempty"`
	TSCHz         float64      `json:"tsc_hz"`
	Pairs         []PairResult `json:"pairs"`
	Throughput    []Series     `json:"throughput,omitempty"`
	PointRates    []PointRate  `json:"point_rates,omitempty"`
	ReT           []ReTResult  `json:"return_trip,omitempty"`
	Records       uint64       `json:"records_read"`
	Elapsed       float64      `json:"elapsed_s"`
	RecordsPerSec float64      `json:"records_per_s"`
	// Reused counts the pairs whose join came from the activity graph's
	// pass (Options.Reuse): their records are in Records, their time is
	// not in Elapsed, so RecordsPerSec counts only the pairs joined here.
	Reused        int      `json:"reused_joins,omitempty"`
	ReusedRecords uint64   `json:"reused_records,omitempty"`
	Problems      []string `json:"problems,omitempty"`
	// Damaged lists each missing or damaged file and damaged block once
	// (also in Problems): what was not analysed.
	Damaged []string `json:"damaged,omitempty"`
}

// PairResult is one pair of points.
type PairResult struct {
	From   string  `json:"from"`
	To     string  `json:"to"`
	Groups []Group `json:"groups"` // "same node", "same machine", "cross node"
	// Tuples seen at one point only: dropped, still in flight at the end,
	// or not sampled there (XoY/Downsample keep different tuples).
	OnlyFrom uint64 `json:"only_from"`
	OnlyTo   uint64 `json:"only_to"`
	// Matched tuples without a bound: outside the relation's window, or a
	// relation that broke (the reason is in Problems).
	Unbounded uint64 `json:"unbounded"`
	// Skipped says why the pair was not joined at all.
	Skipped string `json:"skipped,omitempty"`

	rates [2]*binner // records per bin at each point
}

// ThroughputBin is the width of the bins of PointRate.
const ThroughputBin = 100 * time.Millisecond

// PointRate is a point's records per second over time, from its logs (in
// the reference's time, all points on one time axis).
type PointRate struct {
	Point   string    `json:"point"`
	StartS  float64   `json:"start_s"` // the first bin's start, seconds after the earliest record of any point
	BinS    float64   `json:"bin_s"`
	PerSec  []float64 `json:"per_second"`
	Records uint64    `json:"records"`
}

// Group is the latency distribution of one kind of pair, in nanoseconds,
// and the distribution of its error bound's half-width.
type Group struct {
	Name    string        `json:"name"`
	Latency histo.Summary `json:"latency"`
	Error   histo.Summary `json:"error"`
	// BelowZero counts tuples whose latency's midpoint came out negative
	// (a wide bound around a short latency); they count as 0 above.
	BelowZero uint64 `json:"below_zero"`
	// Box holds the quartiles and whiskers (p1, p25, p50, p75, p99) of the
	// latency for box plots, and of the error.
	Box      [5]int64 `json:"box_ns"`
	ErrorBox [5]int64 `json:"error_box_ns"`
}

// Series is a counter channel's throughput over time.
type Series struct {
	Node     string    `json:"node"`
	Channel  string    `json:"channel"`
	PeriodS  float64   `json:"period_s"`
	Started  time.Time `json:"started"`
	PerSec   []float64 `json:"per_second"`
	Total    uint64    `json:"total"`
	MeanRate float64   `json:"mean_rate"`
}

// ReTResult is the return-trip method's view of a ret-start channel: the
// time from a tuple's start to its acknowledgement, on one clock.
type ReTResult struct {
	Node      string        `json:"node"`
	Channel   string        `json:"channel"`
	RoundTrip histo.Summary `json:"round_trip"`
	Unacked   uint64        `json:"unacknowledged"`
}

var indexSuffix = regexp.MustCompile(`\.\d+(\.ack)?$`)

// PointOf is the instrumentation point of a channel: its name without a
// thread or lane index ("emit.3" -> "emit", "emit.3.ack" -> "emit.ack").
func PointOf(channel string) string { return indexSuffix.ReplaceAllString(channel, "$1") }

// source is one log file of a point on a node.
type source struct {
	node, channel, path string
}

// damaged records missing or damaged input, each once (a file read for
// several pairs reports the same damage for each).
func (r *Report) damaged(msgs ...string) {
	for _, m := range msgs {
		if !slices.Contains(r.Damaged, m) {
			r.Damaged = append(r.Damaged, m)
			r.Problems = append(r.Problems, m)
		}
	}
}

// Analyze reads the run directory's profiles and relation.
func Analyze(d *rundir.Dir, o Options) (*Report, error) {
	started := time.Now()
	rep := &Report{FormatVersion: FormatVersion, Run: d.Path}
	rep.damaged(d.Problems...)
	if len(d.Nodes) == 0 {
		if d.Summary != nil && d.Summary.ProfileSkipped != "" {
			return rep, fmt.Errorf("no profiles in the run directory: the sweep's profiled trial was skipped (%s)", d.Summary.ProfileSkipped)
		}
		return rep, errors.New("no profiles in the run directory (profiles/<node>/): run cpsweep with --profile handlers.yaml")
	}
	if o.Lag <= 0 {
		o.Lag = DefaultLag
	}
	jobs := readJobs(d)
	points, nodes := sourcesOf(d, jobs.several)
	tr, err := newTranslator(d, nodes, o.RelateSameMachine)
	if err != nil {
		return rep, err
	}
	rep.Reference, rep.TSCHz = tr.reference, tr.hz
	rep.Problems = append(rep.Problems, tr.problems...)
	pairs := o.Pairs
	if len(pairs) == 0 {
		var probs []string
		pairs, probs = defaultPairs(jobs, points)
		rep.Problems = append(rep.Problems, probs...)
	}
	if len(pairs) == 0 {
		rep.Problems = append(rep.Problems, "fewer than two instrumentation points have logs: nothing to join")
	}
	for _, pr := range pairs {
		rep.joinPair(pr, points[pr[0]], points[pr[1]], tr, o)
	}
	rep.PointRates = pointRates(rep.Pairs)
	for point, srcs := range points {
		if !strings.HasSuffix(point, ".ack") {
			continue
		}
		rep.ReT = append(rep.ReT, returnTrips(point, srcs, points[strings.TrimSuffix(point, ".ack")], tr)...)
	}
	for _, node := range nodes {
		if cl := d.Nodes[node].Counters; cl != nil {
			rep.Throughput = append(rep.Throughput, seriesOf(node, cl)...)
		}
	}
	rep.Elapsed = time.Since(started).Seconds()
	if rep.Elapsed > 0 {
		rep.RecordsPerSec = float64(rep.Records-rep.ReusedRecords) / rep.Elapsed
	}
	return rep, nil
}

// sourcesOf lists every log of the run by point, and the nodes, sorted.
func sourcesOf(d *rundir.Dir, several bool) (map[string][]source, []string) {
	points := map[string][]source{}
	var nodes []string
	for node, nf := range d.Nodes {
		nodes = append(nodes, node)
		for ch, paths := range nf.Logs {
			key := pointKey(node, ch, several)
			for _, p := range paths {
				points[key] = append(points[key], source{node: node, channel: ch, path: p})
			}
		}
	}
	sort.Strings(nodes)
	return points, nodes
}

// defaultPairs joins the points a tuple passes from stage to stage
// (HopPairs: through a job's operators when they log points), and the
// first of the Pipeline's points that have logs with the last (end to
// end) when there are more than two.
func defaultPairs(jobs runJobs, points map[string][]source) ([][2]string, []string) {
	has := func(p string) bool { return len(points[p]) > 0 }
	edges, problems := jobEdgesOf(jobs, points)
	pairs, probs := HopPairs(edges, has)
	problems = append(problems, probs...)
	var present []string
	for _, p := range Pipeline {
		if has(p) {
			present = append(present, p)
		}
	}
	if len(pairs) > 1 && len(present) >= 2 {
		pairs = append(pairs, [2]string{present[0], present[len(present)-1]})
	}
	return pairs, problems
}

// jobEdgesOf are the jobs' edges, with a problem when they could not be
// read, or when the run has operators' points but no edges to join them by.
func jobEdgesOf(jobs runJobs, points map[string][]source) ([][2]string, []string) {
	if jobs.err != nil {
		return nil, []string{fmt.Sprintf("a job's operators: %v; their points are not joined", jobs.err)}
	}
	edges := jobs.edges
	if len(edges) == 0 {
		for p := range points {
			if IsOperatorPoint(p) {
				return nil, []string{"the run has a job's operators' points (op.*) but not the job's edges (outcome.jobs of the profiled trial): they are not joined"}
			}
		}
	}
	return edges, nil
}

// joinPair joins one pair of points into the report, or says why not.
func (rep *Report) joinPair(pr [2]string, from, to []source, tr *translator, o Options) {
	if len(from) == 0 || len(to) == 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s -> %s: no logs of %s", pr[0], pr[1], missingOf(pr, from)))
		return
	}
	if tr.rf == nil && spansNodes(from, to) {
		why := "its points are on different nodes and there is no relation.json (run cpsweep with --clock)"
		rep.Pairs = append(rep.Pairs, PairResult{From: pr[0], To: pr[1], Skipped: why})
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s -> %s not joined: %s", pr[0], pr[1], why))
		return
	}
	var res PairResult
	var n uint64
	var probs []string
	if j, ok := o.reused(pr); ok {
		res, n, probs = j.res, j.n, j.problems
		rep.Reused++
		rep.ReusedRecords += n
	} else {
		res, n, probs = join(pr[0], pr[1], from, to, tr, float64(o.Lag.Nanoseconds()), o.Visit, nil)
	}
	if res.OnlyTo > 0 && res.OnlyFrom > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s -> %s: %d tuples seen only at %s and %d only at %s: lost or unsampled, or a latency above the join's lag of %v (raise --lag)",
			pr[0], pr[1], res.OnlyFrom, pr[0], res.OnlyTo, pr[1], o.Lag))
	}
	rep.Pairs = append(rep.Pairs, res)
	rep.Records += n
	rep.damaged(probs...)
}

// reused is the pair's join from o.Reuse, when that ran it with the same
// lag and nothing needs to visit its tuples.
func (o Options) reused(pr [2]string) (joinedPair, bool) {
	if o.Reuse == nil || o.Visit != nil || o.RelateSameMachine || o.Reuse.lag != float64(o.Lag.Nanoseconds()) {
		return joinedPair{}, false
	}
	return o.Reuse.joinedResult(pr)
}

// pointRates takes each point's rate from the first pair it appears in.
func pointRates(pairs []PairResult) []PointRate {
	seen := map[string]*binner{}
	var order []string
	for _, p := range pairs {
		for k, point := range []string{p.From, p.To} {
			if b := p.rates[k]; b != nil && b.counts != nil && seen[point] == nil {
				seen[point] = b
				order = append(order, point)
			}
		}
	}
	if len(order) == 0 {
		return nil
	}
	origin := int64(math.MaxInt64)
	for _, b := range seen {
		origin = min(origin, b.origin)
	}
	var out []PointRate
	bin := ThroughputBin.Seconds()
	for _, point := range order {
		b := seen[point]
		r := PointRate{Point: point, StartS: float64(b.origin-origin) * bin, BinS: bin}
		for _, c := range b.counts {
			r.PerSec = append(r.PerSec, float64(c)/bin)
			r.Records += c
		}
		out = append(out, r)
	}
	return out
}

func spansNodes(a, b []source) bool {
	for _, s := range append(append([]source(nil), a...), b...) {
		if s.node != a[0].node {
			return true
		}
	}
	return false
}

func missingOf(pr [2]string, from []source) string {
	if len(from) == 0 {
		return pr[0]
	}
	return pr[1]
}

func seriesOf(node string, cl *profiler.CounterLog) []Series {
	var out []Series
	names := make([]string, 0, len(cl.Channels))
	for name := range cl.Channels {
		names = append(names, name)
	}
	sort.Strings(names)
	period := time.Duration(cl.PeriodNs).Seconds()
	for _, name := range names {
		s := Series{Node: node, Channel: name, PeriodS: period, Started: cl.Started}
		for _, c := range cl.Channels[name] {
			s.PerSec = append(s.PerSec, float64(c)/period)
			s.Total += c
		}
		if n := len(s.PerSec); n > 0 {
			s.MeanRate = float64(s.Total) / (float64(n) * period)
		}
		out = append(out, s)
	}
	return out
}
