package analysis

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/tsc/probing"
	"github.com/cloudprofiler-go/cp/wire"
)

// A synthetic run: node "a" is the reference (1 tick = 1 ns), node "b"
// sends; its clock is scale·t + offset. Tuple i of stream s is emitted on
// b at true time t_i, received on a after lat1(i) and consumed after
// lat2(i) more. Some tuples are lost before receive, and consumed logs only
// XoY-sampled ids.
type synth struct {
	n             int
	scale, offset float64
	dir           string
	// recvOnC puts receive on a third node c (clock 1.2·(1−150 ppm)·t +
	// 3e11): emit -> receive is then across two non-reference nodes.
	recvOnC bool
	// oneMachine: every node reports one boot id (with scale 1 and offset
	// 0: one clock).
	oneMachine bool
}

func (s synth) clock(node string, t float64) uint64 {
	switch node {
	case "b":
		return s.clockB(t)
	case "c":
		return uint64(1.2*(1-150e-6)*t + 3e11)
	}
	return uint64(t)
}

func (s synth) recvNode() string {
	if s.recvOnC {
		return "c"
	}
	return "a"
}

const t0 = 1.2e9 // first emit, ns

// span spreads the emits over at least 1.6 s, at most 10 M tuples/s.
func (s synth) span() float64 { return max(1.6e9, float64(s.n)/10e6*1e9) }

func (s synth) t(i int) float64         { return t0 + s.span()*float64(i)/float64(s.n) }
func lat1(i int) float64                { return 50e3 + float64(i%100)*1e3 } // 50..149 µs
func lat2(i int) float64                { return 2e3 + float64(i%7)*100 }    // 2.0..2.6 µs
func lost(i int) bool                   { return i%50 == 7 }
func sampled(id uint64) bool            { return id%10 < 1 } // XoY x=1 y=10 at consumed
func tupleID(i int) uint64              { return wire.TupleID(uint32(i%2), uint64(i/2)) }
func (s synth) clockB(t float64) uint64 { return uint64(s.scale*t + s.offset) }

// write creates the run directory: format marker, relation and logs.
func (s synth) write(t testing.TB) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	var sessions []*probing.Session
	names := []string{"a", "b"}
	if s.recvOnC {
		names = append(names, "c")
	}
	for _, start := range []float64{1e9, t0 + s.span() + 0.2e9} {
		ses := &probing.Session{}
		for _, n := range names {
			info := probing.Info{TSCHz: 1e9, Machine: "boot-" + n}
			if s.oneMachine {
				info.Machine = "boot-a"
			}
			ses.Nodes = append(ses.Nodes, probing.Node{Name: n, Info: info})
		}
		now := start
		for _, x := range names {
			for _, y := range names {
				if x == y {
					continue
				}
				var probes []tsc.Probe
				for i := 0; i < 100; i++ {
					fwd, back := 20e3+rng.Float64()*30e3, 15e3+rng.Float64()*40e3
					probes = append(probes, tsc.Probe{ASend: s.clock(x, now), BRecv: s.clock(y, now+fwd), BReply: s.clock(y, now+fwd+1e3), ABack: s.clock(x, now+fwd+1e3+back)})
					now += 300e3
				}
				ses.Pairs = append(ses.Pairs, probing.Pair{A: x, B: y, Probes: probes})
			}
		}
		sessions = append(sessions, ses)
	}
	rf, err := probing.Relate(sessions, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rf)
	must(t, os.WriteFile(filepath.Join(s.dir, "relation.json"), b, 0o644))
	must(t, os.WriteFile(filepath.Join(s.dir, "config.json"), []byte(`{"agents": [{"role": "receiver", "tsc_hz": 1e9}]}`), 0o644))
	must(t, os.WriteFile(filepath.Join(s.dir, rundir.FormatFile), []byte(`{"format": "cloudprofiler-go run directory", "version": 2}`), 0o644))
	for _, n := range names {
		must(t, os.MkdirAll(filepath.Join(s.dir, "profiles", n), 0o755))
	}
	p := profiler.New(time.Hour)
	open := func(node, ch string, cfg profiler.Config) *profiler.Channel {
		cfg.Path = filepath.Join(s.dir, "profiles", node, ch+".log")
		c, err := p.Open(node+"/"+ch, cfg)
		must(t, err)
		return c
	}
	// blocks of 64 k records: a truncated file keeps its first blocks
	emit := open("b", "emit.0", profiler.Config{Handler: profiler.HandlerBuffered, BlockSize: 1 << 16})
	recv := open(s.recvNode(), "receive.0", profiler.Config{Handler: profiler.HandlerBuffered, BlockSize: 1 << 16})
	cons := open("a", "consumed", profiler.Config{Handler: profiler.HandlerXoY, X: 1, Y: 10, BlockSize: 1 << 16})
	for i := 0; i < s.n; i++ {
		emit.LogTSAt(s.clockB(s.t(i)), tupleID(i))
	}
	for i := 0; i < s.n; i++ {
		if !lost(i) {
			recv.LogTSAt(s.clock(s.recvNode(), s.t(i)+lat1(i)), tupleID(i))
		}
	}
	// consumed in the order of its times (lat2 varies, but by less than
	// the gap between tuples, so the order is the ids')
	for i := 0; i < s.n; i++ {
		if !lost(i) {
			cons.LogTSAt(uint64(s.t(i)+lat1(i)+lat2(i)), tupleID(i))
		}
	}
	must(t, p.Close())
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func percentile(v []float64, q float64) float64 {
	sort.Float64s(v)
	return v[int(math.Ceil(q/100*float64(len(v))))-1]
}

// TestSyntheticExactAnswers checks the analysis against known latencies
// and a known clock relation: every cross-node bound contains the truth,
// same-node latencies on the reference are exact, and the missing and
// unsampled tuples are counted exactly.
func TestSyntheticExactAnswers(t *testing.T) {
	s := synth{n: 20000, scale: 0.75 * (1 + 200e-6), offset: 5e11, dir: t.TempDir()}
	s.write(t)
	d, err := rundir.Open(s.dir)
	must(t, err)
	truth := map[[2]string]map[uint64]float64{{"emit", "receive"}: {}, {"receive", "consumed"}: {}, {"emit", "consumed"}: {}}
	var lost1, recvUnsampled, sampledN int
	var l2 []float64
	for i := 0; i < s.n; i++ {
		id := tupleID(i)
		truth[[2]string{"emit", "receive"}][id] = lat1(i)
		truth[[2]string{"receive", "consumed"}][id] = lat2(i)
		truth[[2]string{"emit", "consumed"}][id] = lat1(i) + lat2(i)
		switch {
		case lost(i):
			lost1++
		case sampled(id):
			sampledN++
			l2 = append(l2, lat2(i))
		default:
			recvUnsampled++
		}
	}
	checked := 0
	rep, err := Analyze(d, Options{Visit: func(m Match) {
		want := truth[[2]string{m.From, m.To}][m.ID]
		if math.Abs(m.LatencyNs-want) > m.ErrorNs+2 {
			t.Fatalf("%s -> %s, tuple %x: %.0f ± %.0f ns does not contain the true %.0f", m.From, m.To, m.ID, m.LatencyNs, m.ErrorNs, want)
		}
		checked++
	}})
	must(t, err)
	if rep.Reference != "a" || rep.TSCHz != 1e9 {
		t.Fatalf("reference %s at %v Hz", rep.Reference, rep.TSCHz)
	}
	byPair := map[string]PairResult{}
	for _, p := range rep.Pairs {
		byPair[p.From+">"+p.To] = p
	}
	er, rc, ec := byPair["emit>receive"], byPair["receive>consumed"], byPair["emit>consumed"]
	if er.OnlyFrom != uint64(lost1) || er.OnlyTo != 0 || rc.OnlyFrom != uint64(recvUnsampled) || rc.OnlyTo != 0 || ec.OnlyFrom != uint64(lost1+recvUnsampled) {
		t.Fatalf("missing counts: emit>receive %d/%d (want %d), receive>consumed %d/%d (want %d), emit>consumed %d (want %d)",
			er.OnlyFrom, er.OnlyTo, lost1, rc.OnlyFrom, rc.OnlyTo, recvUnsampled, ec.OnlyFrom, lost1+recvUnsampled)
	}
	if len(rc.Groups) != 1 || rc.Groups[0].Name != "same node" || rc.Groups[0].Error.Max != 0 || rc.Groups[0].Latency.Count != uint64(sampledN) {
		t.Fatalf("receive>consumed on the reference must be exact: %+v", rc.Groups)
	}
	// exact to the histogram's 3 significant digits
	for _, q := range []struct {
		got  int64
		perc float64
	}{{rc.Groups[0].Latency.P50, 50}, {rc.Groups[0].Latency.P99, 99}} {
		if want := percentile(l2, q.perc); math.Abs(float64(q.got)-want) > want*1e-3+1 {
			t.Fatalf("receive>consumed p%v = %d, want %.0f", q.perc, q.got, want)
		}
	}
	if len(er.Groups) != 1 || er.Groups[0].Name != "cross node" || er.Groups[0].Latency.Count != uint64(s.n-lost1) || er.Groups[0].Error.P50 <= 0 {
		t.Fatalf("emit>receive: %+v", er.Groups)
	}
	if want := uint64(s.n-lost1) + uint64(sampledN)*2; uint64(checked) != want {
		t.Fatalf("visited %d matches, want %d", checked, want)
	}
	var sb strings.Builder
	rep.WriteText(&sb)
	t.Logf("\n%s", sb.String())
}

// TestAgentsOnOneMachineShareAClock: when the sender's and the
// receiver's agents report one boot id, the analysis reads one clock:
// emit -> receive is exact (no clock error, though the probes bound the
// relation to tens of µs) and grouped as "same machine".
func TestAgentsOnOneMachineShareAClock(t *testing.T) {
	s := synth{n: 5000, scale: 1, offset: 0, dir: t.TempDir(), oneMachine: true}
	s.write(t)
	d, err := rundir.Open(s.dir)
	must(t, err)
	checked := 0
	rep, err := Analyze(d, Options{Visit: func(m Match) {
		if m.From == "emit" && m.To == "receive" {
			i := -1
			for k := 0; k < s.n && i < 0; k++ {
				if tupleID(k) == m.ID {
					i = k
				}
			}
			if m.ErrorNs != 0 || math.Abs(m.LatencyNs-lat1(i)) > 2 {
				t.Fatalf("tuple %x: %.0f ± %.0f ns, want exactly %.0f", m.ID, m.LatencyNs, m.ErrorNs, lat1(i))
			}
			checked++
		}
	}})
	must(t, err)
	for _, p := range rep.Pairs {
		if p.From == "emit" && p.To == "receive" {
			if len(p.Groups) != 1 || p.Groups[0].Name != "same machine" || p.Groups[0].Error.Max != 0 {
				t.Fatalf("emit>receive on one machine: %+v", p.Groups)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no emit -> receive matches")
	}
}

// TestAcrossNonReferenceNodes: emit on b, receive on c, neither the
// reference: every bound holds, and the per-record choice of the tightest
// case (Scenario 3 through the direct b–c relation, or both ends
// translated) is never wider than translating both ends.
func TestAcrossNonReferenceNodes(t *testing.T) {
	s := synth{n: 20000, scale: 0.75 * (1 + 200e-6), offset: 5e11, dir: t.TempDir(), recvOnC: true}
	s.write(t)
	d, err := rundir.Open(s.dir)
	must(t, err)
	tr, err := newTranslator(d, []string{"a", "b", "c"}, false)
	must(t, err)
	var chosen, sum float64
	n := 0
	rep, err := Analyze(d, Options{Pairs: [][2]string{{"emit", "receive"}}, Visit: func(m Match) {
		if math.Abs(m.LatencyNs-lat1(int(m.ID>>48)+2*int(m.ID&(1<<48-1)))) > m.ErrorNs+2 {
			t.Fatalf("tuple %x: %.0f ± %.0f misses the truth", m.ID, m.LatencyNs, m.ErrorNs)
		}
		chosen += m.ErrorNs
		n++
	}})
	must(t, err)
	k := 0
	for i := 0; i < s.n; i++ {
		a, ok1 := tr.point(1, s.clockB(s.t(i)))
		b, ok2 := tr.point(2, s.clock("c", s.t(i)+lat1(i)))
		if !lost(i) && ok1 && ok2 {
			sum, k = sum+a.Err+b.Err, k+1
		}
	}
	if n == 0 || len(rep.Pairs) != 1 || rep.Pairs[0].Groups[0].Name != "cross node" {
		t.Fatalf("emit -> receive across b and c: %+v", rep.Pairs)
	}
	meanChosen, meanSum := chosen/float64(n), sum/float64(k)
	t.Logf("%d tuples across b and c: mean half-width %.0f ns (both ends translated: %.0f ns)", n, meanChosen, meanSum)
	if meanChosen > meanSum+1 {
		t.Fatalf("the chosen bounds (mean %.0f) are wider than translating both ends (%.0f)", meanChosen, meanSum)
	}
}

// TestDamagedRunDirectory: an unknown format version is refused with the
// version named; a truncated log and a missing relation are reported, and
// everything intact is still analysed.
func TestDamagedRunDirectory(t *testing.T) {
	s := synth{n: 300_000, scale: 1.1, offset: 1e10, dir: t.TempDir()}
	s.write(t)
	// truncate the receive log in its middle
	path := filepath.Join(s.dir, "profiles", "a", "receive.0.log")
	data, _ := os.ReadFile(path)
	must(t, os.WriteFile(path, data[:len(data)*2/3], 0o644))
	must(t, os.Remove(filepath.Join(s.dir, "relation.json")))
	d, err := rundir.Open(s.dir)
	must(t, err)
	rep, err := Analyze(d, Options{})
	must(t, err)
	all := strings.Join(rep.Problems, "\n")
	for _, want := range []string{"summary.json is missing", "no relation.json", "receive.0.log", "offset", "emit -> receive not joined"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems do not mention %q:\n%s", want, all)
		}
	}
	var sb strings.Builder
	rep.WriteText(&sb)
	t.Logf("\n%s", sb.String())
	// receive -> consumed is on one node: still analysed, over the intact part
	for _, p := range rep.Pairs {
		if p.From == "receive" && p.To == "consumed" && (len(p.Groups) != 1 || p.Groups[0].Latency.Count == 0) {
			t.Fatalf("receive>consumed not analysed: %+v", p)
		}
		if p.From == "emit" && p.Skipped == "" {
			t.Fatalf("%s>%s: cross-node pairs without a relation must be skipped, saying why: %+v", p.From, p.To, p)
		}
	}
	must(t, os.WriteFile(filepath.Join(s.dir, "config.json"), []byte(`{"agents": [{"role": "receiver", "tsc_hz": 1e9}]}`), 0o644))
	must(t, os.WriteFile(filepath.Join(s.dir, rundir.FormatFile), []byte(`{"format": "cloudprofiler-go run directory", "version": 9}`), 0o644))
	if _, err := rundir.Open(s.dir); err == nil || !strings.Contains(err.Error(), "format version 9") {
		t.Fatalf("unknown version: %v", err)
	}
	if _, err := rundir.Open(filepath.Join(s.dir, "nope")); err == nil {
		t.Fatal("a missing directory was opened")
	}
}

// BenchmarkAnalyze joins a synthetic run of b.N tuples at three points
// (3 pairs, ~8 records read per tuple): records per second, one core for
// the join, readers decompressing beside it.
func BenchmarkAnalyze(b *testing.B) {
	s := synth{n: max(b.N, 1000), scale: 0.75, offset: 5e11, dir: b.TempDir()}
	s.write(b)
	d, err := rundir.Open(s.dir)
	must(b, err)
	b.ResetTimer()
	rep, err := Analyze(d, Options{})
	must(b, err)
	b.ReportMetric(rep.RecordsPerSec/1e6, "Mrecords/s")
}

// TestBenchAnalyzeScale (CP_BENCH=1, part of make bench): a synthetic run
// whose logs hold ~100 M records (CP_BENCH_ANALYZE_TUPLES tuples, default
// 48 M: emit, receive and 1-in-10 consumed), analysed with its time, rate
// and the process's peak resident memory.
func TestBenchAnalyzeScale(t *testing.T) {
	if os.Getenv("CP_BENCH") == "" {
		t.Skip("set CP_BENCH=1 (make bench) to run the 100 M record analysis")
	}
	n := 48_000_000
	if v := os.Getenv("CP_BENCH_ANALYZE_TUPLES"); v != "" {
		fmt.Sscan(v, &n)
	}
	s := synth{n: n, scale: 0.75 * (1 + 200e-6), offset: 5e11, dir: t.TempDir()}
	gen := time.Now()
	s.write(t)
	var logRecords uint64
	d, err := rundir.Open(s.dir)
	must(t, err)
	for _, nf := range d.Nodes {
		for _, paths := range nf.Logs {
			for _, p := range paths {
				f, _ := os.Open(p)
				_, _ = profiler.ReadBlocks(f, func(r []profiler.Record) error { logRecords += uint64(len(r)); return nil })
				f.Close()
			}
		}
	}
	t.Logf("generated %d tuples, %d records in the logs, in %v (peak RSS so far %s)", n, logRecords, time.Since(gen).Round(time.Second), peakRSS())
	runtime.GC()
	debug.FreeOSMemory()
	// reset the high-water mark, so the peak below is the analysis's own
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	rep, err := Analyze(d, Options{})
	must(t, err)
	t.Logf("ANALYZE %d log records (%d read across the 3 pairs) in %.1fs: %.2f M records/s read and joined; peak RSS %s",
		logRecords, rep.Records, rep.Elapsed, rep.RecordsPerSec/1e6, peakRSS())
}

// peakRSS is the process's high-water resident memory (VmHWM).
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:"))
		}
	}
	return "unknown"
}

// TestReuseJoins: an analysis that takes the joins an earlier pass ran
// (analyze --pag) reports exactly what joining again would, and says
// which pairs it took.
func TestReuseJoins(t *testing.T) {
	s := synth{n: 5000, scale: 0.75 * (1 + 200e-6), offset: 5e11, dir: t.TempDir()}
	s.write(t)
	d, err := rundir.Open(s.dir)
	must(t, err)
	run, _, err := OpenJoins(d, 0)
	must(t, err)
	for _, pr := range [][2]string{{"emit", "receive"}, {"receive", "consumed"}} {
		if skip, probs := run.Join(pr[0], pr[1], func(Match) {}, nil); skip != "" || len(probs) > 0 {
			t.Fatalf("join %v: %s %v", pr, skip, probs)
		}
	}
	fresh, err := Analyze(d, Options{})
	must(t, err)
	reused, err := Analyze(d, Options{Reuse: run})
	must(t, err)
	a, _ := json.Marshal(fresh.Pairs)
	b, _ := json.Marshal(reused.Pairs)
	if string(a) != string(b) || fresh.Records != reused.Records {
		t.Fatalf("reused joins differ from fresh ones:\n%s\n%s", a, b)
	}
	if reused.Reused != 2 || fresh.Reused != 0 || reused.ReusedRecords == 0 || reused.ReusedRecords >= reused.Records {
		t.Fatalf("reused %d pairs (%d records of %d), fresh %d", reused.Reused, reused.ReusedRecords, reused.Records, fresh.Reused)
	}
	// A different lag, or a visitor that needs the tuples, joins again.
	again, err := Analyze(d, Options{Reuse: run, Lag: 2 * DefaultLag})
	must(t, err)
	if again.Reused != 0 {
		t.Fatalf("joins of another lag were reused")
	}
	n := 0
	visited, err := Analyze(d, Options{Reuse: run, Visit: func(Match) { n++ }})
	must(t, err)
	if visited.Reused != 0 || n == 0 {
		t.Fatalf("a visitor got %d tuples with %d reused pairs", n, visited.Reused)
	}
}
