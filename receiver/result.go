package receiver

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"
	"unicode/utf8"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/internal/histo"
	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/objfactory"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/servicerate"
	"github.com/cloudprofiler-go/cp/stage"
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
			res.Rewritten += sr.RewrittenTuples
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
	if r.cfg.Schema == scenarios.SchemaWindow {
		if res.WindowLatencyFrom = r.windowFrom.String(); res.WindowLatencyFrom == "" {
			res.WindowLatencyFrom = WindowFromIdentity
		}
	}
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
		FirstSeq: s.from, NextSeq: s.next, EarlierTuples: s.earlier.Load(), ForgedTuples: s.forged.Load(),
		RewrittenTuples: s.rewritten.Load()}
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
	Lanes     []LaneProgress
	Latency   histo.Counts // intended send to consumption, ns, per tuple
}

// LaneProgress is one lane's published counters and its streams'.
type LaneProgress struct {
	Lane                int
	Malformed           []uint64 // by objfactory.ReasonNames
	Occupancy, Capacity int      // of the ring, in buckets
	DecodeBusyS         float64
	Stalls              uint64 // the deserializer waited for the consumer
	Streams             []StreamProgress
}

// StreamProgress is one stream's published counters.
type StreamProgress struct {
	Stream                                                            uint32
	Received, Buckets, Consumed, OutOfSeq, Duplicates, Stale, Missing uint64
	Ended                                                             bool
}

// Snapshot returns the live totals (any goroutine). What is consumed is
// read before what is received (it only grows), so that one snapshot
// never shows more consumed than received.
func (r *Receiver) Snapshot() Progress {
	p := Progress{Elapsed: time.Since(time.Unix(0, r.started.Load())), Consumed: r.consumed.Load(), Malformed: r.malformedTotal()}
	for _, l := range r.lanes {
		p.Backlog += l.Occupancy()
		p.Messages += l.Stats.Messages.Load()
		lp := LaneProgress{Lane: l.ID, Occupancy: l.Occupancy(), Capacity: l.Capacity(), Stalls: l.Stats.StallCount.Load(),
			DecodeBusyS: r.cfg.Clock.TicksToNs(l.Stats.BusyTicks.Load()) / 1e9}
		for i := range objfactory.ReasonNames {
			lp.Malformed = append(lp.Malformed, l.Stats.Malformed[i].Load())
		}
		for _, s := range l.streams.all() {
			sp := StreamProgress{Stream: s.id, Consumed: s.consumedTuples.Load(), Received: s.recvTuples.Load(), Buckets: s.recvBuckets.Load(),
				OutOfSeq: s.outOfSeq.Load(), Duplicates: s.duplicates.Load(), Stale: s.stale.Load(), Missing: s.missing.Load(), Ended: s.ended.Load()}
			p.Received += sp.Received
			p.Streams++
			if sp.Ended {
				p.Ended++
			}
			lp.Streams = append(lp.Streams, sp)
		}
		p.Lanes = append(p.Lanes, lp)
	}
	p.Latency.Add(&r.latency)
	return p
}

// Stages is the receiver's stage accounting (nil: off).
func (r *Receiver) Stages() *stage.Set { return r.stages }

// Rates is the receiver's service-rate tracker (nil: off).
func (r *Receiver) Rates() *servicerate.Tracker { return r.rates }

// CPU measures the process's threads and the host.
func (r *Receiver) CPU() *cpustat.Sampler { return r.cpu }

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

// WriteLatencyLog writes the latency histogram (intended send to
// consumed) as HdrHistogram's interval log, its interval the first to the
// last consumed tuple. Call it only after Run has returned: the consumer
// owns the histogram until then.
func (r *Receiver) WriteLatencyLog(w io.Writer) error {
	first, last := r.firstData.Load(), r.lastConsum.Load()
	if first == 0 {
		return errors.New("no latency was recorded: nothing was consumed")
	}
	c := r.cfg.Clock
	return r.precise.WriteLog(w, time.Unix(0, c.UnixNano(first)), time.Unix(0, c.UnixNano(last)))
}
