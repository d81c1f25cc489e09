package diagnose

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cloudprofiler-go/cp/stage"
)

// Process is one process's stage series and what joins it to the others:
// a sender's thread stages carry streams (Streams: thread stage name to
// stream id), a receiver's streams arrive on lanes (Lanes: stream id to
// lane index), a job's operators are joined by its dataflow's Edges
// ([from, to] operator names) and named Job/operator.
type Process struct {
	Node    string // "sender0", "receiver0", "job0": the name in the TSC relation
	Role    string // "sender", "receiver" or "job"
	Series  *stage.Series
	Streams map[string]uint32
	Lanes   map[uint32]int
	Job     string
	Edges   [][2]string
	// Reads and Writes are a job's topics (driver:subject): a job that
	// writes a topic another reads feeds that one's operators, not the
	// lanes.
	Reads, Writes []string
	// InputLag is a receiver's readings of a job's lag on its input,
	// [Unix ns, messages] in time order: the queue of the system under
	// test's stages whose senders' counts are not there to give one (a
	// job's output streams are not the senders' streams).
	InputLag [][2]int64
}

// Input is a trial's processes. Align maps a TSC value of a node to the
// reference node's TSC (the run's TSC relation); nil, or false for a
// value, aligns by each host's wall clock instead. Relay says that a
// system under test sits between senders and receivers (its stage
// replaces the network's); SUTName names it ("sut" when empty; a broker's
// driver, e.g. "jetstream", when the data went through one).
type Input struct {
	Processes []Process
	Relay     bool
	SUTName   string
	Align     func(node string, tsc uint64) (float64, bool)
}

// Timeline is a pipeline's counters at common instants: snapshot s of
// module m is at index s*M+m of each slice (M modules). Counters are
// cumulative (Total in items, Wait/Busy/Blocked/Idle in ns); Queue is the
// queue at the instant.
type Timeline struct {
	Graph    *Graph
	Timed    []bool
	QueueCap []int64
	UnixNs   []int64 // the instants, on the reference host's clock
	PeriodNs int64
	Total    []uint64
	Wait     []uint64
	Queue    []int64
	Busy     []uint64
	Blocked  []uint64
	Idle     []uint64
	// Aligned says how the hosts' samples were put on one time line.
	Aligned string
}

// Snapshots is the number of instants.
func (t *Timeline) Snapshots() int { return len(t.UnixNs) }

// source is where a module's counters come from: a stage of a process
// (its index in the process's series), or for a network stage the
// difference between a thread's items and a stream's arrivals.
type source struct {
	proc, stage int
	// network: emitted by (sproc, sstage), arrived at (proc, stage)
	sproc, sstage int
	// lag: the queue is the job's input lag that proc read
	lag bool
}

// BuildTimeline assembles a trial's pipeline: sender threads -> network
// streams (or the system under test) -> lanes -> consumer, each receiver
// a graph of its own lanes and consumer, joined by the streams.
func BuildTimeline(in Input) (*Timeline, error) {
	if len(in.Processes) == 0 {
		return nil, errors.New("no stage series")
	}
	for _, p := range in.Processes {
		if p.Series == nil {
			return nil, fmt.Errorf("%s: no stage series (run with stage accounting on)", p.Node)
		}
		if err := p.Series.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", p.Node, err)
		}
	}
	b := newBuilder(in)
	if err := b.modules(); err != nil {
		return nil, err
	}
	g, err := NewGraph(b.mods, b.edges)
	if err != nil {
		return nil, err
	}
	t := &Timeline{Graph: g, Timed: b.timed, QueueCap: b.caps}
	b.fill(t)
	return t, nil
}

type builder struct {
	in      Input
	mods    []Module
	edges   [][2]int
	srcs    []source
	timed   []bool
	caps    []int64
	byName  map[string]int
	clocks  []procClock // per process: its samples on the reference time line
	refProc int
	aligned string
}

func newBuilder(in Input) *builder {
	return &builder{in: in, byName: map[string]int{}}
}

func (b *builder) add(m Module, src source, timed bool, cap int64) int {
	b.mods = append(b.mods, m)
	b.srcs = append(b.srcs, src)
	b.timed = append(b.timed, timed)
	b.caps = append(b.caps, cap)
	b.byName[m.Name] = len(b.mods) - 1
	return len(b.mods) - 1
}

// prefix names a process's stages when its role has several processes.
// BlackBox says what a stage name, as the timeline makes it, names when
// it names a black box: the transport between the harness's own agents
// (stage.Network: stream<N>, or receiver<K>/stream<N> with several
// receivers), or a system under test's stream (stage.SUT: sut/stream<N>,
// nats/stream<N>, with the receiver's prefix too). The analyses that name
// stages their own way (the agreement line, the host-CPU rule) read the
// diagnosis's names through it.
func BlackBox(name string) (stage.Kind, bool) {
	parts := strings.Split(name, "/")
	id, ok := strings.CutPrefix(parts[len(parts)-1], "stream")
	if !ok || id == "" || strings.Trim(id, "0123456789") != "" {
		return "", false
	}
	switch {
	case len(parts) == 1, len(parts) == 2 && agentNode(parts[0]):
		return stage.Network, true
	case len(parts) == 2, len(parts) == 3 && agentNode(parts[0]):
		return stage.SUT, true
	}
	return "", false
}

// agentNode says whether a name is an agent's node as the sweep names
// them ("sender0", "receiver12").
func agentNode(name string) bool {
	rest, ok := strings.CutPrefix(name, "sender")
	if !ok {
		rest, ok = strings.CutPrefix(name, "receiver")
	}
	return ok && rest != "" && strings.Trim(rest, "0123456789") == ""
}

func (b *builder) prefix(p Process) string {
	if p.Role == roleJob {
		return p.Job + "/"
	}
	n := 0
	for _, q := range b.in.Processes {
		if q.Role == p.Role {
			n++
		}
	}
	if n > 1 {
		return p.Node + "/"
	}
	return ""
}

// timedModule is a process's timed stage as a module, named as the
// process's stages are (pre), its shared thread too.
func timedModule(pre string, st stage.StageSeries) Module {
	// a consumer's idle time is not a wait for anything downstream
	mod := Module{Name: pre + st.Name, Kind: st.Kind, HasWait: st.Kind != stage.Consumer, HasQueue: !st.NoQueue}
	if st.Thread != "" && st.Kind == stage.Operator {
		mod.Thread = pre + st.Thread
	}
	return mod
}

// modules lists the modules and edges of the trial's graph.
func (b *builder) modules() error {
	threadOf := map[uint32][2]int{} // stream -> (process, stage) of its thread
	for pi, p := range b.in.Processes {
		pre := b.prefix(p)
		for si, st := range p.Series.Stages {
			switch {
			case st.Kind != stage.Sender && st.Kind != stage.Lane && st.Kind != stage.Consumer && st.Kind != stage.Operator,
				st.Kind == stage.Operator && p.Role != roleJob:
				continue
			}
			b.add(timedModule(pre, st), source{proc: pi, stage: si, sproc: -1}, true, st.QueueCap)
			if id, ok := p.Streams[st.Name]; ok && st.Kind == stage.Sender {
				threadOf[id] = [2]int{pi, si}
			}
		}
		for _, st := range p.Series.Stages { // every lane of a process feeds its consumer
			c, ok := b.byName[pre+"consumer"]
			if st.Kind == stage.Lane && ok {
				b.edges = append(b.edges, [2]int{b.byName[pre+st.Name], c})
			}
		}
	}
	heads, tails := b.operators()
	return b.boxes(threadOf, heads, tails)
}

// boxes adds the network (or system under test) between a thread and a
// lane: one module per stream that arrived, with the thread that sent it
// when that sender's series is here; in a job sweep, the job's heads
// read from it and its tails write what the lane reads.
func (b *builder) boxes(threadOf map[uint32][2]int, heads, tails []int) error {
	input := b.jobInput()
	for pi, p := range b.in.Processes {
		if p.Role != "receiver" {
			continue
		}
		pre := b.prefix(p)
		for si, st := range p.Series.Stages {
			if st.Kind != stage.Network {
				continue
			}
			id, eventsLane, err := networkStage(st.Name)
			if err != nil {
				return fmt.Errorf("%s: %w", p.Node, err)
			}
			kind, name := stage.Network, pre+st.Name
			if b.in.Relay {
				sut := b.in.SUTName
				if sut == "" {
					sut = "sut"
				}
				kind, name = stage.SUT, pre+sut+"/"+st.Name
			}
			th, sent := threadOf[id]
			sent = sent && eventsLane < 0
			src := source{proc: pi, stage: si, sproc: -1}
			if sent {
				src.sproc, src.sstage = th[0], th[1]
			}
			src.lag = !sent && b.in.Relay && len(p.InputLag) > 0
			if src.lag && input != "" { // the broker the job drains, by its topic
				name = pre + input
			}
			n := b.add(Module{Name: name, Kind: kind, HasQueue: sent || src.lag, LagQueue: src.lag}, src, false, 0)
			if sent {
				b.edges = append(b.edges, [2]int{b.byName[b.prefix(b.in.Processes[th[0]])+b.in.Processes[th[0]].Series.Stages[th[1]].Name], n})
			}
			if src.lag && input != "" { // every sender thread feeds it
				b.senderEdges(threadOf, n)
			}
			for _, h := range heads { // the job's operators take the system's input
				b.edges = append(b.edges, [2]int{n, h})
			}
			lane, ok := p.Lanes[id]
			if eventsLane >= 0 {
				lane, ok = eventsLane, true
			}
			if ok {
				if l, ok := b.byName[fmt.Sprintf("%slane%d", pre, lane)]; ok {
					b.edges = append(b.edges, [2]int{n, l})
					for _, t := range tails { // and write what the lane reads
						b.edges = append(b.edges, [2]int{t, l})
					}
				}
			}
		}
	}
	return nil
}

// procClock places a process's samples on the reference time line.
type procClock struct {
	at []int64 // reference ns of each sample
}

// align places every process's samples on the reference host's clock:
// through the TSC relation when there is one (the reference's own
// samples give its TSC-to-wall mapping), else by each host's wall clock.
func (b *builder) align() {
	b.refProc = 0
	for i, p := range b.in.Processes {
		if p.Role == "receiver" {
			b.refProc = i
			break
		}
	}
	ref := b.in.Processes[b.refProc]
	rs := ref.Series
	n := len(rs.TSC)
	// reference TSC -> reference wall ns, from its first and last samples
	scale, off := 1e9/rs.Hz, float64(0)
	if n > 0 {
		off = float64(rs.UnixNs[0]) - float64(rs.TSC[0])*scale
		if n > 1 && rs.TSC[n-1] > rs.TSC[0] {
			scale = float64(rs.UnixNs[n-1]-rs.UnixNs[0]) / float64(rs.TSC[n-1]-rs.TSC[0])
			off = float64(rs.UnixNs[0]) - float64(rs.TSC[0])*scale
		}
	}
	b.clocks = make([]procClock, len(b.in.Processes))
	viaTSC, viaWall := 0, 0
	for pi, p := range b.in.Processes {
		at := make([]int64, len(p.Series.TSC))
		for i, v := range p.Series.TSC {
			if pi == b.refProc {
				at[i] = p.Series.UnixNs[i]
				continue
			}
			if b.in.Align != nil {
				if r, ok := b.in.Align(p.Node, v); ok {
					at[i] = int64(r*scale + off)
					viaTSC++
					continue
				}
			}
			at[i] = p.Series.UnixNs[i]
			viaWall++
		}
		b.clocks[pi] = procClock{at: at}
	}
	switch {
	case len(b.in.Processes) == 1:
		b.aligned = "one process"
	case viaWall == 0:
		b.aligned = "TSC relation into " + ref.Node
	case viaTSC == 0:
		b.aligned = "wall clocks (no TSC relation)"
	default:
		b.aligned = fmt.Sprintf("TSC relation into %s, %d samples by wall clock (outside the relation)", ref.Node, viaWall)
	}
}

// fill samples every module at the reference process's instants.
func (b *builder) fill(t *Timeline) {
	b.align()
	ref := b.in.Processes[b.refProc].Series
	t.UnixNs = append([]int64(nil), ref.UnixNs...)
	t.PeriodNs = ref.PeriodNs
	t.Aligned = b.aligned
	S, M := len(t.UnixNs), len(b.mods)
	tol := t.PeriodNs / 4 // samples this close are the same snapshot
	t.Total, t.Wait, t.Queue = make([]uint64, S*M), make([]uint64, S*M), make([]int64, S*M)
	t.Busy, t.Blocked, t.Idle = make([]uint64, S*M), make([]uint64, S*M), make([]uint64, S*M)
	for m, src := range b.srcs {
		p := b.in.Processes[src.proc]
		st := &p.Series.Stages[src.stage]
		classes := stage.States(st.Kind)
		for s := 0; s < S; s++ {
			at := t.UnixNs[s]
			k, frac := b.locate(src.proc, st, at, tol)
			i := s*M + m
			t.Total[i] = lerpU(st.Items, k, frac)
			for j, c := range classes {
				v := lerpI(st.StateNs[j], k, frac)
				switch c.Class {
				case stage.Busy:
					t.Busy[i] += v
				case stage.Blocked:
					t.Blocked[i] += v
					t.Wait[i] += v
				default:
					t.Idle[i] += v
				}
			}
			switch {
			case src.sproc >= 0: // network: emitted - arrived
				// The sender's count of the same snapshot (a sample
				// within tol), else as of its last sample before the
				// instant: never more than it had sent by then, so skew
				// between the hosts makes the queue look shorter (a
				// negative one carries over, §4.3), not longer.
				sst := &b.in.Processes[src.sproc].Series.Stages[src.sstage]
				sk, _ := b.locate(src.sproc, sst, at, tol)
				t.Queue[i] = int64(lerpU(sst.Items, sk, 0)) - int64(t.Total[i])
			case src.lag:
				t.Queue[i] = lagAt(p.InputLag, at)
			case !st.NoQueue && k >= 0:
				t.Queue[i] = st.Queue[k]
			}
		}
	}
}

// lagAt is the last lag read at or before at (0 before the first).
func lagAt(lag [][2]int64, at int64) int64 {
	k := sort.Search(len(lag), func(i int) bool { return lag[i][0] > at }) - 1
	if k < 0 {
		return 0
	}
	return lag[k][1]
}

// locate finds where reference instant at falls in a stage's samples:
// between sample k and k+1 at fraction frac; k -1 before its first.
//
// A sample within tol of the instant is taken as of the instant: the
// processes sample on the same period boundaries (package stage), so that
// is the same snapshot, and interpolating towards a sample a period away
// would smear a change that happened there into this period.
func (b *builder) locate(proc int, st *stage.StageSeries, at, tol int64) (int, float64) {
	times := b.clocks[proc].at[st.From:]
	n := len(st.Items)
	if n == 0 {
		return -1, 0
	}
	if at < times[0] {
		if times[0]-at <= tol {
			return 0, 0
		}
		return -1, 0
	}
	k := sort.Search(n, func(i int) bool { return times[i] > at }) - 1
	if at-times[k] <= tol {
		return k, 0
	}
	if k+1 < n && times[k+1]-at <= tol {
		return k + 1, 0
	}
	if k >= n-1 {
		return n - 1, 0
	}
	span := times[k+1] - times[k]
	if span <= 0 {
		return k, 0
	}
	return k, float64(at-times[k]) / float64(span)
}

func lerpU(v []uint64, k int, f float64) uint64 {
	if k < 0 {
		return 0
	}
	if f == 0 || k+1 >= len(v) {
		return v[k]
	}
	return v[k] + uint64(f*float64(v[k+1]-v[k]))
}

func lerpI(v []int64, k int, f float64) uint64 {
	if k < 0 {
		return 0
	}
	if f == 0 || k+1 >= len(v) {
		return uint64(v[k])
	}
	return uint64(v[k] + int64(f*float64(v[k+1]-v[k])))
}

// networkStage reads a receiver's network stage name: a sender's stream
// (stream<N>: its id), or a lane's JSON events (events<lane>: a job's
// output in JSON carries no stream, docs/brokers.md; eventsLane -1 for a
// stream).
func networkStage(name string) (id uint32, eventsLane int, err error) {
	if _, err := fmt.Sscanf(name, "stream%d", &id); err == nil {
		return id, -1, nil
	}
	if _, err := fmt.Sscanf(name, "events%d", &eventsLane); err != nil || eventsLane < 0 {
		return 0, -1, fmt.Errorf("network stage %q is not stream<N> or events<lane>", name)
	}
	return 0, eventsLane, nil
}
