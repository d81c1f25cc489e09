package stagemetrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cloudprofiler-go/cp/stage"
)

// Flink's metric names, the convention a job in any language exports its
// operators by and cpsweep --job-metrics reads (docs/dataflow.md): the
// task's time per second busy, back-pressured and idle, and the
// operator's records in, with Flink's Prometheus reporter's prefixes and
// labels (job_name, task_name, operator_name, subtask_index).
const (
	FlinkTask     = "flink_taskmanager_job_task_"
	FlinkOperator = "flink_taskmanager_job_task_operator_"

	FlinkBusy          = "busyTimeMsPerSecond"
	FlinkBackPressured = "backPressuredTimeMsPerSecond"
	FlinkIdle          = "idleTimeMsPerSecond"
	FlinkRecordsIn     = "numRecordsIn"
	FlinkRecordsInRate = "numRecordsInPerSecond"
)

var (
	flinkTaskLabels = []string{"job_name", "task_name", "subtask_index"}
	flinkOpLabels   = []string{"job_name", "task_name", "operator_name", "subtask_index"}
	descBusy        = prometheus.NewDesc(FlinkTask+FlinkBusy, "Milliseconds per second the operator was busy over the latest sampling period (Flink's name).", flinkTaskLabels, nil)
	descPressured   = prometheus.NewDesc(FlinkTask+FlinkBackPressured, "Milliseconds per second the operator was blocked on its output over the latest sampling period (Flink's name).", flinkTaskLabels, nil)
	descIdle        = prometheus.NewDesc(FlinkTask+FlinkIdle, "Milliseconds per second the operator waited for input over the latest sampling period (Flink's name).", flinkTaskLabels, nil)
	descRecordsIn   = prometheus.NewDesc(FlinkOperator+FlinkRecordsIn, "Records (tuples) the operator has processed (Flink's name).", flinkOpLabels, nil)
	descRecordsRate = prometheus.NewDesc(FlinkOperator+FlinkRecordsInRate, "Records (tuples) per second the operator processed over the latest sampling period (Flink's name).", flinkOpLabels, nil)
)

// Flink is a job's operators (the stages of kind operator of a Set) as
// Flink's metrics: rates over the set's latest sampling period, so that
// a scraper polling at that period reads each period once.
type Flink struct {
	job       string
	clock     func(ticks uint64) float64 // ticks to ns
	mu        sync.Mutex
	prev, cur map[*stage.Account]flinkSample
}

type flinkSample struct {
	tsc uint64
	r   stage.Reading
}

// NewFlink serves set's operators as job's (job_name) Flink metrics,
// from its next sample on.
func NewFlink(set *stage.Set, job string) *Flink {
	f := &Flink{job: job, clock: set.Clock().TicksToNs, prev: map[*stage.Account]flinkSample{}, cur: map[*stage.Account]flinkSample{}}
	set.OnSample(f.sample)
	return f
}

func (f *Flink) sample(s stage.Snapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, a := range s.Accounts {
		if a.Kind() != stage.Operator {
			continue
		}
		if c, ok := f.cur[a]; ok {
			f.prev[a] = c
		}
		f.cur[a] = flinkSample{tsc: s.TSC, r: s.Readings[i]}
	}
}

// Describe sends the metrics' descriptions.
func (f *Flink) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBusy, descPressured, descIdle, descRecordsIn, descRecordsRate} {
		ch <- d
	}
}

// Collect sends each operator's rates over its latest period (an
// operator sampled once so far has its records only).
func (f *Flink) Collect(ch chan<- prometheus.Metric) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for a, c := range f.cur {
		op := a.Name()
		ch <- prometheus.MustNewConstMetric(descRecordsIn, prometheus.CounterValue, float64(c.r.Tuples), f.job, op, op, "0")
		p, ok := f.prev[a]
		if !ok || c.tsc <= p.tsc {
			continue
		}
		dt := f.clock(c.tsc-p.tsc) / 1e9 // s
		perS := func(state int) float64 { return f.clock(c.r.Ticks[state]-p.r.Ticks[state]) / 1e6 / dt }
		ch <- prometheus.MustNewConstMetric(descBusy, prometheus.GaugeValue, perS(stage.OpBusy), f.job, op, "0")
		ch <- prometheus.MustNewConstMetric(descPressured, prometheus.GaugeValue, perS(stage.OpBlocked), f.job, op, "0")
		ch <- prometheus.MustNewConstMetric(descIdle, prometheus.GaugeValue, perS(stage.OpWaiting), f.job, op, "0")
		ch <- prometheus.MustNewConstMetric(descRecordsRate, prometheus.GaugeValue, float64(c.r.Tuples-p.r.Tuples)/dt, f.job, op, op, "0")
	}
}
