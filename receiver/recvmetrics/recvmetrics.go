package recvmetrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cloudprofiler-go/cp/cpustat/cpumetrics"
	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/objfactory"
	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/servicerate/ratemetrics"
	"github.com/cloudprofiler-go/cp/stage/stagemetrics"
)

var (
	streamLabels  = []string{"lane", "stream"}
	descRecvT     = prometheus.NewDesc("cp_receiver_tuples_received_total", "Tuples in well-formed data buckets received.", streamLabels, nil)
	descRecvB     = prometheus.NewDesc("cp_receiver_buckets_received_total", "Data buckets received (duplicates excluded).", streamLabels, nil)
	descConsT     = prometheus.NewDesc("cp_receiver_tuples_consumed_total", "Tuples handed to the consumer (the system under test's source).", streamLabels, nil)
	descOOS       = prometheus.NewDesc("cp_receiver_buckets_out_of_sequence_total", "Buckets that did not arrive in sequence order.", streamLabels, nil)
	descDup       = prometheus.NewDesc("cp_receiver_buckets_duplicate_total", "Buckets received twice (discarded).", streamLabels, nil)
	descStale     = prometheus.NewDesc("cp_receiver_buckets_stale_total", "Buckets too far behind the stream's highest sequence number to check for duplication (discarded).", streamLabels, nil)
	descGap       = prometheus.NewDesc("cp_receiver_buckets_missing", "Sequence numbers skipped and not (yet) received.", streamLabels, nil)
	descEnded     = prometheus.NewDesc("cp_receiver_stream_ended", "1 once the stream's end marker was consumed.", streamLabels, nil)
	descMalformed = prometheus.NewDesc("cp_receiver_malformed_messages_total", "Messages skipped because they could not be decoded.", []string{"lane", "reason"}, nil)
	descOcc       = prometheus.NewDesc("cp_receiver_ring_occupancy_buckets", "Decoded buckets waiting for the consumer.", []string{"lane"}, nil)
	descCap       = prometheus.NewDesc("cp_receiver_ring_capacity_buckets", "Buckets in the lane's ring.", []string{"lane"}, nil)
	descBusy      = prometheus.NewDesc("cp_receiver_decode_busy_seconds_total", "Time the lane's deserializer spent decoding.", []string{"lane"}, nil)
	descStall     = prometheus.NewDesc("cp_receiver_deserializer_stalls_total", "Times the deserializer waited for the consumer to free a bucket.", []string{"lane"}, nil)
	descLat       = prometheus.NewDesc("cp_receiver_latency_seconds", "Intended send time to consumption, per tuple (sender and receiver clocks must agree: same host or NTP).", nil, nil)
	descConsAll   = prometheus.NewDesc("cp_receiver_consumed_tuples_total", "Tuples consumed over all streams.", nil, nil)
)

// For returns a receiver's metrics: its own, its threads' CPU, its
// stages' and their service rates (when tracked).
func For(r *receiver.Receiver) httpapi.Collectors {
	cs := httpapi.Collectors{collector{r}, cpumetrics.Collector{S: r.CPU()}, stagemetrics.Collector{Set: r.Stages()}}
	if r.Rates() != nil {
		cs = append(cs, ratemetrics.Rates{Of: r.Rates()})
	}
	return cs
}

type collector struct{ r *receiver.Receiver }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRecvT, descRecvB, descConsT, descOOS, descDup, descStale, descGap, descEnded, descMalformed, descOcc, descCap, descBusy, descStall, descLat, descConsAll} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	p := c.r.Snapshot()
	for _, l := range p.Lanes {
		ln := strconv.Itoa(l.Lane)
		for _, s := range l.Streams {
			lbl := []string{ln, strconv.FormatUint(uint64(s.Stream), 10)}
			counter(descRecvT, s.Received, lbl...)
			counter(descRecvB, s.Buckets, lbl...)
			counter(descConsT, s.Consumed, lbl...)
			counter(descOOS, s.OutOfSeq, lbl...)
			counter(descDup, s.Duplicates, lbl...)
			counter(descStale, s.Stale, lbl...)
			gauge(descGap, float64(s.Missing), lbl...)
			ended := 0.0
			if s.Ended {
				ended = 1
			}
			gauge(descEnded, ended, lbl...)
		}
		for i, name := range objfactory.ReasonNames {
			counter(descMalformed, l.Malformed[i], ln, name)
		}
		gauge(descOcc, float64(l.Occupancy), ln)
		gauge(descCap, float64(l.Capacity), ln)
		ch <- prometheus.MustNewConstMetric(descBusy, prometheus.CounterValue, l.DecodeBusyS, ln)
		counter(descStall, l.Stalls, ln)
	}
	total, sum, upper := p.Latency.Cumulative(1e-9)
	ch <- prometheus.MustNewConstHistogram(descLat, total, sum, upper)
	counter(descConsAll, p.Consumed)
}
