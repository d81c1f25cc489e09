package profiler

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	descCounterTotal = prometheus.NewDesc("cp_profiler_counter_total", "Calls counted by a periodic-counter channel (SPC/MPC), across handler switches.", []string{"channel"}, nil)
	descLastPeriod   = prometheus.NewDesc("cp_profiler_counter_last_period", "Calls counted in the channel's last complete sampling period (all counter channels are sampled at the same instants).", []string{"channel"}, nil)
	descPeriod       = prometheus.NewDesc("cp_profiler_sample_period_seconds", "The counters' sampling period.", nil, nil)
	descChannel      = prometheus.NewDesc("cp_profiler_channel", "An open channel and its current handler (value 1).", []string{"channel", "handler"}, nil)
)

// Describe implements prometheus.Collector: a profiler's counter series
// and its channels are live metrics.
func (p *Profiler) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCounterTotal, descLastPeriod, descPeriod, descChannel} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (p *Profiler) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descPeriod, prometheus.GaugeValue, p.sampler.period.Seconds())
	p.mu.Lock()
	names := make([]string, 0, len(p.channels))
	for name := range p.channels {
		names = append(names, name)
	}
	chans := p.channels
	p.mu.Unlock()
	sort.Strings(names)
	for _, name := range names {
		p.mu.Lock()
		c := chans[name]
		p.mu.Unlock()
		h := c.Config().Handler
		if h == "" {
			h = HandlerNull
		}
		ch <- prometheus.MustNewConstMetric(descChannel, prometheus.GaugeValue, 1, name, h)
	}
	p.sampler.mu.Lock()
	defer p.sampler.mu.Unlock()
	for name, ser := range p.sampler.chans {
		ch <- prometheus.MustNewConstMetric(descCounterTotal, prometheus.CounterValue, float64(ser.total()), name)
		if n := len(ser.periods); n > 0 {
			ch <- prometheus.MustNewConstMetric(descLastPeriod, prometheus.GaugeValue, float64(ser.periods[n-1]), name)
		}
	}
}
