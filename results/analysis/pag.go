package analysis

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/results"
	"github.com/cloudprofiler-go/cp/results/activity"
	"github.com/cloudprofiler-go/cp/stage"
)

// ActivityPoint is the prefix of the channels the stages log their state
// changes on ("activity.thread0", "activity.lane1", "activity.consumer").
const ActivityPoint = "activity"

// The message edges a trace takes from the per-tuple points: a bucket
// leaves a sender thread (emit.<thread>) and reaches a lane
// (receive.<lane>), then leaves the lane decoded (deserialized.<lane>) and
// reaches the consumer (consumed).
var messagePairs = [][2]string{{"emit", "receive"}, {"deserialized", "consumed"}}

// TraceOf reads a run directory's activity channels and per-tuple points
// into a trace for the program activity graph: one worker per stage and
// node ("receiver0/lane0"), its state changes as activities, and every
// bucket between two workers as a transfer with the clock relation's
// error bound. Times are ns of the reference node's clock. The problems
// say what could not be read (damaged logs, unknown stages, pairs with no
// relation); an error means there is nothing to build a graph from.
func TraceOf(d *results.Dir, lag time.Duration) (*activity.Trace, []string, error) {
	if len(d.Nodes) == 0 {
		return nil, nil, errors.New("no profiles in the run directory (profiles/<node>/): run cpsweep with --profile handlers.yaml")
	}
	points, nodes := sourcesOf(d)
	tr, err := newTranslator(d, nodes)
	if err != nil {
		return nil, nil, err
	}
	problems := append([]string(nil), tr.problems...)
	t := &activity.Trace{}
	index := map[string]int{} // node/stage -> worker
	var logs []source
	for point, srcs := range points {
		if strings.HasPrefix(point, ActivityPoint+".") {
			logs = append(logs, srcs...)
		}
	}
	for _, src := range sortedSources(logs) {
		name := strings.TrimPrefix(src.channel, ActivityPoint+".")
		kinds, ok := activity.StageKinds(name)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s on %s: stage %q has no activity kinds; skipped", src.channel, src.node, name))
			continue
		}
		acts, probs := readActivities(src, tr, kinds)
		problems = append(problems, probs...)
		worker := src.node + "/" + name
		if w, ok := index[worker]; ok { // segments of one channel
			t.Activities[w] = append(t.Activities[w], acts...)
			continue
		}
		index[worker] = len(t.Workers)
		t.Workers = append(t.Workers, worker)
		t.Activities = append(t.Activities, acts)
	}
	if len(t.Workers) == 0 {
		return nil, problems, errors.New("no activity channels in the profiles (activity.<stage>): profile the run with activity logging on every stage (docs/profiler.md)")
	}
	for w := range t.Activities {
		t.Activities[w] = ordered(t.Activities[w])
	}
	if lag <= 0 {
		lag = DefaultLag
	}
	for _, pr := range messagePairs {
		from, to := points[pr[0]], points[pr[1]]
		if len(from) == 0 || len(to) == 0 {
			problems = append(problems, fmt.Sprintf("%s -> %s: no logs of %s: no message edges there", pr[0], pr[1], missingOf(pr, from)))
			continue
		}
		if tr.rf == nil && spansNodes(from, to) {
			problems = append(problems, fmt.Sprintf("%s -> %s: on different nodes and no relation.json (run cpsweep with --clock): no message edges there", pr[0], pr[1]))
			continue
		}
		var ms messages
		ms.trace, ms.index, ms.progress = t, index, pr[1] == "consumed"
		_, _, probs := join(pr[0], pr[1], from, to, tr, float64(lag.Nanoseconds()), ms.add)
		problems = append(problems, probs...)
		if ms.unknown > 0 {
			problems = append(problems, fmt.Sprintf("%s -> %s: %d tuples between points with no activity channel; not in the graph", pr[0], pr[1], ms.unknown))
		}
		ms.flush()
	}
	for _, p := range t.Progress {
		slices.Sort(p) // the join reads in approximate time order
	}
	return t, problems, nil
}

// sortedSources orders a point's logs by node, channel and segment, so
// that a worker's segments come in order and workers in a stable order.
func sortedSources(s []source) []source {
	out := append([]source(nil), s...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].node != out[j].node {
			return out[i].node < out[j].node
		}
		return out[i].channel < out[j].channel
	})
	return out
}

// readActivities turns one activity log into activities: each state
// change opens the state it names and ends the one before; the items an
// activity processed are the difference of the counts the two changes
// carry. The last change opens an activity with no end: it is left out.
func readActivities(src source, tr *translator, kinds []activity.Kind) ([]activity.Activity, []string) {
	var problems []string
	f, err := os.Open(src.path)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s (%s on %s): %v", src.path, src.channel, src.node, err)}
	}
	defer f.Close()
	node := tr.index[src.node]
	br := profiler.NewBlockReader(f)
	var acts []activity.Activity
	var buf []profiler.Record
	tl := activity.NewTimeline(kinds)
	unbounded := 0
	for {
		recs, err := br.Next(buf[:0])
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s (%s on %s): %v; the records before it are in the graph", src.path, src.channel, src.node, err))
			break
		}
		buf = recs
		for _, r := range recs {
			state, items := stage.ActivityOf(r.ID)
			at, ok := tr.point(node, r.TSC)
			if !ok {
				unbounded++
				tl.Break()
				continue
			}
			if a, ok := tl.Change(clampNs(tr.ns(at.Value)), state, items); ok {
				acts = append(acts, a)
			}
		}
	}
	for _, c := range br.Corruptions {
		problems = append(problems, fmt.Sprintf("%s (%s on %s): damaged at offset %d (%s); skipped", src.path, src.channel, src.node, c.Offset, c.Reason))
	}
	if bad := tl.Bad; bad > 0 {
		problems = append(problems, fmt.Sprintf("%s on %s: %d state changes with an unknown state or out of order; skipped", src.channel, src.node, bad))
	}
	if unbounded > 0 {
		problems = append(problems, fmt.Sprintf("%s on %s: %d state changes outside the clock relation's window; skipped", src.channel, src.node, unbounded))
	}
	return acts, problems
}

// ordered sorts a worker's activities (segments may interleave at their
// seams) and drops any that overlap the one before: the graph needs one
// activity at a time per worker.
func ordered(acts []activity.Activity) []activity.Activity {
	sort.SliceStable(acts, func(i, j int) bool { return acts[i].StartNs < acts[j].StartNs })
	out := acts[:0]
	for _, a := range acts {
		if len(out) > 0 && a.StartNs < out[len(out)-1].EndNs {
			continue
		}
		out = append(out, a)
	}
	return out
}

// messages turns matched tuples into transfers between workers: a tuple
// leaves at the end of the sending worker's activity that holds its first
// point (the send completes it) and arrives at the start of the receiving
// worker's activity that holds its second (that activity processes it).
// Tuples of one bucket map to the same pair of instants and become one
// transfer.
type messages struct {
	trace   *activity.Trace
	index   map[string]int
	cur     activity.Transfer
	have    bool
	unknown int
	// progress: the second point is items leaving the pipeline; their
	// instants are the receiving worker's progress.
	progress bool
}

func (ms *messages) add(m Match) {
	from, okF := ms.index[m.FromNode+"/"+workerOfPoint(m.FromChannel)]
	to, okT := ms.index[m.ToNode+"/"+workerOfPoint(m.ToChannel)]
	if !okF || !okT {
		ms.unknown++
		return
	}
	sent := clampNs(m.FromNs)
	recv := clampNs(m.FromNs + m.LatencyNs)
	if ms.progress {
		if ms.trace.Progress == nil {
			ms.trace.Progress = make([][]int64, len(ms.trace.Workers))
		}
		if p := ms.trace.Progress[to]; len(p) == 0 || p[len(p)-1] != recv {
			ms.trace.Progress[to] = append(p, recv)
		}
	}
	if a, ok := holding(ms.trace.Activities[from], sent); ok {
		sent = a.EndNs
	}
	if a, ok := holding(ms.trace.Activities[to], recv); ok {
		recv = a.StartNs
	}
	x := activity.Transfer{From: from, To: to, SentNs: sent, RecvNs: recv, ErrNs: clampNs(math.Ceil(m.ErrorNs)), Tuples: 1}
	if ms.have && ms.cur.From == x.From && ms.cur.To == x.To && ms.cur.SentNs == x.SentNs && ms.cur.RecvNs == x.RecvNs {
		ms.cur.Tuples++
		ms.cur.ErrNs = max(ms.cur.ErrNs, x.ErrNs)
		return
	}
	ms.flush()
	ms.cur, ms.have = x, true
}

func (ms *messages) flush() {
	if ms.have {
		ms.trace.Transfers = append(ms.trace.Transfers, ms.cur)
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
	}
	return ""
}

// holding is the busy activity of a worker whose span holds t (the
// first point's bucket is sent, the second's processed, inside one).
func holding(acts []activity.Activity, t int64) (activity.Activity, bool) {
	i := sort.Search(len(acts), func(i int) bool { return acts[i].EndNs >= t })
	for ; i < len(acts) && acts[i].StartNs <= t; i++ {
		if k := acts[i].Kind; k == activity.Send || k == activity.Decode || k == activity.Consume {
			return acts[i], true
		}
	}
	return activity.Activity{}, false
}

// The program activity graph's files in a run directory.
const (
	PAGJSONFile = "pag.json"
	PAGCSVFile  = "pag.csv"
)

// PAGFile is pag.json: the graph's analysis and what could not be read.
type PAGFile struct {
	Run string `json:"run"`
	*activity.Report
	Problems []string `json:"problems,omitempty"`
}

// WritePAG writes pag.json and pag.csv into dir.
func WritePAG(dir string, rep *activity.Report, problems []string) error {
	b, err := json.MarshalIndent(PAGFile{Run: dir, Report: rep, Problems: problems}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", PAGJSONFile, err)
	}
	if err := writeAtomic(filepath.Join(dir, PAGJSONFile), append(b, '\n')); err != nil {
		return err
	}
	var csv bytes.Buffer
	if err := rep.WriteCSV(&csv); err != nil {
		return fmt.Errorf("encode %s: %w", PAGCSVFile, err)
	}
	return writeAtomic(filepath.Join(dir, PAGCSVFile), csv.Bytes())
}
