package tally

import (
	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/internal/histo"
	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/servicerate"
	"github.com/cloudprofiler-go/cp/stage"
)

// MaxWindows bounds the key windows a receiver tallies: a job that writes
// forged keys must not grow it without end. Beyond it a window is counted
// as not tallied, and the per-window comparison says it cannot be made.
const MaxWindows = 1 << 16

// ReasonJobCaughtUp begins the Reason of a trial of a job that ended with
// the job caught up on its input: whatever is missing then, the job did
// not lose it by being slow.
const ReasonJobCaughtUp = "the job caught up"

// Result is the end-of-run accounting (--json prints it as is).
type Result struct {
	Complete bool   `json:"complete"` // every stream is complete (see StreamResult)
	Reason   string `json:"reason"`   // why the run ended
	Drain    bool   `json:"drain"`    // tuples counted from headers, not decoded
	Received uint64 `json:"received_tuples"`
	Consumed uint64 `json:"consumed_tuples"`
	// WindowCount is the sum of the counts of the windows consumed
	// (schema window): the input tuples a windowed job counted.
	WindowCount uint64 `json:"window_count,omitempty"`
	// Windows are the same counts per key and window (the order of their
	// ends and keys), compared with what each window owes; WindowsNotTallied
	// counts what came beyond MaxWindows of them.
	Windows           []scenarios.WindowCount `json:"windows,omitempty"`
	WindowsNotTallied uint64                  `json:"windows_not_tallied,omitempty"`
	// WindowLatencyFrom says what a windowed job's latency was measured
	// from, to the window's arrival (schema window only).
	WindowLatencyFrom string `json:"window_latency_from,omitempty"`
	// Earlier counts the tuples of an earlier trial a job wrote late
	// (meant to be sent before this trial began): not consumed, not in
	// any figure (docs/sut.md).
	Earlier uint64 `json:"earlier_tuples,omitempty"`
	// Forged counts a job's output tuples whose identity was never sent
	// (a stream no sender of the trial has, an intended time after its
	// arrival): not consumed, and the trial fails.
	Forged uint64 `json:"forged_tuples,omitempty"`
	// Rewritten counts a job's output tuples whose intended time is not
	// the one their sender sealed (wire.SealKey): the job rewrote it, so
	// its latency would be the job's word; not consumed, and the trial
	// fails.
	Rewritten uint64 `json:"rewritten_tuples,omitempty"`
	// Identities judge a map's or a filter's output per identity, one
	// entry per sender stream that the job's output named (absent for
	// windows and without a job): what arrived once, again, or that the
	// declared filter drops.
	Identities  []Identities      `json:"identities,omitempty"`
	Sent        uint64            `json:"sent_tuples"` // per the end markers that arrived
	Missing     uint64            `json:"missing_tuples"`
	Duplicates  uint64            `json:"duplicate_buckets"`
	Stale       uint64            `json:"stale_buckets"` // too far behind to check for duplication: discarded
	OutOfSeq    uint64            `json:"out_of_sequence_buckets"`
	Malformed   uint64            `json:"malformed_messages"`
	MalformedBy map[string]uint64 `json:"malformed_by_reason"` // every reason, 0 included
	// MalformedLatest says why the latest malformed message was (a JSON
	// event's names its field), bounded to 256 bytes.
	MalformedLatest string        `json:"malformed_latest,omitempty"`
	DurationS       float64       `json:"duration_s"` // first to last consumed tuple
	Rate            float64       `json:"consume_rate_tuples_per_s"`
	Latency         histo.Summary `json:"latency"` // intended send -> consumed (same clock domain only)
	// LatencyDistribution is the same latency's percentile distribution,
	// as HdrHistogram prints it (cpsweep report writes the answer's as
	// .hgrm); nil when nothing was consumed.
	LatencyDistribution *histo.Distribution `json:"latency_distribution,omitempty"`
	RingCapacity        int                 `json:"ring_capacity_buckets"` // over all lanes
	// MaxMessage is the largest message the lanes took (bytes): --max-message,
	// or lower to fit the memory budget.
	MaxMessage int `json:"max_message_bytes"`
	// Backlog samples the decoded buckets waiting for the consumer, over all
	// lanes, every 100 ms (at most 4096 samples: past 409 s the interval
	// doubles as often as needed): a growing backlog means the consumer is behind.
	Backlog []BacklogSample `json:"backlog"`
	Streams []StreamResult  `json:"streams"`
	Lanes   []LaneResult    `json:"lanes"`
	// Stages is the time accounting of the lanes (waiting, decoding,
	// blocked), the consumer (idle, working) and each stream's arrivals
	// over the run, and StageSeries their per-period samples; absent
	// without stage accounting.
	Stages      []stage.Total `json:"stages"`
	StageSeries *stage.Series `json:"stage_series"`
	// ServiceRates are every stage's service-rate estimates at the end of
	// the run (docs/service-rate.md); absent without stage accounting.
	ServiceRates []servicerate.Rate `json:"service_rates"`
	// Injected is what the run had injected (test fixtures): the ground
	// truth a diagnosis is scored against.
	Injected inject.Record `json:"injected"`
	// Host is the run's host accounting: every thread's CPU and run-queue
	// wait, and the host's busy, stolen and other processes' CPU
	// (package cpustat; absent off Linux).
	Host   *cpustat.Record `json:"host,omitempty"`
	Errors []string        `json:"errors"`
	// SystemFailures are the errors of a broker that is the system under
	// test (package driver): the run says nothing about a rate.
	SystemFailures []string `json:"system_failures,omitempty"`
	// BrokerDropped counts the messages a broker dropped for this
	// receiver's consumers (core NATS: a slow consumer's overflow); the
	// loss is also in the per-stream accounting.
	BrokerDropped uint64 `json:"broker_dropped_messages,omitempty"`
}

// BacklogSample is the receiver's state at one instant: ring occupancy,
// tuples consumed so far, and the latency (intended send -> consumed) of
// the latest consumed bucket. A latency that keeps growing is a queue
// growing somewhere (ring, sockets or network), even where occupancy cannot
// be seen.
type BacklogSample struct {
	UnixNs    int64  `json:"t_unix_ns"`
	Buckets   int    `json:"buckets"`
	Consumed  uint64 `json:"consumed"`
	LatencyNs int64  `json:"latency_ns"`
	// WindowDelayNs is, for a windowed job's output, how long after its
	// window's end the latest consumed window arrived. Unlike LatencyNs
	// (YSB's: from the window's latest event) it does not move with how
	// full a window was: a trial's last window, cut short by the senders'
	// end, has a late latest event and a short delay. It grows only when
	// the job emits its windows later and later (negative: a window out
	// before its end). Absent otherwise, and before the first window.
	WindowDelayNs *int64 `json:"window_delay_ns,omitempty"`
	// BrokerLag is the broker's backlog for this receiver's consumers,
	// summed over its lanes: messages stored and not yet delivered
	// (package driver; -1: a lane's lag could not be read). Absent (nil)
	// over ZeroMQ.
	BrokerLag *int64 `json:"broker_lag,omitempty"`
	// JobLag is the lag of a job's consumer group on its input (dgrecv
	// --job-input): messages the job has not read or acknowledged (-1:
	// it could not be read). Absent without a job, and between the
	// samples it is read at (every JobLagEvery at most).
	JobLag *int64 `json:"job_lag,omitempty"`
}

// StreamResult is one sender stream's accounting.
type StreamResult struct {
	Stream         uint32 `json:"stream"`
	Sender         uint8  `json:"sender"`
	Thread         uint8  `json:"thread"`
	Lane           int    `json:"lane"`
	ReceivedTuples uint64 `json:"received_tuples"`
	ConsumedTuples uint64 `json:"consumed_tuples"`
	Buckets        uint64 `json:"buckets"`
	OutOfSeq       uint64 `json:"out_of_sequence_buckets"`
	Duplicates     uint64 `json:"duplicate_buckets"`
	Stale          uint64 `json:"stale_buckets"`
	GapBuckets     uint64 `json:"gap_buckets"` // sequence numbers never seen
	// FirstSeq is the first sequence number the run expected (a job's
	// stream goes on from an earlier trial, or is joined at its first
	// bucket) and NextSeq the one after the highest received.
	FirstSeq      uint64 `json:"first_seq,omitempty"`
	NextSeq       uint64 `json:"next_seq"`
	EarlierTuples uint64 `json:"earlier_tuples,omitempty"` // an earlier trial's (not consumed)
	ForgedTuples  uint64 `json:"forged_tuples,omitempty"`  // identities never sent (not consumed)
	// RewrittenTuples: intended times the job changed (not consumed)
	RewrittenTuples uint64 `json:"rewritten_tuples,omitempty"`
	Ended           bool   `json:"ended"`
	SentBuckets     uint64 `json:"sent_buckets"` // from the end marker
	// Complete: the end marker arrived, every bucket it announces arrived
	// (buckets == sent_buckets) and every tuple it announces was consumed.
	Complete      bool   `json:"complete"`
	SentTuples    uint64 `json:"sent_tuples"` // from the end marker
	SenderDropped uint64 `json:"sender_dropped_buckets"`
	EndReason     string `json:"end_reason"`
	Missing       uint64 `json:"missing_tuples"`
	Status        string `json:"status"`
}

// MaxIdentities bounds the identities one receiver checks in a trial
// (its bitmaps take 64 MiB at the most, allocated as they fill): beyond
// it a tuple is counted as unchecked and the trial's delivery cannot be
// judged.
const MaxIdentities = 1 << 29

// Identities is one sender stream's tuples in a job's output, by identity
// (docs/sut.md). Distinct counts the owed identities taken once (they are
// the ones consumed), Duplicates the tuples whose identity came again,
// Unowed those the declared filter drops, and Unchecked those beyond the
// receiver's identity budget (the trial cannot be judged). Next is the
// highest owed sequence number taken + 1, and Highest up to 64 of the
// highest, highest first: the verdict counts those beyond what the
// stream's sender emitted as invented.
type Identities struct {
	Stream     uint32   `json:"stream"`
	Distinct   uint64   `json:"distinct"`
	Duplicates uint64   `json:"duplicates,omitempty"`
	Unowed     uint64   `json:"unowed,omitempty"`
	Unchecked  uint64   `json:"unchecked,omitempty"`
	Next       uint64   `json:"next"`
	Highest    []uint64 `json:"highest,omitempty"`
}

// LaneResult is one receive socket's counters.
type LaneResult struct {
	Lane        int               `json:"lane"`
	Endpoint    string            `json:"endpoint"`
	Messages    uint64            `json:"messages"`
	Bytes       uint64            `json:"bytes"`
	Malformed   map[string]uint64 `json:"malformed"` // every reason, 0 included
	Stalls      uint64            `json:"stalls"`    // times the deserializer waited for the consumer
	DecodeBusyS float64           `json:"decode_busy_s"`
	// ActiveS is the time from the start of the run to the lane's last
	// message (its processing time when its queue was prefilled).
	ActiveS float64 `json:"active_s"`
}
