package receiver

import (
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cloudprofiler-go/cp/internal/histo"
	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/objfactory"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/servicerate"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/stage/stagemetrics"
)

func (r *Receiver) result(reason string) *tally.Result {
	res := &tally.Result{Reason: reason, Drain: r.cfg.Drain, MalformedBy: map[string]uint64{}, Errors: []string{}, Backlog: []tally.BacklogSample{}, Streams: []tally.StreamResult{},
		Injected: inject.NewRecord(r.cfg.Stalls, r.cfg.DecodeWork, r.cfg.WorkSchedule)}
	for _, name := range objfactory.ReasonNames {
		res.MalformedBy[name] = 0
	}
	clock := r.cfg.Clock
	res.Stages, res.ServiceRates = []stage.Total{}, []servicerate.Rate{} // always present (docs/json.md)
	if r.stages != nil {
		res.StageSeries = r.stages.Series()
		res.Stages = res.StageSeries.Totals(0, 0)
		res.ServiceRates = r.rates.Rates()
	}
	allComplete := true
	res.MalformedLatest = r.latestMalformed()
	for _, l := range r.lanes {
		lr := tally.LaneResult{Lane: l.ID, Endpoint: l.endpoint, Messages: l.Stats.Messages.Load(), Bytes: l.Stats.Bytes.Load(),
			Stalls: l.Stats.StallCount.Load(), DecodeBusyS: clock.TicksToNs(l.Stats.BusyTicks.Load()) / 1e9}
		if last := l.lastMsg.Load(); last > r.startTicks {
			lr.ActiveS = clock.TicksToNs(last-r.startTicks) / 1e9
		}
		lr.Malformed = make(map[string]uint64, len(objfactory.ReasonNames))
		for i, name := range objfactory.ReasonNames {
			n := l.Stats.Malformed[i].Load()
			lr.Malformed[name] = n
			res.MalformedBy[name] += n
			res.Malformed += n
		}
		res.Lanes = append(res.Lanes, lr)
		for _, s := range l.streams.all() {
			sr := s.result(r.cfg.jobTrial())
			res.Received += sr.ReceivedTuples
			res.Consumed += sr.ConsumedTuples
			res.Earlier += sr.EarlierTuples
			res.Forged += sr.ForgedTuples
			res.Sent = satAdd(res.Sent, sr.SentTuples) // announced by peers: never let it wrap
			res.Missing = satAdd(res.Missing, sr.Missing)
			res.Duplicates += sr.Duplicates
			res.Stale += sr.Stale
			res.OutOfSeq += sr.OutOfSeq
			allComplete = allComplete && sr.Complete
			res.Streams = append(res.Streams, sr)
		}
	}
	res.Complete = len(res.Streams) > 0 && allComplete
	if r.cfg.jobTrial() { // a job may rightly write nothing (a filter that keeps no tuple)
		res.Complete = allComplete
	}
	if r.ids != nil {
		res.Identities = r.ids.results()
	}
	res.WindowCount = r.windowSum
	if r.perWindow != nil {
		res.Windows, res.WindowsNotTallied = r.perWindow.counts(), r.perWindow.notTallied
	}
	if f := r.jobLag.failure(); f != "" && r.cfg.jobTrial() {
		// the job's input or its group gone or made again mid-trial
		// (deleted under the job?), or the broker not answering: the
		// trial cannot be judged. First: the cause, when the job then
		// made no progress too (the error names the first)
		res.SystemFailures = append(res.SystemFailures, f)
	}
	if f, _ := r.jobFailure.Load().(string); f != "" {
		res.SystemFailures = append(res.SystemFailures, f)
	}
	if first, last := r.firstData.Load(), r.lastConsum.Load(); first > 0 && last > first {
		res.DurationS = clock.TicksToNs(last-first) / 1e9
		res.Rate = float64(res.Consumed) / res.DurationS
	}
	res.Latency = r.precise.Summary()
	res.LatencyDistribution = r.precise.Distribution()
	if r.backlog != nil {
		res.Backlog = r.backlog
	}
	for _, l := range r.lanes {
		res.RingCapacity += l.Capacity()
	}
	res.MaxMessage = r.cfg.MaxMessage
	return res
}

// result is the stream's accounting; job: it is a job's output in a
// trial, which no end marker closes.
func (s *stream) result(job bool) tally.StreamResult {
	sr := tally.StreamResult{Stream: s.id, Sender: uint8(s.id >> 8), Thread: uint8(s.id), Lane: s.lane,
		ReceivedTuples: s.recvTuples.Load(), ConsumedTuples: s.consumedTuples.Load(), Buckets: s.recvBuckets.Load(),
		OutOfSeq: s.outOfSeq.Load(), Duplicates: s.duplicates.Load(), Stale: s.stale.Load(), GapBuckets: s.missing.Load(), Ended: s.ended.Load(),
		FirstSeq: s.from, NextSeq: s.next, EarlierTuples: s.earlier.Load(), ForgedTuples: s.forged.Load()}
	switch {
	case s.id == jsonStream:
		sr.Sender, sr.Thread = 0, 0
		sr.Status, sr.Complete = fmt.Sprintf("job output: %d JSON event(s), which carry no sequence: judged per identity, or per key and window", sr.ReceivedTuples), true
	case job && !sr.Ended:
		jobStatus(&sr)
	case !sr.Ended:
		sr.Status = fmt.Sprintf("no end marker (consumed %d tuples; the sender may have died or the marker was lost)", sr.ConsumedTuples)
	default:
		sr.SentTuples, sr.SentBuckets, sr.SenderDropped, sr.EndReason = s.end.Tuples, s.end.Buckets, s.end.DroppedBuckets, s.end.Reason
		if sr.SentTuples > sr.ConsumedTuples {
			sr.Missing = sr.SentTuples - sr.ConsumedTuples
		}
		switch {
		case sr.Missing > 0:
			sr.Status = fmt.Sprintf("missing %d of %d tuples (%d buckets never arrived)", sr.Missing, sr.SentTuples, sr.GapBuckets)
		case sr.ConsumedTuples > sr.SentTuples:
			sr.Status = fmt.Sprintf("consumed %d tuples, more than the %d sent", sr.ConsumedTuples, sr.SentTuples)
		case sr.Buckets != sr.SentBuckets:
			sr.Status = fmt.Sprintf("received %d buckets, the end marker says %d were sent", sr.Buckets, sr.SentBuckets)
		default:
			sr.Status, sr.Complete = "complete", true
		}
	}
	return sr
}

// Progress is a live view of the totals.
type Progress struct {
	Elapsed   time.Duration
	Received  uint64
	Consumed  uint64
	Messages  uint64 // well-formed messages taken in
	Malformed uint64
	Backlog   int // decoded buckets waiting for the consumer
	Streams   int
	Ended     int
}

// Snapshot returns the live totals (any goroutine).
func (r *Receiver) Snapshot() Progress {
	p := Progress{Elapsed: time.Since(time.Unix(0, r.started.Load())), Consumed: r.consumed.Load(), Malformed: r.malformedTotal()}
	for _, l := range r.lanes {
		p.Backlog += l.Occupancy()
		p.Messages += l.Stats.Messages.Load()
		for _, s := range l.streams.all() {
			p.Received += s.recvTuples.Load()
			p.Streams++
			if s.ended.Load() {
				p.Ended++
			}
		}
	}
	return p
}

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

// Describe implements prometheus.Collector.
func (r *Receiver) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRecvT, descRecvB, descConsT, descOOS, descDup, descStale, descGap, descEnded, descMalformed, descOcc, descCap, descBusy, descStall, descLat, descConsAll} {
		ch <- d
	}
	stagemetrics.Collector{Set: r.stages}.Describe(ch)
	if r.rates != nil {
		r.rates.Describe(ch)
	}
	r.cpu.Describe(ch)
}

// Stages is the receiver's stage accounting (nil: off).
func (r *Receiver) Stages() *stage.Set { return r.stages }

// Collect implements prometheus.Collector from the published counters.
func (r *Receiver) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	// What is consumed is read before what is received (it only grows), so
	// that one scrape never shows more consumed than received.
	consumed := r.consumed.Load()
	for _, l := range r.lanes {
		ln := strconv.Itoa(l.ID)
		for _, s := range l.streams.all() {
			lbl := []string{ln, strconv.FormatUint(uint64(s.id), 10)}
			consT := s.consumedTuples.Load()
			counter(descRecvT, s.recvTuples.Load(), lbl...)
			counter(descRecvB, s.recvBuckets.Load(), lbl...)
			counter(descConsT, consT, lbl...)
			counter(descOOS, s.outOfSeq.Load(), lbl...)
			counter(descDup, s.duplicates.Load(), lbl...)
			counter(descStale, s.stale.Load(), lbl...)
			gauge(descGap, float64(s.missing.Load()), lbl...)
			ended := 0.0
			if s.ended.Load() {
				ended = 1
			}
			gauge(descEnded, ended, lbl...)
		}
		for i, name := range objfactory.ReasonNames {
			counter(descMalformed, l.Stats.Malformed[i].Load(), ln, name)
		}
		gauge(descOcc, float64(l.Occupancy()), ln)
		gauge(descCap, float64(l.Capacity()), ln)
		ch <- prometheus.MustNewConstMetric(descBusy, prometheus.CounterValue, r.cfg.Clock.TicksToNs(l.Stats.BusyTicks.Load())/1e9, ln)
		counter(descStall, l.Stats.StallCount.Load(), ln)
	}
	var c histo.Counts
	c.Add(&r.latency)
	ch <- c.Metric(descLat, 1e-9)
	counter(descConsAll, consumed)
	r.cpu.Collect(ch)
	stagemetrics.Collector{Set: r.stages}.Collect(ch)
	if r.rates != nil {
		r.rates.Collect(ch)
	}
}

// satAdd adds counts without wrapping (a total of counts a peer announced
// saturates instead).
func satAdd(a, b uint64) uint64 {
	if a+b < a {
		return math.MaxUint64
	}
	return a + b
}

// latestMalformed says why a lane's latest malformed message was.
func (r *Receiver) latestMalformed() string {
	var latest string
	for _, l := range r.lanes {
		if p := l.Stats.LastError.Load(); p != nil {
			latest = truncate(*p, 256)
		}
	}
	return latest
}

// truncate cuts s to at most n bytes, at a rune's start.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
