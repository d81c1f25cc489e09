package tally

import (
	"fmt"
	"time"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/internal/histo"
	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/servicerate"
	"github.com/cloudprofiler-go/cp/stage"
)

// Result is what a run did, as dgsend reports it (--json prints it as is).
type Result struct {
	Scenario   string          `json:"scenario"`
	TargetRate float64         `json:"target_rate_tuples_per_s"` // 0 = unpaced
	Shape      scenarios.Shape `json:"shape"`
	Threads    int             `json:"threads"`
	BucketSize int             `json:"bucket_size"`
	TupleBytes int             `json:"bucket_bytes"`
	Overflow   string          `json:"overflow"`
	Idle       string          `json:"idle"`
	SendCostNs int64           `json:"send_cost_ns"` // measured cost of one send of one bucket
	// SendBatch is the most buckets a thread handed to libzmq per call
	// from Go (--send-batch; each still sent at its own slot).
	SendBatch int `json:"send_batch"`
	// EmissionCPUNs is the CPU time the emission threads used from their
	// start to their end marker (pacing spins included), and
	// CPUPerBucketNs that time per bucket sent: the harness's own cost,
	// which the same figure of the C reference sender is compared with.
	EmissionCPUNs  int64   `json:"emission_cpu_ns"`
	CPUPerBucketNs float64 `json:"emission_cpu_ns_per_bucket"`
	DurationS      float64 `json:"duration_s"`       // trial window (or first to last send)
	StartUnixNs    int64   `json:"start_unix_ns"`    // when the schedule started
	WarmupNs       int64   `json:"warmup_ns"`        // lateness counts only slots due after this
	ScheduledTups  uint64  `json:"scheduled_tuples"` // what the schedule called for
	Emitted        uint64  `json:"emitted_tuples"`
	EmittedBkts    uint64  `json:"emitted_buckets"`
	// Expect is the filter's predicate declared to the harness
	// (dgsend --expect-filter; docs/sut.md) and Matched the tuples sent
	// that it keeps: the filter's exact output.
	Expect  string `json:"expect_filter,omitempty"`
	Matched uint64 `json:"expected_filter_tuples,omitempty"`
	// ExpectWindowMs is a windowed count's window declared to the harness
	// (dgsend --expect-window) and ExpectedWindows what each campaign's
	// window owes: the tuples sent in it that the filter keeps, by event
	// time (the intended time), in the order of their ends and keys.
	ExpectWindowMs  int64                   `json:"expect_window_ms,omitempty"`
	ExpectedWindows []scenarios.WindowCount `json:"expected_windows,omitempty"`
	DroppedBkts     uint64                  `json:"dropped_buckets"`
	DroppedTups     uint64                  `json:"dropped_tuples"`
	Shortfall       uint64                  `json:"shortfall_tuples"` // scheduled but neither sent nor dropped (fell behind)
	AchievedRate    float64                 `json:"achieved_rate_tuples_per_s"`
	// Windows are the tuples emitted in each full 1-second window of the
	// run, by actual send time (the final partial second is left out).
	Windows      []uint64      `json:"windows_tuples"`
	WindowMaxDev float64       `json:"window_max_deviation"` // max |window - target| / target
	LateSlots    uint64        `json:"late_slots"`
	LateThreshNs int64         `json:"late_threshold_ns"`
	LateFraction float64       `json:"late_slot_fraction"` // of the slots due after the warm-up
	Lateness     histo.Summary `json:"lateness"`
	Streams      []StreamEnd   `json:"streams"`
	Interrupted  bool          `json:"interrupted"`
	// ScheduleKept: a paced run sent every slot of its schedule (no
	// shortfall) with at most max_late_fraction of them late; Schedule
	// says what was missed ("" when kept, or when unpaced).
	ScheduleKept    bool    `json:"schedule_kept"`
	Schedule        string  `json:"schedule"`
	MaxLateFraction float64 `json:"max_late_fraction"`
	Links           []*Link `json:"links"` // each data socket's connections
	// Stages is each thread's time accounting over the run (pacing,
	// sending, blocked) and StageSeries its per-period samples; absent
	// without stage accounting.
	Stages      []stage.Total `json:"stages"`
	StageSeries *stage.Series `json:"stage_series"`
	// ServiceRates are every thread's service-rate estimates at the end
	// of the run (docs/service-rate.md); absent without stage accounting.
	ServiceRates []servicerate.Rate `json:"service_rates"`
	// Injected is what the run had injected (test fixtures).
	Injected inject.Record `json:"injected"`
	Errors   []string      `json:"errors"`
	// SystemFailures are the errors of a broker that is the system under
	// test (package driver): the run says nothing about a rate.
	SystemFailures []string `json:"system_failures,omitempty"`
	// Host is the run's host accounting: every thread's CPU and run-queue
	// wait, and the host's busy, stolen and other processes' CPU
	// (package cpustat; absent off Linux).
	Host *cpustat.Record `json:"host,omitempty"`
}

// StreamEnd is one thread's stream as announced in its end marker.
type StreamEnd struct {
	Thread      int    `json:"thread"`
	Stream      uint32 `json:"stream"`
	Endpoint    string `json:"endpoint"`
	CPU         int    `json:"cpu"`
	Tuples      uint64 `json:"tuples"`
	Dropped     uint64 `json:"dropped_buckets"`
	MarkerSent  bool   `json:"end_marker_sent"`
	LateSlots   uint64 `json:"late_slots"`
	P99Lateness int64  `json:"p99_lateness_ns"`
}

// LinkEvent is a connection event of a data socket.
type LinkEvent struct {
	At    time.Time `json:"at"`
	Event string    `json:"event"` // connected, accepted, disconnected
	Peer  string    `json:"peer"`
}

// MaxLinkEvents bounds the events kept per socket (the counts go on).
const MaxLinkEvents = 64

// Link is what became of one data socket's connections during a run.
type Link struct {
	Thread        int         `json:"thread"`
	Endpoint      string      `json:"endpoint"`
	Connects      uint64      `json:"connects"`
	Disconnects   uint64      `json:"disconnects"`
	PeersAtEnd    int         `json:"peers_at_end"`
	Flushed       bool        `json:"flushed"` // everything queued (end marker included) left before the socket closed
	Events        []LinkEvent `json:"events"`
	EventsDropped uint64      `json:"events_dropped"`
	// Linger is how long the socket had to flush at its close (not
	// carried in JSON).
	Linger time.Duration `json:"-"`
}

// Problem says why delivery cannot be vouched for ("" when it can).
func (l *Link) Problem() string {
	switch {
	case l.Connects == 0:
		return fmt.Sprintf("thread %d: no peer ever connected on %s: nothing was delivered", l.Thread, l.Endpoint)
	case l.PeersAtEnd == 0:
		return fmt.Sprintf("thread %d: the peer on %s was gone at the end (%d disconnect(s)): the end marker and queued tuples were not delivered", l.Thread, l.Endpoint, l.Disconnects)
	case l.Disconnects > 0:
		return fmt.Sprintf("thread %d: %d disconnect(s) on %s during the run: tuples in flight may be lost (the receiver's accounting says which)", l.Thread, l.Disconnects, l.Endpoint)
	case !l.Flushed:
		return fmt.Sprintf("thread %d: queued messages on %s (the end marker among them) could not be flushed within %v", l.Thread, l.Endpoint, l.Linger)
	}
	return ""
}
