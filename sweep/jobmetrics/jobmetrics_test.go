package jobmetrics

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/stage"
)

// A Flink task manager's exposition, trimmed: two subtasks of a task
// whose name has spaces, an operator-scoped counter, and metrics that are
// not the mapping's.
const flinkText = `# TYPE flink_taskmanager_job_task_busyTimeMsPerSecond gauge
flink_taskmanager_job_task_busyTimeMsPerSecond{job_name="ysb",task_name="Window Count",subtask_index="0"} 900
flink_taskmanager_job_task_busyTimeMsPerSecond{job_name="ysb",task_name="Window Count",subtask_index="1"} 700
flink_taskmanager_job_task_busyTimeMsPerSecond{job_name="ysb",task_name="join",subtask_index="0"} 100
# TYPE flink_taskmanager_job_task_backPressuredTimeMsPerSecond gauge
flink_taskmanager_job_task_backPressuredTimeMsPerSecond{job_name="ysb",task_name="Window Count",subtask_index="0"} 0
flink_taskmanager_job_task_backPressuredTimeMsPerSecond{job_name="ysb",task_name="Window Count",subtask_index="1"} 100
flink_taskmanager_job_task_backPressuredTimeMsPerSecond{job_name="ysb",task_name="join",subtask_index="0"} 600
# TYPE flink_taskmanager_job_task_idleTimeMsPerSecond gauge
flink_taskmanager_job_task_idleTimeMsPerSecond{job_name="ysb",task_name="Window Count",subtask_index="0"} 100
flink_taskmanager_job_task_idleTimeMsPerSecond{job_name="ysb",task_name="Window Count",subtask_index="1"} 200
flink_taskmanager_job_task_idleTimeMsPerSecond{job_name="ysb",task_name="join",subtask_index="0"} 300
# TYPE flink_taskmanager_job_task_operator_numRecordsIn counter
flink_taskmanager_job_task_operator_numRecordsIn{job_name="ysb",task_name="join",operator_name="join",subtask_index="0"} 5000
# TYPE flink_taskmanager_job_task_operator_numRecordsInPerSecond gauge
flink_taskmanager_job_task_operator_numRecordsInPerSecond{job_name="ysb",task_name="Window Count",operator_name="Window Count",subtask_index="0"} 300
flink_taskmanager_job_task_operator_numRecordsInPerSecond{job_name="ysb",task_name="Window Count",operator_name="Window Count",subtask_index="1"} 200
# TYPE flink_jobmanager_numRunningJobs gauge
flink_jobmanager_numRunningJobs 1
`

func TestParseFlinksNames(t *testing.T) {
	ops, err := Flink().Parse(strings.NewReader(flinkText))
	if err != nil {
		t.Fatal(err)
	}
	w, j := ops["Window_Count"], ops["join"]
	if len(ops) != 2 || w == nil || j == nil {
		t.Fatalf("operators %v; want Window_Count and join", ops)
	}
	// subtasks: times averaged, records summed
	if w.Times != 2 || w.Busy != 800 || w.BackPressured != 50 || w.Idle != 150 || !w.HasRate || w.Rate != 500 || w.HasRecords {
		t.Errorf("Window Count: %+v", *w)
	}
	if j.Times != 1 || j.Busy != 100 || j.BackPressured != 600 || !j.HasRecords || j.Records != 5000 {
		t.Errorf("join: %+v", *j)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"negative", `flink_taskmanager_job_task_busyTimeMsPerSecond{task_name="a"} -1` + "\n", "is -1"},
		{"over a second", `flink_taskmanager_job_task_busyTimeMsPerSecond{task_name="a"} 2000` + "\n", "ms per second"},
		{"two names made one", `busyTimeMsPerSecond{task_name="a b"} 1` + "\n" + `busyTimeMsPerSecond{task_name="a/b"} 1` + "\n", "would both be named"},
		{"not the text format", "{{{", "parse the job's metrics"},
	} {
		if _, err := Flink().Parse(strings.NewReader(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestRecorderIntegratesTheRates: ms per second over the time between
// scrapes become cumulative ns, a counter stays a counter (from its first
// value), a rate is integrated, and a counter that goes back is an error.
func TestRecorderIntegratesTheRates(t *testing.T) {
	r := NewRecorder(Flink(), 100e6)
	op := func(busy, idle, records float64) map[string]*Operator {
		return map[string]*Operator{"join": {Busy: busy, Idle: idle, Times: 1, Records: records, HasRecords: true},
			"window": {Busy: 250, Idle: 750, Times: 1, Rate: 1000, HasRate: true}}
	}
	for i, at := range []int64{1e9, 1.5e9, 2.5e9} {
		if err := r.Add(op(500, 500, float64(1000+100*i)), at); err != nil {
			t.Fatal(err)
		}
	}
	res := r.Result()
	s := res.StageSeries
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	tot := map[string]stage.Total{}
	for _, x := range s.Totals(0, 0) {
		tot[x.Name] = x
	}
	// 1.5 s after the first scrape: half of it busy
	if j := tot["join"]; j.Seconds["busy"] != 0.75 || j.Seconds["waiting"] != 0.75 || j.Items != 200 {
		t.Errorf("join: %+v", j)
	}
	if w := tot["window"]; w.Seconds["busy"] != 0.375 || w.Items != 1500 {
		t.Errorf("window: %+v", w)
	}
	if err := r.Add(op(500, 500, 900), 3e9); err == nil || !strings.Contains(err.Error(), "the job restarted") {
		t.Errorf("a counter that went back: %v", err)
	}
}

func TestLoadMapping(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, fmt.Sprintf("m%d.yaml", len(s)))
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	m, err := LoadMapping(write("job: ysb\nbusy: busy_ms\noperator_labels: [op]\nedges: [[join, window]]\n"))
	if err != nil || m.Job != "ysb" || m.Busy != "busy_ms" || m.Idle != Flink().Idle || len(m.Edges) != 1 {
		t.Errorf("%+v, %v; want the file's names over Flink's", m, err)
	}
	for _, bad := range []string{"jobb: x\n", "job: a/b\n", "edges: [[a, a]]\n", "operator_labels: []\n", "records_in: ''\nrecords_in_rate: ''\n"} {
		if _, err := LoadMapping(write(bad)); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// FuzzParse: whatever a job's metrics endpoint answers, Parse returns
// bounded, valid operators or an error.
func FuzzParse(f *testing.F) {
	f.Add([]byte(flinkText))
	f.Add([]byte("busyTimeMsPerSecond{task_name=\"x\"} NaN\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ops, err := Flink().Parse(strings.NewReader(string(b)))
		if err != nil {
			return
		}
		if len(ops) > MaxOperators {
			t.Fatalf("%d operators", len(ops))
		}
		for name, o := range ops {
			if !validName(name) || o.Busy < 0 || o.Busy > 1050 || o.Records < 0 {
				t.Fatalf("operator %q: %+v", name, *o)
			}
		}
	})
}

func BenchmarkParse(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := Flink().Parse(strings.NewReader(flinkText)); err != nil {
			b.Fatal(err)
		}
	}
}
