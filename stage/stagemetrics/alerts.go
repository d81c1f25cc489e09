package stagemetrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	descFiring = prometheus.NewDesc("cp_watch_alert_firing", "1 while a live invariant does not hold (cpsweep watch), 0 once it holds again.", []string{"invariant", "stage"}, nil)
	descFired  = prometheus.NewDesc("cp_watch_alerts_total", "Times a live invariant started not to hold (cpsweep watch).", []string{"invariant", "stage"}, nil)
)

// Alerts is the live invariants of a watcher (a *watch.Watcher) as
// Prometheus series, keyed "invariant/stage".
type Alerts struct {
	Of interface {
		Firing() map[string]bool
		Fired() map[string]int
	}
}

// Describe implements prometheus.Collector.
func (a Alerts) Describe(ch chan<- *prometheus.Desc) { ch <- descFiring; ch <- descFired }

// Collect implements prometheus.Collector.
func (a Alerts) Collect(ch chan<- prometheus.Metric) {
	firing := a.Of.Firing()
	for key, n := range a.Of.Fired() {
		inv, st, _ := strings.Cut(key, "/")
		v := 0.0
		if firing[key] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descFiring, prometheus.GaugeValue, v, inv, st)
		ch <- prometheus.MustNewConstMetric(descFired, prometheus.CounterValue, float64(n), inv, st)
	}
}
