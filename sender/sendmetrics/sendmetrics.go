package sendmetrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cloudprofiler-go/cp/cpustat/cpumetrics"
	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/sender"
	"github.com/cloudprofiler-go/cp/servicerate/ratemetrics"
	"github.com/cloudprofiler-go/cp/stage/stagemetrics"
)

var (
	descEmitted = prometheus.NewDesc("cp_sender_tuples_emitted_total", "Tuples sent, per emission thread.", []string{"thread", "stream"}, nil)
	descBuckets = prometheus.NewDesc("cp_sender_buckets_emitted_total", "Buckets (ZeroMQ messages) sent.", []string{"thread", "stream"}, nil)
	descDropB   = prometheus.NewDesc("cp_sender_buckets_dropped_total", "Buckets not sent because the socket was full (overflow policy drop).", []string{"thread", "stream"}, nil)
	descDropT   = prometheus.NewDesc("cp_sender_tuples_dropped_total", "Tuples in dropped buckets.", []string{"thread", "stream"}, nil)
	descLate    = prometheus.NewDesc("cp_sender_late_slots_total", "Slots sent later than the late threshold after their intended time.", []string{"thread", "stream"}, nil)
	descLatency = prometheus.NewDesc("cp_sender_lateness_seconds", "Actual minus intended send time of each bucket.", []string{"thread", "stream"}, nil)
	descTarget  = prometheus.NewDesc("cp_sender_target_rate_tuples_per_second", "Configured total emission rate (0 = unpaced).", nil, nil)
	descCost    = prometheus.NewDesc("cp_sender_send_cost_seconds", "Measured cost of one send of one bucket.", nil, nil)
	descRunning = prometheus.NewDesc("cp_sender_running", "1 while the emission threads run.", nil, nil)
)

// For returns a sender's metrics: its own, its threads' CPU, its stages'
// and their service rates (when tracked).
func For(s *sender.Sender) httpapi.Collectors {
	cs := httpapi.Collectors{collector{s}, cpumetrics.Collector{S: s.CPU()}, stagemetrics.Collector{Set: s.Stages()}}
	if s.Rates() != nil {
		cs = append(cs, ratemetrics.Rates{Of: s.Rates()})
	}
	return cs
}

type collector struct{ s *sender.Sender }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descEmitted, descBuckets, descDropB, descDropT, descLate, descLatency, descTarget, descCost, descRunning} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	p := c.s.Snapshot()
	for _, t := range p.Threads {
		labels := []string{strconv.Itoa(t.ID), strconv.FormatUint(uint64(t.Stream), 10)}
		ch <- prometheus.MustNewConstMetric(descEmitted, prometheus.CounterValue, float64(t.Emitted), labels...)
		ch <- prometheus.MustNewConstMetric(descBuckets, prometheus.CounterValue, float64(t.Buckets), labels...)
		ch <- prometheus.MustNewConstMetric(descDropB, prometheus.CounterValue, float64(t.DroppedBuckets), labels...)
		ch <- prometheus.MustNewConstMetric(descDropT, prometheus.CounterValue, float64(t.DroppedTuples), labels...)
		ch <- prometheus.MustNewConstMetric(descLate, prometheus.CounterValue, float64(t.LateSlots), labels...)
		total, sum, upper := t.Lateness.Cumulative(1e-9)
		ch <- prometheus.MustNewConstHistogram(descLatency, total, sum, upper, labels...)
	}
	ch <- prometheus.MustNewConstMetric(descTarget, prometheus.GaugeValue, p.TargetRate)
	ch <- prometheus.MustNewConstMetric(descCost, prometheus.GaugeValue, p.SendCost.Seconds())
	running := 0.0
	if p.Running {
		running = 1
	}
	ch <- prometheus.MustNewConstMetric(descRunning, prometheus.GaugeValue, running)
}
