package activity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/analysis"
	"github.com/cloudprofiler-go/cp/rundir"
)

// LogPoint is the prefix of the channels the stages log their state
// changes on ("activity.thread0", "activity.lane1", "activity.consumer").
const LogPoint = "activity"

// messagePairs are the message edges a trace takes from the per-tuple
// points (analysis.HopPairs): a bucket leaves a sender thread
// (emit.<thread>) and reaches a lane (receive.<lane>), or passes through a
// job's operators (emit to op.filter, op.filter to op.join, ..., op.window
// to receive), then leaves the lane decoded (deserialized.<lane>) and
// reaches the consumer (consumed). A pair within one worker (receive to
// deserialized) is no message. The standard pairs stay when their points
// have no logs, for the join to say so.
func messagePairs(hops [][2]string) [][2]string {
	var out [][2]string
	toReceive, toConsumer := false, false
	for _, pr := range hops {
		switch {
		case pr[1] == "receive":
			toReceive = true
		case pr == [2]string{"deserialized", "consumed"}:
			toConsumer = true
		case !analysis.IsOperatorPoint(pr[1]):
			continue
		}
		out = append(out, pr)
	}
	if !toReceive {
		out = append(out, [2]string{"emit", "receive"})
	}
	if !toConsumer {
		out = append(out, [2]string{"deserialized", "consumed"})
	}
	return out
}

// Input is a profiled run's activity channels and per-tuple points,
// opened to be streamed through the program activity graph: one worker
// per stage and node ("receiver0/lane0"), its state changes as
// activities, and every bucket between two workers as a transfer with the
// clock relation's error bound. Times are ns of the reference node's
// clock.
type Input struct {
	// Workers are the graph's workers, in a stable order.
	Workers  []string
	index    map[string]int // node/stage -> worker
	pairs    [][2]string    // the message pairs (messagePairs)
	edges    [][2]string    // the jobs' dataflow edges, by operator
	readers  []*activityReader
	run      *analysis.Joins
	problems []string
	// Damaged lists, after Analyze, the problems that are damage (a
	// log that could not be read whole, damaged blocks, state changes out
	// of order, a bound reached): the run directory's policy refuses them
	// without --partial. The others say what the graph leaves out by
	// design.
	Damaged []string
}

// floorSlackNs is how far before the joins' approximate floor the graph
// is held open (and activities kept for the transfers' lookups): the
// approximate clock mapping the joins order by is off by microseconds.
const floorSlackNs = 5_000_000

// Open opens a run directory's activity channels for Analyze. An
// error means there is nothing to build a graph from; the problems then
// say what could not be read (otherwise Analyze reports them).
func Open(d *rundir.Dir, lag time.Duration) (*Input, []string, error) {
	if len(d.Nodes) == 0 {
		return nil, nil, errors.New("no profiles in the run directory (profiles/<node>/): run cpsweep with --profile handlers.yaml")
	}
	run, problems, err := analysis.OpenJoins(d, lag)
	if err != nil {
		return nil, nil, err
	}
	in := &Input{index: map[string]int{}, run: run}
	edges, err := run.JobEdges()
	if err != nil {
		problems = append(problems, fmt.Sprintf("a job's operators: %v; no message edges through them", err))
	}
	in.edges = edges
	hops, probs := analysis.HopPairs(edges, func(p string) bool { return len(run.Logs(p)) > 0 })
	in.pairs = messagePairs(hops)
	problems = append(problems, probs...)
	var logs []analysis.Log
	for _, point := range run.Points() {
		if strings.HasPrefix(point, LogPoint+".") {
			logs = append(logs, run.Logs(point)...)
		}
	}
	sort.SliceStable(logs, func(i, j int) bool {
		if logs[i].Node != logs[j].Node {
			return logs[i].Node < logs[j].Node
		}
		return logs[i].Channel < logs[j].Channel
	})
	for _, src := range logs {
		name := strings.TrimPrefix(src.Channel, LogPoint+".")
		kinds, ok := StageKinds(name)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s on %s: stage %q has no activity kinds; skipped", src.Channel, src.Node, name))
			continue
		}
		worker := src.Node + "/" + name
		w, ok := in.index[worker]
		if !ok { // else a further segment of one channel
			w = len(in.Workers)
			in.index[worker] = w
			in.Workers = append(in.Workers, worker)
			in.readers = append(in.readers, &activityReader{})
		}
		in.readers[w].segments = append(in.readers[w].segments, &segment{src: src, kinds: kinds, run: run})
	}
	if len(in.Workers) == 0 {
		return nil, problems, errors.New("no activity channels in the profiles (activity.<stage>): profile the run with activity logging on every stage (docs/activity.md)")
	}
	in.problems = problems
	return in, nil, nil
}

// Joins is the run whose message pairs Analyze joined: analysis.Analyze
// with Options.Reuse takes their results instead of joining them again.
func (in *Input) Joins() *analysis.Joins { return in.run }

// pairFeed is one message pair's join, running in its own goroutine and
// handing its matches over in batches, each with the floor after it.
type pairFeed struct {
	from, to string
	batches  chan matchBatch
	// free returns handled batches to the join: a batch is thousands of
	// matches, and a new one each time had the pass clearing and faulting
	// in fresh memory for every 4096 tuples.
	free     chan []analysis.Match
	floor    float64 // ns; +Inf once the join is over
	over     bool
	problems []string
	ms       messages
}

type matchBatch struct {
	ms    []analysis.Match
	floor float64
}

// Analyze streams the run through the activity graph and returns its
// analysis (Stream: memory is one window plus the buckets in
// flight, however long the run) and what could not be read. It reads the
// logs once: call it once per Open.
func (in *Input) Analyze(opt Options, k int, l Limits) (*Report, []string, error) {
	if opt.Releases == nil {
		opt.Releases = in.releases()
	}
	s, err := NewStream(in.Workers, opt, k, l)
	if err != nil {
		return nil, nil, err
	}
	problems := in.problems
	feeds, probs := in.startJoins()
	problems = append(problems, probs...)
	for {
		f := lowest(feeds)
		if f == nil {
			break
		}
		b, ok := <-f.batches
		if !ok {
			f.over, f.floor = true, math.Inf(1)
			f.ms.flush(s)
			continue
		}
		for _, m := range b.ms {
			f.ms.add(in, s, m)
		}
		select {
		case f.free <- b.ms[:0]:
		default:
		}
		f.floor = b.floor
		floor := math.Inf(1)
		for _, g := range feeds {
			floor = min(floor, g.floor)
			if g.ms.have {
				floor = min(floor, float64(g.ms.cur.SentNs))
			}
		}
		at := analysis.ClampNs(floor - floorSlackNs)
		s.Floor(at, at)
		in.extendAll(s, at)
	}
	s.Floor(math.MaxInt64, math.MaxInt64)
	in.extendAll(s, math.MaxInt64)
	for w, r := range in.readers {
		s.Finish(w)
		problems = append(problems, r.problems()...)
		in.Damaged = append(in.Damaged, r.problems()...)
	}
	for _, f := range feeds {
		problems = append(problems, f.problems...)
		in.Damaged = append(in.Damaged, f.problems...)
		if f.ms.unknown > 0 {
			problems = append(problems, fmt.Sprintf("%s -> %s: %d tuples between points with no activity channel; not in the graph", f.from, f.to, f.ms.unknown))
		}
		if f.ms.clamped > 0 {
			problems = append(problems, fmt.Sprintf("%s -> %s: %d tuples whose activities overlapped their message: snapped only as far as the message's other end (not ambiguous: the order is known)", f.from, f.to, f.ms.clamped))
		}
		if f.ms.unplaced > 0 {
			problems = append(problems, fmt.Sprintf("%s -> %s: %d tuples whose first point is outside the clock relation's window; not in the graph", f.from, f.to, f.ms.unplaced))
		}
	}
	rep := s.Close()
	if rep.Late > 0 {
		problems = append(problems, fmt.Sprintf("%d buckets came after their window was built (their join ran more than %v late); not in the graph", rep.Late, time.Duration(floorSlackNs)))
	}
	return rep, problems, nil
}

// lowest is the join still running whose floor is the lowest: reading it
// first keeps the joins in step, so that neither piles up matches.
func lowest(feeds []*pairFeed) *pairFeed {
	var best *pairFeed
	for _, f := range feeds {
		if !f.over && (best == nil || f.floor < best.floor) {
			best = f
		}
	}
	return best
}

// startJoins starts a join per message pair whose points were logged.
func (in *Input) startJoins() ([]*pairFeed, []string) {
	var feeds []*pairFeed
	var problems []string
	for _, pr := range in.pairs {
		if skip := in.run.Skip(pr[0], pr[1]); skip != "" {
			problems = append(problems, fmt.Sprintf("%s -> %s: %s: no message edges there", pr[0], pr[1], skip))
			continue
		}
		f := &pairFeed{from: pr[0], to: pr[1], batches: make(chan matchBatch, 4), free: make(chan []analysis.Match, 6), floor: math.Inf(-1)}
		f.ms.progress = pr[1] == "consumed"
		feeds = append(feeds, f)
		go func() {
			var batch []analysis.Match
			visit := func(m analysis.Match) { batch = append(batch, m) }
			mark := func(floor float64) {
				f.batches <- matchBatch{ms: batch, floor: floor}
				select {
				case batch = <-f.free:
				default:
					batch = make([]analysis.Match, 0, cap(batch))
				}
			}
			_, probs := in.run.Join(pr[0], pr[1], visit, mark)
			mark(math.Inf(1))
			f.problems = probs // read after the channel is closed
			close(f.batches)
		}()
	}
	return feeds, problems
}

// extendAll feeds every worker's activities up to t, the worker furthest
// behind first, so that the graph's windows are built as they fill.
func (in *Input) extendAll(s *Stream, t int64) {
	for {
		w, behind := -1, int64(math.MaxInt64)
		for i, r := range in.readers {
			if e := s.LastEnd(i); !r.done && e < t && e < behind {
				w, behind = i, e
			}
		}
		if w < 0 {
			return
		}
		in.extend(s, w, min(t, behind+DefaultWindowNs))
	}
}

// extend feeds worker w's activities until its last one ends at or after
// t (or it has no more).
func (in *Input) extend(s *Stream, w int, t int64) {
	r := in.readers[w]
	for !r.done && s.LastEnd(w) < t {
		a, ok := r.next()
		if !ok {
			break
		}
		if err := s.Activity(w, a); errors.Is(err, ErrHeldLimit) {
			r.overflow, r.done = err.Error(), true // the rest of this worker cannot fit either
			break
		} else if err != nil {
			r.refused++ // not in order after all: never in the graph
		}
	}
}

// messages turns one pair's matched tuples into transfers between
// workers: a tuple leaves at the end of the sending worker's activity
// that holds its first point (the send completes it) and arrives at the
// start of the receiving worker's activity that holds its second (that
// activity processes it). Tuples of one bucket map to the same pair of
// instants and become one transfer.
type messages struct {
	cur      Transfer
	have     bool
	unknown  int // tuples between points of stages with no activity channel
	unplaced int // tuples with no reference time at their first point
	// clamped counts tuples whose snap to the activities holding their
	// points would have put the receive before the send (the activities
	// overlap the message): the snap stops at the other end instead, so
	// that snapping never makes a message ambiguous.
	clamped int
	// progress: the second point is items leaving the pipeline; their
	// instants are the receiving worker's progress.
	progress bool
	lastProg int64
	// points remembers which worker logs each (node, channel) seen: a pair
	// has a handful, and naming the worker per tuple (two strings built
	// and two map lookups each) had cost ~15% of the graph's pass.
	points []pointWorker
}

// pointWorker is a (node, channel) point and the worker that logs it.
type pointWorker struct {
	node, channel string
	worker        int
	ok            bool
}

// workerAt is the worker that logs channel on node (ok false: none).
func (ms *messages) workerAt(in *Input, node, channel string) (int, bool) {
	for _, p := range ms.points {
		if p.node == node && p.channel == channel {
			return p.worker, p.ok
		}
	}
	w, ok := in.index[node+"/"+workerOfPoint(channel)]
	ms.points = append(ms.points, pointWorker{node: node, channel: channel, worker: w, ok: ok})
	return w, ok
}

func (ms *messages) add(in *Input, s *Stream, m analysis.Match) {
	from, okF := ms.workerAt(in, m.FromNode, m.FromChannel)
	to, okT := ms.workerAt(in, m.ToNode, m.ToChannel)
	if !okF || !okT {
		ms.unknown++
		return
	}
	if m.FromNs == 0 {
		ms.unplaced++
		return
	}
	sent := analysis.ClampNs(m.FromNs)
	recv := analysis.ClampNs(m.FromNs + m.LatencyNs)
	if ms.progress && recv != ms.lastProg {
		s.Progress(to, recv)
		ms.lastProg = recv
	}
	// Past the instants: an activity that begins at one may hold it.
	in.extend(s, from, sent+1)
	in.extend(s, to, recv+1)
	// A send completes at the end of the activity holding it, a receive
	// begins at the start of the one holding it; neither snap may cross the
	// message's other end (a receive moved before its send, a send after its
	// receive): only the clocks' error may make a message ambiguous.
	recv0 := recv
	if a, ok := s.Holding(from, sent); ok {
		if sent = a.EndNs; sent > recv0 {
			sent, ms.clamped = recv0, ms.clamped+1
		}
	}
	if a, ok := s.Holding(to, recv); ok {
		if recv = a.StartNs; recv < sent {
			recv, ms.clamped = sent, ms.clamped+1
		}
	}
	x := Transfer{From: from, To: to, SentNs: sent, RecvNs: recv, ErrNs: analysis.ClampNs(math.Ceil(m.ErrorNs)), Tuples: 1,
		Internal: IsOperator(in.Workers[to]) && IsOperator(in.Workers[from])}
	if ms.have && ms.cur.From == x.From && ms.cur.To == x.To && ms.cur.SentNs == x.SentNs && ms.cur.RecvNs == x.RecvNs {
		ms.cur.Tuples++
		ms.cur.ErrNs = max(ms.cur.ErrNs, x.ErrNs)
		return
	}
	ms.flush(s)
	ms.cur, ms.have = x, true
}

func (ms *messages) flush(s *Stream) {
	if ms.have {
		_ = s.Transfer(ms.cur) // the workers are the stream's: it cannot be refused
		ms.have = false
	}
}

// workerOfPoint names the stage that logs a point's channel: emit.N is
// sender thread N, receive.N and deserialized.N are lane N, consumed is
// the consumer.
func workerOfPoint(channel string) string {
	point, n, _ := strings.Cut(channel, ".")
	switch point {
	case "emit":
		return "thread" + n
	case "receive", "deserialized":
		return "lane" + n
	case "consumed":
		return "consumer"
	case strings.TrimSuffix(analysis.OperatorPrefix, "."):
		return channel // an operator's points and its worker share the name
	}
	return ""
}

// File is pag.json: the graph's analysis and what could not be read.
type File struct {
	Run string `json:"run"`
	*Report
	Problems []string `json:"problems,omitempty"`
}

// WriteFiles writes pag.json and pag.csv into dir.
func WriteFiles(dir string, rep *Report, problems []string) error {
	b, err := json.MarshalIndent(File{Run: dir, Report: rep, Problems: problems}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", rundir.PAGFile, err)
	}
	if err := rundir.WriteFile(dir, rundir.PAGFile, append(b, '\n')); err != nil {
		return err
	}
	var csv bytes.Buffer
	if err := rep.WriteCSV(&csv); err != nil {
		return fmt.Errorf("encode %s: %w", rundir.PAGCSVFile, err)
	}
	return rundir.WriteFile(dir, rundir.PAGCSVFile, csv.Bytes())
}

// operatorWorker is the worker of an operator of an edge on node
// (job0/op.join); an operator named with its node (job0/join: a run of
// several jobs) is only node's.
func operatorWorker(node, op string) string {
	if n, name, ok := strings.Cut(op, "/"); ok {
		if n != node {
			return ""
		}
		op = name
	}
	return node + "/" + analysis.OperatorPrefix + op
}

// releases are the pairs of operator workers on one node that a job's
// edge joins, [feeds, fed] (Options.Releases).
func (in *Input) releases() [][2]int {
	var out [][2]int
	for _, e := range in.edges {
		for w, name := range in.Workers {
			node, _, _ := strings.Cut(name, "/")
			if name != operatorWorker(node, e[0]) {
				continue
			}
			if d, ok := in.index[operatorWorker(node, e[1])]; ok {
				out = append(out, [2]int{w, d})
			}
		}
	}
	return out
}
