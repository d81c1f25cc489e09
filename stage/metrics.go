package stage

import (
	"github.com/prometheus/client_golang/prometheus"
)

var (
	descSeconds = prometheus.NewDesc("cp_stage_seconds_total", "Time a pipeline stage spent in each of its states (as of the latest stage sample).", []string{"stage", "state"}, nil)
	descItems   = prometheus.NewDesc("cp_stage_items_total", "Items (buckets) a pipeline stage processed (as of the latest stage sample).", []string{"stage"}, nil)
	descQueue   = prometheus.NewDesc("cp_stage_queue", "A pipeline stage's queue at the latest stage sample (stages with a queue counter only).", []string{"stage"}, nil)
	descLabel   = prometheus.NewDesc("cp_stage_label", "1 for a stage's FlowDiagnoser label at the latest snapshot (HEALTHY, DONTCARE, BLOCKED, STALLED), 0 for the others.", []string{"stage", "label"}, nil)
)

// LabelNames are the diagnosis labels cp_stage_label reports.
var LabelNames = [...]string{"HEALTHY", "DONTCARE", "BLOCKED", "STALLED"}

// Describe sends the stage metrics' descriptions.
func (s *Set) Describe(ch chan<- *prometheus.Desc) {
	ch <- descSeconds
	ch <- descItems
	ch <- descQueue
	ch <- descLabel
}

// Collect sends every stage's counters as of the latest sample, and the
// labels set by SetLabels.
func (s *Set) Collect(ch chan<- prometheus.Metric) {
	if s == nil {
		return
	}
	accounts, readings := s.Readings()
	for i, a := range accounts {
		r := readings[i]
		for j, st := range kindStates[a.kind] {
			ch <- prometheus.MustNewConstMetric(descSeconds, prometheus.CounterValue, s.clock.TicksToNs(r.Ticks[j])/1e9, a.name, st.Name)
		}
		ch <- prometheus.MustNewConstMetric(descItems, prometheus.CounterValue, float64(r.Items), a.name)
		if a.queue != nil {
			ch <- prometheus.MustNewConstMetric(descQueue, prometheus.GaugeValue, float64(r.Queue), a.name)
		}
	}
	s.mu.Lock()
	labels := s.labels
	s.mu.Unlock()
	for stage, label := range labels {
		for _, l := range LabelNames {
			v := 0.0
			if l == label {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(descLabel, prometheus.GaugeValue, v, stage, l)
		}
	}
}

// SetLabels publishes the latest diagnosis (stage name to label) as
// cp_stage_label.
func (s *Set) SetLabels(labels map[string]string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.labels = labels
	s.mu.Unlock()
}
