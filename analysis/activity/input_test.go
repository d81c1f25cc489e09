package activity

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/wire"
)

// writeRun creates a one-node run directory (1 tick = 1 ns) whose channels
// hold the given records (TSC, id).
func writeRun(t *testing.T, logs map[string][][2]uint64) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"agents": [{"role": "receiver", "tsc_hz": 1e9}]}`), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, rundir.FormatFile), []byte(`{"format": "cloudprofiler-go run directory", "version": 2}`), 0o644))
	must(t, os.MkdirAll(filepath.Join(dir, "profiles", "n"), 0o755))
	p := profiler.New(time.Hour)
	for ch, recs := range logs {
		c, err := p.Open("n/"+ch, profiler.Config{Handler: profiler.HandlerBuffered, Path: filepath.Join(dir, "profiles", "n", ch+".log")})
		must(t, err)
		for _, r := range recs {
			c.LogTSAt(r[0], r[1])
		}
	}
	must(t, p.Close())
	return dir
}

func change(tsc uint64, state int, items uint64) [2]uint64 {
	return [2]uint64{tsc, stage.ActivityID(state, items)}
}

func tuples(tsc uint64, ids ...uint64) [][2]uint64 {
	var out [][2]uint64
	for _, id := range ids {
		out = append(out, [2]uint64{tsc, wire.TupleID(0, id)})
	}
	return out
}

// Two buckets of two tuples through a sender thread, a lane and the
// consumer, by hand: the activities are the state changes (the last one
// open, so left out), and each bucket is one message per hop, leaving at
// the end of the busy activity that holds its first point and arriving at
// the start of the one that holds its second.
func TestPAGOfAHandBuiltRun(t *testing.T) {
	cat := func(parts ...[][2]uint64) [][2]uint64 {
		var out [][2]uint64
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	dir := writeRun(t, map[string][][2]uint64{
		"activity.thread0": {change(0, stage.Pacing, 0), change(100, stage.Sending, 0), change(150, stage.Pacing, 1),
			change(1000, stage.Sending, 1), change(1040, stage.Pacing, 2)},
		"emit.0": cat(tuples(110, 0, 1), tuples(1010, 2, 3)),
		"activity.lane0": {change(0, stage.Waiting, 0), change(300, stage.Decoding, 0), change(350, stage.Waiting, 1),
			change(1200, stage.Decoding, 1), change(1230, stage.Waiting, 2)},
		"receive.0":      cat(tuples(300, 0, 1), tuples(1200, 2, 3)),
		"deserialized.0": cat(tuples(340, 0, 1), tuples(1225, 2, 3)),
		"activity.consumer": {change(0, stage.Idling, 0), change(400, stage.Working, 0), change(500, stage.Idling, 1),
			change(1300, stage.Working, 1), change(1500, stage.Idling, 2)},
		"consumed": cat(tuples(420, 0), tuples(480, 1), tuples(1350, 2), tuples(1450, 3)),
	})
	d, err := rundir.Open(dir)
	must(t, err)
	in, _, err := Open(d, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"n/consumer", "n/lane0", "n/thread0"}; !reflect.DeepEqual(in.Workers, want) {
		t.Fatalf("workers %v, want %v", in.Workers, want)
	}
	// The graph over it: one window; every path runs through the stages'
	// busy activities and the messages, so the consumer's consume carries
	// a share and all shares add up to 1.
	rep, problems, err := in.Analyze(Options{WindowNs: 10_000, WaitNs: DefaultWaitNs}, 2,
		Limits{ProgressWorker: 0, ProgressMaxNs: 700})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	if n := in.Joins().JoinsRun(); n != len(in.pairs) || n != 2 {
		t.Fatalf("the pass ran %d joins for %d message pairs %v: each of the two must be read and joined once", n, len(in.pairs), in.pairs)
	}
	// Every state change became an activity, and each bucket (two
	// tuples) one message from the end of its send to the start of its
	// processing: thread0 150→300 and 1040→1200, lane0 350→400 and
	// 1230→1300.
	type m struct {
		count   int
		totalNs int64
		items   uint64
	}
	wantM := map[[2]string]m{
		{"n/consumer", "idle"}: {2, 1200, 0}, {"n/consumer", "consume"}: {2, 300, 2},
		{"n/lane0", "recv-wait"}: {2, 1150, 0}, {"n/lane0", "decode"}: {2, 80, 2}, {"n/lane0", "message"}: {2, 120, 4},
		{"n/thread0", "pacing"}: {2, 950, 0}, {"n/thread0", "send"}: {2, 90, 2}, {"n/thread0", "message"}: {2, 310, 4},
	}
	gotM := map[[2]string]m{}
	for _, x := range rep.Windows[0].Metrics {
		gotM[[2]string{x.Worker, x.Kind}] = m{x.Count, x.TotalNs, x.Items}
	}
	if !reflect.DeepEqual(gotM, wantM) {
		t.Fatalf("metrics\n got %v\nwant %v", gotM, wantM)
	}
	sum := 0.0
	for _, s := range rep.CP {
		sum += s.Value
	}
	if len(rep.Windows) != 1 || !rep.Windows[0].HasPath || sum < 0.999 || sum > 1.001 {
		t.Fatalf("windows %d, CP %v (sum %v)", len(rep.Windows), rep.CP, sum)
	}
	// One path (the first bucket's ends in the consumer's idle wait):
	// thread0 paces and sends the second bucket, lane0 decodes it, the
	// consumer consumes it; each edge's share is its time over 1500 ns.
	wantCP := map[[2]string]float64{
		{"n/thread0", "pacing"}: 950.0 / 1500, {"n/thread0", "send"}: 90.0 / 1500, {"n/thread0", "message"}: 160.0 / 1500,
		{"n/lane0", "decode"}: 30.0 / 1500, {"n/lane0", "message"}: 70.0 / 1500, {"n/consumer", "consume"}: 200.0 / 1500,
	}
	for _, s := range rep.CP {
		if w := wantCP[[2]string{s.Worker, s.Kind}]; math.Abs(s.Value-w) > 1e-9 {
			t.Errorf("CP of %s %s: %v, want %v", s.Worker, s.Kind, s.Value, w)
		}
	}
	if len(rep.CP) != len(wantCP) {
		t.Fatalf("CP %+v, want %v", rep.CP, wantCP)
	}
	// Progress: tuples consumed at 420, 480, 1350, 1450; the gap 480..1350
	// (870 ns) is over 700.
	if len(rep.Violations) != 1 || rep.Violations[0].Invariant != "progress-max" || rep.Violations[0].ValueNs != 870 {
		t.Fatalf("violations %+v, want one progress-max of 870 ns", rep.Violations)
	}
	must(t, WriteFiles(dir, rep, nil))
	for _, f := range []string{rundir.PAGFile, rundir.PAGCSVFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

// A stage the graph does not know, and a trace without activity channels.
func TestPAGRefuses(t *testing.T) {
	dir := writeRun(t, map[string][][2]uint64{"emit.0": tuples(10, 0), "receive.0": tuples(20, 0)})
	d, err := rundir.Open(dir)
	must(t, err)
	if _, _, err := Open(d, 0); err == nil {
		t.Fatal("a trace from a run without activity channels")
	}
	dir = writeRun(t, map[string][][2]uint64{"activity.stream3": {change(0, 0, 0), change(5, 1, 0)},
		"activity.consumer": {change(0, stage.Idling, 0), change(5, stage.Working, 0), change(9, stage.Idling, 1)}})
	d, err = rundir.Open(dir)
	must(t, err)
	in, problems, err := Open(d, 0)
	if err != nil || in == nil || len(in.Workers) != 1 {
		t.Fatalf("input %+v, err %v: want the consumer", in, err)
	}
	_, more, err := in.Analyze(Options{WindowNs: 10}, 0, Limits{ProgressWorker: -1})
	if problems = append(problems, more...); err != nil || len(problems) < 2 {
		t.Fatalf("problems %v, err %v: want stream3 and the missing points named", problems, err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A message whose activities overlap it (the lane starts decoding before
// the sender's send activity ends) is snapped only as far as its other
// end: never a receive before its send, so never ambiguous on one node
// (12 k of 12 k "ambiguous" messages came from such snaps).
func TestSnapsNeverCrossTheMessage(t *testing.T) {
	dir := writeRun(t, map[string][][2]uint64{
		"activity.thread0": {change(0, stage.Pacing, 0), change(100, stage.Sending, 0), change(150, stage.Pacing, 1), change(400, stage.Pacing, 1)},
		"emit.0":           tuples(110, 0, 1),
		"activity.lane0":   {change(0, stage.Waiting, 0), change(125, stage.Decoding, 0), change(200, stage.Waiting, 1), change(400, stage.Waiting, 1)},
		"receive.0":        tuples(130, 0, 1),
	})
	d, err := rundir.Open(dir)
	must(t, err)
	in, _, err := Open(d, 0)
	must(t, err)
	rep, problems, err := in.Analyze(Options{WindowNs: 10_000, WaitNs: DefaultWaitNs}, 0, Limits{ProgressWorker: -1})
	must(t, err)
	if rep.Ambiguous != 0 {
		t.Fatalf("%d ambiguous messages on one node (problems %v)", rep.Ambiguous, problems)
	}
	found := false
	for _, p := range problems {
		found = found || strings.Contains(p, "snapped only as far as")
	}
	if !found {
		t.Fatalf("the clamped snaps are not counted: %v", problems)
	}
}
