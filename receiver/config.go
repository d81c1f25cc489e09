package receiver

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/internal/membudget"
	"github.com/cloudprofiler-go/cp/internal/zmqraw"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/trialcfg"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/wire"
)

// Config describes one dgrecv run.
type Config struct {
	// The trial's settings, shared with the sweep's plan and the agents'
	// protocol (package trialcfg).
	trialcfg.Receiver
	trialcfg.Agent

	Endpoints []string // one PULL socket (lane) per endpoint
	// Brokers are the broker drivers the program was built with, for
	// endpoints that name a broker (the zero Registry: none).
	Brokers driver.Registry `json:"-"`
	Connect bool            // connect instead of bind (behind a system under test that pushes)
	// JobInput is a job's input when a stream processor is the system
	// under test (docs/sut.md): a broker URL naming the job's consumer
	// group, whose lag is read every JobLagEvery into the backlog samples
	// for the system-backlog rule. "": no job.
	JobInput string
	// TrialStart and SendersEnd place a sweep's trial of a job in time
	// (with JobInput; docs/sut.md): a bucket whose first tuple was meant
	// to be sent before TrialStart is an earlier trial's (counted as
	// earlier_tuples, not consumed), and the run ends after SendersEnd once
	// the job has caught up and its output is quiet (JobQuiet). Zero: a
	// run of its own, ended by the output's end markers.
	TrialStart, SendersEnd time.Time
	// StreamNext is, per output stream of the job, the sequence number
	// after the last one an earlier trial received (the agent remembers
	// them: a job's output streams go on across trials). A stream not in
	// it is joined at the first bucket seen.
	StreamNext map[uint32]uint64
	// Senders and SenderThreads are the trial's senders and their threads
	// (with TrialStart): a job's output tuple whose id names no stream of
	// theirs, or whose intended time is after its arrival (FutureSlack),
	// carries an identity never sent (forged_tuples: counted, not
	// consumed).
	Senders, SenderThreads int
	// Owed, with a filter declared between the senders and the job's
	// output, says which identities the filter keeps (docs/sut.md): a
	// tuple it drops that arrives was invented. nil: every identity sent
	// is owed.
	Owed *scenarios.Owed
	// Seal is the key the senders sealed every intended time with in a
	// trial of a job (wire.SealKey; zero: none): an output tuple whose
	// time does not unseal is counted as rewritten, never consumed.
	Seal wire.SealKey `json:"-"`
	// MaxMessage is the largest message a lane takes: the socket refuses a
	// larger one before it is built (ZMQ_MAXMSGSIZE), and Validate lowers
	// it so that every lane's queue and ring of such messages fit the
	// memory budget (MaxMessageLowered says so).
	MaxMessage        int
	MaxMessageLowered bool
	// MemoryBudget is the most memory the run may hold in messages (0:
	// half of the host's memory). It is the process's setting, never a
	// request's.
	MemoryBudget int64
	HWM          int // receive high-water mark in messages
	IOThreads    int
	// Stalls are injected stalls of the consumer or a lane ("consumer",
	// "lane<N>") from the start of Run (test fixtures, see internal/inject).
	Stalls        []inject.Stall
	ExpectStreams int           // finish when this many streams ended (0: when all seen streams ended)
	Settle        time.Duration // with ExpectStreams 0: quiet time after the last end marker
	Duration      time.Duration // hard limit on the run (0: none)
	CPUs          []int         // CPUs for the lane deserializers, then the consumer; nil: not pinned
	// NoServiceRates leaves out the service-rate estimates (and the
	// periods they are made of) while accounting.
	NoServiceRates bool
	// LiveActivity, if not 0, lets a live view read each accounted
	// stage's last LiveActivity state changes (stage.Set.Live, kept from
	// its first read on; an agent serves them to cpsweep watch).
	LiveActivity int
	Clock        *tsc.Clock
	// Sink is called for every consumed tuple on the consumer goroutine (the
	// source operator of a system under test). Nil: a checksum of the ids,
	// so the work cannot be optimised away.
	Sink func(*scenarios.Tuple)
	// Logf reports malformed input (at most once per second) and progress
	// notes. Nil: silent.
	Logf func(format string, args ...any)
	// Profile, if set, gets channels "receive.<lane>" (every tuple id,
	// stamped when its message arrived, before decoding),
	// "deserialized.<lane>" (every tuple id, stamped once its bucket is
	// decoded, on the lane's deserializer) and "consumed" (on the
	// consumer: each tuple as it is consumed when there is per-tuple work
	// or a Sink, else a bucket's tuples when its last one is), handlers
	// from Handlers (Null when unlisted, and switchable live). Tuples
	// stamped at one instant are logged as one range when their ids are
	// consecutive.
	Profile  *profiler.Profiler
	Handlers *profiler.Handlers
}

// Limits of a receiver's configuration. Every value from a flag or a
// controller's request is checked against them before anything is
// allocated (docs/security.md lists them).
const (
	MaxLanes         = 64
	MaxRing          = 1 << 14 // buckets per lane
	MaxMessageLimit  = 256 << 20
	MaxWorkPerTuple  = 100 * time.Millisecond // a stop is noticed between tuples
	MaxExpectStreams = 1 << 16
	MaxWait          = 10 * time.Minute // settle and end timeout
	MaxDuration      = 24 * time.Hour
	// DefaultRing is the ring capacity when none is given.
	DefaultRing = 256
)

// MinMessageBudget is the smallest maximum message the memory budget may
// leave a lane: below it the ring and queue settings are refused instead.
const MinMessageBudget = 64 << 10

// fitMessages bounds what a run can hold: each lane queues up to HWM
// messages in libzmq and holds Ring decoded buckets (plus one being
// decoded and one consumed), each at most MaxMessage bytes. When that is
// above the budget, the largest message is lowered to fit; a budget that
// leaves less than MinMessageBudget a message refuses the settings.
func (c *Config) fitMessages() error {
	budget := c.MemoryBudget
	if budget < 0 {
		return fmt.Errorf("memory budget must not be negative")
	}
	if budget == 0 {
		budget = membudget.Default()
	}
	held := int64(len(c.Endpoints)) * int64(c.Ring+c.HWM+2)
	most := budget / held
	if int64(c.MaxMessage) <= most {
		return nil
	}
	if most < MinMessageBudget {
		return fmt.Errorf("%d lane(s) × (ring %d + hwm %d) messages leave %d bytes a message within the memory budget of %d bytes (dgrecv --memory-budget): use a smaller ring or hwm",
			len(c.Endpoints), c.Ring, c.HWM, most, budget)
	}
	c.MaxMessage, c.MaxMessageLowered = int(most), true
	return nil
}

// Validate checks every field against its range and fills defaults; it
// allocates nothing, so it is safe on untrusted input.
func (c *Config) Validate() error {
	problems := zmqraw.Sockets{Endpoints: c.Endpoints, MaxEndpoints: MaxLanes, HWM: c.HWM, IOThreads: c.IOThreads, CPUs: c.CPUs}.Problems()
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	problems = append(problems, driver.Problems(c.Endpoints, false)...)
	problems = append(problems, c.jobProblems()...)
	problems = append(problems, c.jsonProblems()...)
	if err := cpustat.CheckNames(c.SUTProcesses); err != nil {
		bad("%v", err)
	}
	if _, ok := scenarios.DecoderFor(c.Schema); !ok && !c.Drain {
		bad("unknown schema %.32q (use ad-event, synthetic, raw or window)", c.Schema)
	}
	if c.Ring == 0 {
		c.Ring = DefaultRing
	}
	if c.Ring < 2 || c.Ring > MaxRing || c.Ring&(c.Ring-1) != 0 {
		bad("ring capacity must be a power of two from 2 to %d, got %d", MaxRing, c.Ring)
	}
	if c.MaxMessage == 0 {
		c.MaxMessage = 64 << 20
	}
	if c.MaxMessage < 0 || c.MaxMessage > MaxMessageLimit {
		bad("max message must be 1 to %d bytes, got %d", MaxMessageLimit, c.MaxMessage)
	}
	if c.WorkPerTuple < 0 || c.WorkPerTuple > MaxWorkPerTuple {
		bad("work per tuple must be 0 to %v, got %v", MaxWorkPerTuple, c.WorkPerTuple)
	}
	if err := inject.CheckStalls(c.Stalls, map[string]int{"consumer": 1, "lane": len(c.Endpoints)}); err != nil {
		bad("%v", err)
	}
	if c.StagePeriod != 0 {
		if err := stage.CheckPeriod(c.StagePeriod); err != nil {
			bad("%v", err)
		}
	}
	if c.DecodeWork < 0 || c.DecodeWork > inject.MaxWork {
		bad("decode work must be 0 to %v per bucket, got %v", inject.MaxWork, c.DecodeWork)
	}
	if err := inject.CheckSchedule(c.WorkSchedule); err != nil {
		bad("%v", err)
	}
	if len(c.WorkSchedule) > 0 && c.WorkPerTuple > 0 {
		bad("give the work per tuple or a work schedule, not both")
	}
	if c.ExpectStreams < 0 || c.ExpectStreams > MaxExpectStreams {
		bad("expect-streams must be 0 to %d, got %d", MaxExpectStreams, c.ExpectStreams)
	}
	if c.Settle < 0 || c.Settle > MaxWait || c.EndTimeout < 0 || c.EndTimeout > MaxWait || c.JobQuiet < 0 || c.JobQuiet > MaxWait {
		bad("settle, end timeout and job quiet time must be 0 to %v, got %v, %v and %v", MaxWait, c.Settle, c.EndTimeout, c.JobQuiet)
	}
	if c.Duration < 0 || c.Duration > MaxDuration {
		bad("duration must be 0 (no limit) to %v, got %v", MaxDuration, c.Duration)
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	c.HWM, c.IOThreads = zmqraw.Defaults(c.HWM, c.IOThreads)
	if err := c.fitMessages(); err != nil {
		return err
	}
	if c.Settle == 0 {
		c.Settle = 500 * time.Millisecond
	}
	if c.EndTimeout == 0 {
		c.EndTimeout = 10 * time.Second
	}
	return nil
}
