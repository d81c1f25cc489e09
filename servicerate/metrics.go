package servicerate

import (
	"github.com/prometheus/client_golang/prometheus"
)

var descRate = prometheus.NewDesc("cp_stage_service_rate",
	"A stage's estimated service rate (tuples/s it could process were it never starved nor blocked), by method (raftlib, busy_time); absent while the estimate has not converged.",
	[]string{"stage", "method"}, nil)

// Describe sends the service-rate metric's description.
func (t *Tracker) Describe(ch chan<- *prometheus.Desc) { ch <- descRate }

// Collect sends every converged estimate as of the latest stage sample.
func (t *Tracker) Collect(ch chan<- prometheus.Metric) {
	for _, r := range t.Rates() {
		if v, ok := r.Value(); ok {
			ch <- prometheus.MustNewConstMetric(descRate, prometheus.GaugeValue, v, r.Stage, r.Method)
		}
	}
}
