package analysis

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/cloudprofiler-go/cp/internal/histo"
	"github.com/cloudprofiler-go/cp/internal/readfile"
	"github.com/cloudprofiler-go/cp/profiler"
)

// cursor reads one log file in a goroutine (decompression runs in
// parallel with the join) and hands its blocks over a channel.
type cursor struct {
	src    source
	node   int
	blocks chan []profiler.Record
	free   chan []profiler.Record
	recs   []profiler.Record
	i      int
	key    float64 // approximate reference time of recs[i] (+ lag on the "to" side)
	shift  float64
	a0, b0 float64 // approximate mapping to reference ticks
	r      float64
	done   bool
	result chan readResult
	stop   chan struct{} // closed when the join ends early: the reader gives up
}

type readResult struct {
	bad []profiler.Corruption
	err error
}

func openCursor(s source, node int, tr *translator, shift float64) *cursor {
	c := &cursor{src: s, node: node, blocks: make(chan []profiler.Record, 2), free: make(chan []profiler.Record, 3),
		shift: shift, result: make(chan readResult, 1), stop: make(chan struct{})}
	c.a0, c.b0, c.r = tr.approxFunc(node)
	go c.read()
	c.advance()
	return c
}

func (c *cursor) read() {
	defer close(c.blocks)
	f, err := readfile.Open(c.src.path)
	if err != nil {
		c.result <- readResult{err: err}
		return
	}
	defer f.Close()
	br := profiler.NewBlockReader(f)
	for {
		var buf []profiler.Record
		select {
		case buf = <-c.free:
		default:
		}
		recs, err := br.Next(buf[:0])
		if errors.Is(err, io.EOF) {
			c.result <- readResult{bad: br.Corruptions}
			return
		}
		if err != nil {
			c.result <- readResult{bad: br.Corruptions, err: err}
			return
		}
		select {
		case c.blocks <- recs:
		case <-c.stop:
			c.result <- readResult{bad: br.Corruptions}
			return
		}
	}
}

// close tells the reader to stop (a join that ended early); a reader that
// finished already is not affected.
func (c *cursor) close() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
}

// advance moves to the next record, fetching the next block when needed.
func (c *cursor) advance() {
	c.i++
	for c.i >= len(c.recs) {
		if c.recs != nil {
			select {
			case c.free <- c.recs:
			default:
			}
		}
		b, ok := <-c.blocks
		if !ok {
			c.done, c.recs = true, nil
			c.key = math.Inf(1)
			return
		}
		c.recs, c.i = b, 0
	}
	c.key = c.a0 + c.r*(float64(c.recs[c.i].TSC)-c.b0) + c.shift
}

// pending is a tuple seen at the first point, waiting for the second.
type pending struct {
	id, tsc uint64
	at      float64 // approximate reference time (ticks)
	node    int32
	src     int32 // the first point's source (its channel)
}

// MaxPending bounds the tuples a join holds while they wait for their
// second point (40 bytes each: 160 MiB): far above a lag's worth at any
// rate a host sends (a join holds about one lag of tuples: 20 M tuples/s for the default 200 ms). A log that
// crams more into one lag (a damaged or hostile file: a few bytes can
// announce millions of records at one instant) ends the join with a
// problem instead of growing without bound.
const MaxPending = 1 << 22

// fifo is one stream's pending tuples, in id order.
type fifo struct {
	q    []pending
	head int
}

func (f *fifo) push(p pending) {
	if f.head > 4096 && f.head*2 > len(f.q) { // compact now and then
		n := copy(f.q, f.q[f.head:])
		f.q, f.head = f.q[:n], 0
	}
	f.q = append(f.q, p)
}

// groupAcc accumulates one group's distributions.
type groupAcc struct {
	lat, err *histo.Precise
	below    uint64
}

func newGroupAcc() *groupAcc { return &groupAcc{lat: histo.NewPrecise(), err: histo.NewPrecise()} }

// The histograms cannot hold 0 (an exact bound, a clamped latency), so
// values are recorded plus one nanosecond and reported minus one.
func (g *groupAcc) record(lat, err int64) {
	g.lat.Record(lat + 1)
	g.err.Record(err + 1)
}

func unshift(s histo.Summary) histo.Summary {
	if s.Count == 0 {
		return s
	}
	s.Mean--
	s.Min, s.P50, s.P90, s.P99, s.P999, s.Max = s.Min-1, s.P50-1, s.P90-1, s.P99-1, s.P999-1, s.Max-1
	return s
}

func unshiftBox(b [5]int64) [5]int64 {
	for i := range b {
		b[i]--
	}
	return b
}

func (g *groupAcc) group(name string) Group {
	out := Group{Name: name, Latency: unshift(g.lat.Summary()), Error: unshift(g.err.Summary()), BelowZero: g.below}
	out.Box = unshiftBox(g.lat.Quantiles(1, 25, 50, 75, 99))
	out.ErrorBox = unshiftBox(g.err.Quantiles(1, 25, 50, 75, 99))
	return out
}

// join pairs every tuple at point from with the same tuple at point to.
// mark, if set, is told now and then the earliest time (ns of the
// reference clock, approximate) at which a match still to come can have
// been at the first point: what streams the matches in time order.
func join(fromPoint, toPoint string, from, to []source, tr *translator, lag float64, visit func(Match), mark func(floorNs float64)) (PairResult, uint64, []string) {
	j := &joiner{res: PairResult{From: fromPoint, To: toPoint}, tr: tr, visit: visit, same: newGroupAcc(), machine: newGroupAcc(), cross: newGroupAcc(), from: from}
	lagTicks := lag * tr.hz / 1e9
	var cursors []*cursor
	nFrom := len(from)
	for _, s := range from {
		cursors = append(cursors, openCursor(s, tr.index[s.node], tr, 0))
	}
	for _, s := range to {
		cursors = append(cursors, openCursor(s, tr.index[s.node], tr, lagTicks))
	}
	var streams [1 << 16]*fifo
	var active []*fifo
	// A tuple seen at the first point more than two lags before the
	// join's present (the to side runs a lag ahead, and the lag bounds the
	// latency) can no longer be matched: it is counted only at the first
	// point and dropped, so memory is a lag's worth of tuples.
	evictAfter := 2 * lagTicks
	binTicks := ThroughputBin.Seconds() * tr.hz
	rates := [2]*binner{{width: binTicks}, {width: binTicks}}
	var read uint64
	for {
		best := -1
		for i, c := range cursors {
			if !c.done && (best < 0 || c.key < cursors[best].key) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		c := cursors[best]
		rec := c.recs[c.i]
		read++
		st := streams[rec.ID>>48]
		if st == nil {
			st = &fifo{}
			streams[rec.ID>>48] = st
			active = append(active, st)
		}
		if best < nFrom {
			rates[0].add(c.key)
			for st.head < len(st.q) && st.q[st.head].at+evictAfter < c.key {
				st.head++
				j.res.OnlyFrom++
				j.pending--
			}
			st.push(pending{id: rec.ID, tsc: rec.TSC, at: c.key, node: int32(c.node), src: int32(best)})
			if j.pending++; j.pending > MaxPending {
				j.overflow = fmt.Sprintf("%s -> %s: more than %d tuples wait for their second point within two lags (%v) of %s on %s: "+
					"a damaged log, or a rate the join cannot hold; the join stopped there (lower --lag to hold fewer)",
					fromPoint, toPoint, MaxPending, 2*time.Duration(lag), c.src.channel, c.src.node)
				break
			}
		} else {
			rates[1].add(c.key - c.shift)
			j.match(st, rec, c.node, c.src.channel)
		}
		c.advance()
		if mark != nil && read%4096 == 0 {
			mark(j.floor(cursors[:nFrom], active))
		}
	}
	for _, st := range streams {
		if st != nil {
			j.res.OnlyFrom += uint64(len(st.q) - st.head)
		}
	}
	j.res.rates = rates
	for _, c := range cursors {
		c.close()
	}
	problems := j.finish(cursors)
	if j.overflow != "" {
		problems = append(problems, j.overflow)
	}
	return j.res, read, problems
}

// floor is the earliest reference time (ns, approximate) at which a
// match still to come can have been at the first point: the first point's
// unread records and the tuples waiting for their second.
func (j *joiner) floor(from []*cursor, active []*fifo) float64 {
	f := math.Inf(1)
	for _, c := range from {
		if !c.done {
			f = min(f, c.key)
		}
	}
	for _, st := range active {
		if st.head < len(st.q) {
			p := st.q[st.head]
			a0, b0, r := j.tr.approxFunc(int(p.node))
			f = min(f, a0+r*(float64(p.tsc)-b0))
		}
	}
	return j.tr.ns(f)
}

// joiner is one pair's join in progress.
type joiner struct {
	res   PairResult
	tr    *translator
	visit func(Match)
	// same: both points on one node; machine: on two nodes of one machine
	// (one clock, no clock error); cross: on two machines.
	same, machine, cross *groupAcc
	from                 []source
	pending              int    // tuples waiting in every stream
	overflow             string // why the join stopped early, if it did
}

// match pairs a record of the second point with the pending record of
// the first with its id (earlier ids in its stream were seen only at the
// first point), and records the latency with its bound.
func (j *joiner) match(st *fifo, rec profiler.Record, node int, channel string) {
	for st.head < len(st.q) && st.q[st.head].id < rec.ID {
		st.head++
		j.res.OnlyFrom++
		j.pending--
	}
	if st.head >= len(st.q) || st.q[st.head].id != rec.ID {
		j.res.OnlyTo++
		return
	}
	p := st.q[st.head]
	st.head++
	j.pending--
	d, ok := j.tr.duration(int(p.node), p.tsc, node, rec.TSC)
	if !ok {
		j.res.Unbounded++
		return
	}
	g := j.cross
	if int(p.node) == node {
		g = j.same
	} else if j.tr.sameClock(int(p.node), node) {
		g = j.machine
	}
	v := j.tr.ns(d.Value)
	if v < 0 {
		g.below++
		v = 0
	}
	g.record(clampNs(v), clampNs(j.tr.ns(d.Err)))
	if j.visit != nil {
		m := Match{From: j.res.From, To: j.res.To, ID: rec.ID, FromNode: j.tr.names[p.node], ToNode: j.tr.names[node],
			FromChannel: j.from[p.src].channel, ToChannel: channel, LatencyNs: j.tr.ns(d.Value), ErrorNs: j.tr.ns(d.Err)}
		if at, ok := j.tr.point(int(p.node), p.tsc); ok {
			m.FromNs = j.tr.ns(at.Value)
		}
		j.visit(m)
	}
}

// finish collects the cursors' read problems and the groups' summaries.
func (j *joiner) finish(cursors []*cursor) []string {
	var problems []string
	for _, c := range cursors {
		r := <-c.result
		if r.err != nil {
			problems = append(problems, fmt.Sprintf("%s (%s on %s): %v; the records before it are analysed", c.src.path, c.src.channel, c.src.node, r.err))
		}
		for _, b := range r.bad {
			problems = append(problems, fmt.Sprintf("%s (%s on %s): damaged at offset %d (%s); skipped, the intact blocks are analysed", c.src.path, c.src.channel, c.src.node, b.Offset, b.Reason))
		}
	}
	if j.same.lat.Summary().Count > 0 || j.same.err.Summary().Count > 0 {
		j.res.Groups = append(j.res.Groups, j.same.group("same node"))
	}
	if j.machine.lat.Summary().Count > 0 {
		j.res.Groups = append(j.res.Groups, j.machine.group("same machine"))
	}
	if j.cross.lat.Summary().Count > 0 {
		j.res.Groups = append(j.res.Groups, j.cross.group("cross node"))
	}
	if j.res.Unbounded > 0 {
		problems = append(problems, fmt.Sprintf("%s -> %s: %d matched tuples have no bound (outside the relation's probed window, or no relation)", j.res.From, j.res.To, j.res.Unbounded))
	}
	return problems
}

// binner counts records per bin of reference time.
type binner struct {
	width  float64 // ticks
	origin int64   // the first bin's number
	counts []uint64
}

func (b *binner) add(t float64) {
	n := int64(math.Floor(t / b.width))
	if b.counts == nil {
		b.origin = n
	}
	i := n - b.origin
	if i < 0 { // a record before the first one seen: rare (reordered sources)
		if i < -1<<20 {
			return
		}
		b.counts = append(make([]uint64, -i), b.counts...)
		b.origin, i = n, 0
	}
	if i >= int64(len(b.counts)) {
		if i-int64(len(b.counts)) > 1<<24 {
			return // a wild timestamp: do not allocate for it
		}
		b.counts = append(b.counts, make([]uint64, i+1-int64(len(b.counts)))...)
	}
	b.counts[i]++
}

// returnTrips joins a ret-start channel's starts with its acks (same node,
// same clock): the return-trip method's durations.
func returnTrips(ackPoint string, acks, starts []source, tr *translator) []ReTResult {
	var out []ReTResult
	for _, a := range acks {
		var s *source
		for i := range starts {
			if starts[i].node == a.node && starts[i].channel+".ack" == a.channel {
				s = &starts[i]
			}
		}
		if s == nil {
			continue
		}
		res, _, _ := join(PointOf(s.channel), ackPoint, []source{*s}, []source{a}, tr, 2e9, nil, nil)
		r := ReTResult{Node: a.node, Channel: s.channel, Unacked: res.OnlyFrom}
		for _, g := range res.Groups {
			if g.Name == "same node" {
				r.RoundTrip = g.Latency
			}
		}
		out = append(out, r)
	}
	return out
}
