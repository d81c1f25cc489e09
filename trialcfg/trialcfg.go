package trialcfg

import (
	"time"

	"github.com/cloudprofiler-go/cp/internal/inject"
)

// Overflow says what a sender's thread does when its socket is at the
// high-water mark.
type Overflow string

const (
	// Block waits (ZeroMQ's default): nothing is lost, lateness grows.
	Block Overflow = "block"
	// Drop sends with ZMQ_DONTWAIT and counts EAGAIN as a dropped bucket.
	Drop Overflow = "drop"
)

// Idle says how a sender's thread waits for its next slot.
type Idle string

const (
	// Spin busy-waits on the TSC (the paper's loop): most precise, costs a core.
	Spin Idle = "spin"
	// Yield spins near the slot and calls sched_yield when far from it, so
	// other threads on the same core can run (machines with few cores).
	Yield Idle = "yield"
	// Auto is Spin on machines with at least 4 CPUs and Sleep on smaller
	// ones, where a spinning sender starves a receiver on the same host.
	Auto Idle = "auto"
	// Sleep nanosleeps (with 1 ns timer slack) until shortly before the
	// slot, leaving a margin measured at start (this thread's wakeup
	// overshoot), then spins: for machines with few cores and low rates.
	Sleep Idle = "sleep"
)

// Sender is how a sender emits, the same in every trial of a sweep.
type Sender struct {
	Threads    int      `json:"threads"`     // emission threads (per sender agent in a sweep)
	BucketSize int      `json:"bucket_size"` // tuples per message
	Overflow   Overflow `json:"overflow"`
	Idle       Idle     `json:"idle"`
	// SendWork is busy work per bucket, in the sending state, before each
	// send (a test fixture: a sender slower than its network, so that a
	// run can be sender-bound). It sends one bucket per call into C.
	SendWork time.Duration `json:"send_work_ns,omitempty"`
	// ExpectFilter is the predicate of a filter between the senders and
	// the receivers (docs/sut.md, dgsend --expect-filter): each sender
	// counts the tuples it sent that the filter keeps, the job's exact
	// expected output. "": no filter declared.
	ExpectFilter string `json:"expect_filter,omitempty"`
	// ExpectWindow is the size of a windowed count's tumbling windows of
	// event time between the senders and the receivers (docs/sut.md,
	// YSB's): each sender counts, per campaign and window, the tuples it
	// sent that the filter keeps, so that every window's count is known
	// exactly. 0: none declared.
	ExpectWindow time.Duration `json:"expect_window_ns,omitempty"`
}

// MaxExpectWindow bounds a declared window: a trial's windows are
// counted in cells allocated before it runs.
const MaxExpectWindow = time.Hour

// Receiver is how a receiver consumes, the same in every trial of a sweep.
type Receiver struct {
	Schema string `json:"schema"` // tuple schema: ad-event, synthetic or raw
	// Drain checks bucket headers and accounts per stream but neither
	// deserializes nor consumes tuples (a receiver that only counts).
	Drain        bool          `json:"drain,omitempty"`
	WorkPerTuple time.Duration `json:"work_per_tuple_ns,omitempty"` // emulated processing cost per consumed tuple
	Ring         int           `json:"ring,omitempty"`              // buckets per lane (power of two; 0: the default)
	EndTimeout   time.Duration `json:"end_timeout_ns"`              // give up on missing end markers after this long without data
	// DecodeWork is injected busy work per bucket in a lane's decode (a
	// test fixture), and WorkSchedule the consumer's work per tuple over
	// time (it replaces WorkPerTuple).
	DecodeWork   time.Duration `json:"decode_work_ns,omitempty"`
	WorkSchedule []inject.Step `json:"work_schedule,omitempty"`
	// JobQuiet: with a job between the senders and the receivers
	// (docs/sut.md), whose output never ends, a trial ends once the
	// senders are done, the job's lag on its input is 0 and its output
	// has been quiet this long (0: DefaultJobQuiet). It must be longer
	// than the job holds a tuple (a window and its lateness).
	JobQuiet time.Duration `json:"job_quiet_ns,omitempty"`
}

// DefaultJobQuiet is JobQuiet when none is given: longer than YSB's
// window of 1 s and lateness of 500 ms.
const DefaultJobQuiet = 3 * time.Second

// Agent is what every agent of a trial, sender or receiver, is told alike.
type Agent struct {
	// SUTProcesses name the system under test's processes on the agent's
	// host (a broker beside it): their CPU is the system's, not other
	// processes'.
	SUTProcesses []string `json:"sut_processes,omitempty"`
	// StagePeriod, if not 0, accounts every thread's time and samples it
	// this often (package stage); also the profiler's counter period.
	StagePeriod time.Duration `json:"stage_period_ns,omitempty"`
}
