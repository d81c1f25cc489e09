package stagemetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cloudprofiler-go/cp/stage"
)

var (
	descSeconds = prometheus.NewDesc("cp_stage_seconds_total", "Time a pipeline stage spent in each of its states (as of the latest stage sample).", []string{"stage", "state"}, nil)
	descItems   = prometheus.NewDesc("cp_stage_items_total", "Items (buckets) a pipeline stage processed (as of the latest stage sample).", []string{"stage"}, nil)
	descQueue   = prometheus.NewDesc("cp_stage_queue", "A pipeline stage's queue at the latest stage sample (stages with a queue counter only).", []string{"stage"}, nil)
	descLabel   = prometheus.NewDesc("cp_stage_label", "1 for a stage's FlowDiagnoser label at the latest snapshot (HEALTHY, DONTCARE, BLOCKED, STALLED), 0 for the others.", []string{"stage", "label"}, nil)
)

// Collector is a Set's metrics; a nil Set has none.
type Collector struct{ Set *stage.Set }

// Describe sends the stage metrics' descriptions.
func (c Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descSeconds
	ch <- descItems
	ch <- descQueue
	ch <- descLabel
}

// Collect sends every stage's counters as of the latest sample, and the
// labels set by Set.SetLabels.
func (c Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.Set
	if s == nil {
		return
	}
	accounts, readings := s.Readings()
	for i, a := range accounts {
		r := readings[i]
		for j, st := range stage.States(a.Kind()) {
			ch <- prometheus.MustNewConstMetric(descSeconds, prometheus.CounterValue, s.Clock().TicksToNs(r.Ticks[j])/1e9, a.Name(), st.Name)
		}
		ch <- prometheus.MustNewConstMetric(descItems, prometheus.CounterValue, float64(r.Items), a.Name())
		if a.HasQueue() {
			ch <- prometheus.MustNewConstMetric(descQueue, prometheus.GaugeValue, float64(r.Queue), a.Name())
		}
	}
	for name, label := range s.Labels() {
		for _, l := range stage.LabelNames {
			v := 0.0
			if l == label {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(descLabel, prometheus.GaugeValue, v, name, l)
		}
	}
}
