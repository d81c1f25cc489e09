package ratemetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cloudprofiler-go/cp/servicerate"
)

var descRate = prometheus.NewDesc("cp_stage_service_rate",
	"A stage's estimated service rate (tuples/s it could process were it never starved nor blocked), by method (raftlib, busy_time); absent while the estimate has not converged.",
	[]string{"stage", "method"}, nil)

// Rates is the service-rate estimates of a tracker (a
// *servicerate.Tracker) as of its latest stage sample.
type Rates struct {
	Of interface{ Rates() []servicerate.Rate }
}

// Describe sends the service-rate metric's description.
func (r Rates) Describe(ch chan<- *prometheus.Desc) { ch <- descRate }

// Collect sends every converged estimate.
func (r Rates) Collect(ch chan<- prometheus.Metric) {
	for _, rate := range r.Of.Rates() {
		if v, ok := rate.Value(); ok {
			ch <- prometheus.MustNewConstMetric(descRate, prometheus.GaugeValue, v, rate.Stage, rate.Method)
		}
	}
}
