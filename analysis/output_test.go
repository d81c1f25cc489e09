package analysis

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/rundir"
)

// TestReturnTripsAndFiles: a ret-start channel's starts and acks (one
// clock) give exact round trips and the unacknowledged count; the CSV
// and JSON files say what the report says, row for row.
func TestReturnTripsAndFiles(t *testing.T) {
	s := synth{n: 3000, scale: 0.75, offset: 5e11, dir: t.TempDir()}
	s.write(t)
	// emit.1 on the reference node "a" with ret-start's two logs: every
	// third tuple is never acknowledged, the others after 10..19 µs.
	p := profiler.New(0)
	open := func(name string) *profiler.Channel {
		c, err := p.Open(name, profiler.Config{Handler: profiler.HandlerBuffered, Path: filepath.Join(s.dir, "profiles", "a", name)})
		must(t, err)
		return c
	}
	starts, acks := open("emit.1.log"), open("emit.1.log.ack")
	var acked int
	minRT, maxRT := int64(1<<62), int64(0)
	for i := 0; i < s.n; i++ {
		at := uint64(2e9 + i*1000)
		starts.LogTSAt(at, uint64(i))
		if i%3 != 0 {
			rt := int64(10000 + (i%10)*1000)
			acks.LogTSAt(at+uint64(rt), uint64(i))
			acked++
			minRT, maxRT = min(minRT, rt), max(maxRT, rt)
		}
	}
	must(t, p.Close())
	d, err := rundir.Open(s.dir)
	must(t, err)
	rep, err := Analyze(d, Options{})
	must(t, err)
	if len(rep.ReT) != 1 {
		t.Fatalf("return trips: %+v", rep.ReT)
	}
	r := rep.ReT[0]
	if r.Node != "a" || r.Channel != "emit.1" || r.RoundTrip.Count != uint64(acked) || r.Unacked != uint64(s.n-acked) ||
		r.RoundTrip.Min != minRT || r.RoundTrip.Max != maxRT {
		t.Fatalf("return trip %+v, want %d acked, %d not, %d..%d ns", r, acked, s.n-acked, minRT, maxRT)
	}

	must(t, rep.WriteFiles(s.dir))
	f, err := os.Open(filepath.Join(s.dir, rundir.AnalysisCSVFile))
	must(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	must(t, err)
	var want [][]string
	for _, p := range rep.Pairs {
		for _, g := range p.Groups {
			want = append(want, []string{p.From, p.To, g.Name, strconv.FormatUint(g.Latency.Count, 10), strconv.FormatInt(g.Latency.Min, 10),
				strconv.FormatInt(g.Latency.Max, 10), strconv.FormatUint(p.OnlyFrom, 10)})
		}
	}
	if len(rows) != len(want)+1 || len(want) == 0 {
		t.Fatalf("%s: %d rows, want a header and %d", rundir.AnalysisCSVFile, len(rows), len(want))
	}
	if got := rows[0]; len(got) != len(CSVHeader) || got[0] != "from" || got[len(got)-1] != "unbounded" {
		t.Fatalf("header %v", got)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for i, w := range want {
		row := rows[i+1]
		got := []string{row[col["from"]], row[col["to"]], row[col["group"]], row[col["count"]], row[col["latency_min_ns"]],
			row[col["latency_max_ns"]], row[col["only_from"]]}
		for j := range w {
			if got[j] != w[j] {
				t.Errorf("row %d: %v, want %v", i+1, got, w)
				break
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(s.dir, rundir.AnalysisFile))
	must(t, err)
	var back Report
	must(t, json.Unmarshal(b, &back))
	if len(back.Pairs) != len(rep.Pairs) || len(back.ReT) != 1 || back.ReT[0].RoundTrip != r.RoundTrip {
		t.Fatalf("%s does not round-trip the report", rundir.AnalysisFile)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	if !bytes.Contains(text.Bytes(), []byte("emit.1 on a: "+strconv.Itoa(acked)+" round trips")) {
		t.Errorf("text lacks the return trips:\n%s", text.String())
	}
}
