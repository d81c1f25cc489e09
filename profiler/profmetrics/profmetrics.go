package profmetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cloudprofiler-go/cp/profiler"
)

var (
	descCounterTotal = prometheus.NewDesc("cp_profiler_counter_total", "Calls counted by a periodic-counter channel (SPC/MPC), across handler switches.", []string{"channel"}, nil)
	descLastPeriod   = prometheus.NewDesc("cp_profiler_counter_last_period", "Calls counted in the channel's last complete sampling period (all counter channels are sampled at the same instants).", []string{"channel"}, nil)
	descPeriod       = prometheus.NewDesc("cp_profiler_sample_period_seconds", "The counters' sampling period.", nil, nil)
	descChannel      = prometheus.NewDesc("cp_profiler_channel", "An open channel and its current handler (value 1).", []string{"channel", "handler"}, nil)
)

// Collector is a profiler's live metrics: its counter series and its
// channels.
type Collector struct{ P *profiler.Profiler }

// Describe implements prometheus.Collector.
func (c Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCounterTotal, descLastPeriod, descPeriod, descChannel} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c Collector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descPeriod, prometheus.GaugeValue, c.P.SamplePeriod().Seconds())
	for _, info := range c.P.Channels() {
		ch <- prometheus.MustNewConstMetric(descChannel, prometheus.GaugeValue, 1, info.Name, info.Handler)
	}
	for _, st := range c.P.Counters() {
		ch <- prometheus.MustNewConstMetric(descCounterTotal, prometheus.CounterValue, float64(st.Total), st.Channel)
		if st.HasPeriod {
			ch <- prometheus.MustNewConstMetric(descLastPeriod, prometheus.GaugeValue, float64(st.LastPeriod), st.Channel)
		}
	}
}
