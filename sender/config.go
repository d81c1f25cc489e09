package sender

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/internal/zmqraw"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/trialcfg"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/wire"
)

// Config describes one dgsend run.
type Config struct {
	// The trial's settings, shared with the sweep's plan and the agents'
	// protocol (package trialcfg).
	trialcfg.Sender
	trialcfg.Agent

	Endpoints []string // ZeroMQ endpoints; thread i uses Endpoints[i % len]
	// Brokers are the broker drivers the program was built with, for
	// endpoints that name a broker (the zero Registry: none).
	Brokers  driver.Registry `json:"-"`
	Bind     bool            // bind instead of connect (a system under test pulls from us)
	SenderID uint8           // distinguishes senders in stream and tuple ids
	Rate     float64         // total tuples per second over all threads; 0 = unpaced
	Duration time.Duration
	Shape    scenarios.Shape // how the rate varies around its mean (zero: constant)
	Warmup   time.Duration   // lateness is recorded only for slots due after the warm-up
	// StartAt (wall clock) aligns the start of several senders, possibly on
	// several hosts; zero or past: start 20 ms after Run is called.
	StartAt  time.Time
	Count    uint64 // total tuples; 0 = until Duration or Stop
	Scenario *scenarios.Scenario
	// Expect, if set, is the predicate of a filter between the senders
	// and the receiver (docs/sut.md): the tuples sent that it keeps are
	// counted, from the templates, so the filter's exact output is known.
	Expect *scenarios.Predicate `json:"-"`
	CPUs   []int                // CPU per thread (cycled); nil = not pinned
	HWM    int                  // send high-water mark in messages
	// SendBatch is the most messages an emission thread hands to C in one
	// call (the cgo transition is paid once per call); 0 picks it from the
	// message size (SendBatchAuto), 1 sends one message per call. A batch
	// never spans more than BatchSpan of the schedule.
	SendBatch     int
	IOThreads     int // libzmq I/O threads
	LateThreshold time.Duration
	// MaxLateFraction is the share of late slots (after the warm-up) above
	// which the run did not keep its schedule (0: DefaultMaxLateFraction).
	MaxLateFraction float64
	SkipRateCheck   bool // do not refuse rates above the measured send cost
	// Stalls are injected stalls of emission threads ("thread<N>"), from
	// the run's start (a test fixture, see internal/inject): the thread
	// stops sending, and its schedule runs on without it.
	Stalls []inject.Stall
	// Seal, when not zero, seals every tuple's intended time under its id
	// (wire.SealKey): in a trial of a job, whose output's times the
	// receivers check with the same key.
	Seal       wire.SealKey  `json:"-"`
	EndTimeout time.Duration // how long to try delivering end markers
	// NoServiceRates leaves out the service-rate estimates (and the
	// periods they are made of) while accounting.
	NoServiceRates bool
	// LiveActivity, if not 0, lets a live view read each accounted
	// stage's last LiveActivity state changes (stage.Set.Live, kept from
	// its first read on; an agent serves them to cpsweep watch).
	LiveActivity int
	Clock        *tsc.Clock
	// Profile, if set, gets a channel "emit.<thread>" per thread, its
	// handler from Handlers (Null when unlisted): every emitted tuple id.
	Profile  *profiler.Profiler
	Handlers *profiler.Handlers
	// MemoryBudget is the most memory the run may plan to use, checked
	// against MemoryEstimate before anything is allocated (0:
	// DefaultMemoryBudget). It is the process's setting, never a
	// request's.
	MemoryBudget int64
	// Cancel, when closed, ends the preparation in New early (a stop
	// that comes while a trial is being prepared): New returns
	// ErrCancelled.
	Cancel <-chan struct{}
}

// Limits of a sender's configuration. Every value from a flag or a
// controller's request is checked against them before anything is
// allocated (docs/security.md lists them).
const (
	MaxThreads   = 256
	MaxEndpoints = 256
	MaxRate      = 1e10 // tuples/s
	// MinRate is the smallest paced rate: one tuple every 1000 s. Below
	// it a slot would outlast any run (and its length any clock).
	MinRate          = 1e-3
	MaxDuration      = 24 * time.Hour
	MaxBucketSize    = 1 << 20
	MaxMessageBytes  = 64 << 20 // a bucket's encoded size (dgrecv's default --max-message)
	MaxLateThreshold = time.Minute
	MaxEndTimeout    = 10 * time.Minute
	// MaxStartLead is how far in the future a common start may be: a
	// start time beyond it is refused, not waited for.
	MaxStartLead = time.Minute
	MaxSendBatch = 64
)

// checkInstruments checks the injected stalls and the stage accounting.
func (c *Config) checkInstruments() error {
	if err := inject.CheckStalls(c.Stalls, map[string]int{"thread": c.Threads}); err != nil {
		return err
	}
	if err := cpustat.CheckNames(c.SUTProcesses); err != nil {
		return err
	}
	if c.SendWork < 0 || c.SendWork > inject.MaxWork {
		return fmt.Errorf("send work must be 0 to %v per bucket, got %v", inject.MaxWork, c.SendWork)
	}
	if c.StagePeriod != 0 {
		return stage.CheckPeriod(c.StagePeriod)
	}
	return nil
}

// Validate checks every field against its range and fills defaults; it
// allocates nothing, so it is safe on untrusted input.
func (c *Config) Validate() error {
	problems := zmqraw.Sockets{Endpoints: c.Endpoints, MaxEndpoints: MaxEndpoints, HWM: c.HWM, IOThreads: c.IOThreads, CPUs: c.CPUs}.Problems()
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	problems = append(problems, driver.Problems(c.Endpoints, c.Bind)...)
	if c.Threads < 1 || c.Threads > MaxThreads {
		bad("threads must be 1..%d, got %d", MaxThreads, c.Threads)
	}
	problems = append(problems, c.timeProblems()...)
	problems = append(problems, c.jsonProblems()...)
	if err := c.checkInstruments(); err != nil {
		bad("%v", err)
	}
	if c.BucketSize < 1 || c.BucketSize > MaxBucketSize {
		bad("bucket size must be 1..%d tuples, got %d", MaxBucketSize, c.BucketSize)
	}
	if c.SendBatch < 0 || c.SendBatch > MaxSendBatch {
		bad("send batch must be 0 (auto) to %d messages, got %d", MaxSendBatch, c.SendBatch)
	}
	if c.Overflow != trialcfg.Block && c.Overflow != trialcfg.Drop {
		bad("overflow policy must be %q or %q, got %.32q", trialcfg.Block, trialcfg.Drop, c.Overflow)
	}
	if c.Idle == trialcfg.Auto || c.Idle == "" {
		c.Idle = trialcfg.Sleep
		if runtime.NumCPU() >= 4 {
			c.Idle = trialcfg.Spin
		}
	}
	if c.Idle != trialcfg.Spin && c.Idle != trialcfg.Yield && c.Idle != trialcfg.Sleep {
		bad("idle strategy must be auto, spin, yield or sleep, got %.32q", c.Idle)
	}
	if c.Scenario == nil {
		bad("no scenario")
	} else if err := c.Scenario.Validate(); err != nil {
		bad("%v", err)
	} else if c.BucketSize >= 1 && c.BucketSize <= MaxBucketSize && c.BucketSize*c.Scenario.MaxTupleSize() > MaxMessageBytes {
		bad("a bucket of %d tuples of up to %d bytes exceeds %d MiB: use smaller buckets", c.BucketSize, c.Scenario.MaxTupleSize(), MaxMessageBytes>>20)
	}
	if err := c.Shape.Validate(); err != nil {
		bad("%v", err)
	}
	if msg := c.windowProblem(); msg != "" {
		bad("%s", msg)
	}
	if len(problems) == 0 {
		if c.MemoryBudget < 0 {
			bad("memory budget must not be negative")
		} else if err := c.checkMemory(); err != nil {
			bad("%v", err)
		}
	}
	if c.LateThreshold < 0 || c.LateThreshold > MaxLateThreshold {
		bad("late threshold must be 0 to %v, got %v", MaxLateThreshold, c.LateThreshold)
	}
	if c.MaxLateFraction < 0 || c.MaxLateFraction > 1 || math.IsNaN(c.MaxLateFraction) {
		bad("max late fraction must be 0 (default) to 1, got %v", c.MaxLateFraction)
	}
	if c.EndTimeout < 0 || c.EndTimeout > MaxEndTimeout {
		bad("end timeout must be 0 to %v, got %v", MaxEndTimeout, c.EndTimeout)
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	c.HWM, c.IOThreads = zmqraw.Defaults(c.HWM, c.IOThreads)
	if c.LateThreshold <= 0 {
		c.LateThreshold = 10 * time.Microsecond
	}
	if c.EndTimeout <= 0 {
		c.EndTimeout = 10 * time.Second
	}
	if c.MaxLateFraction == 0 {
		c.MaxLateFraction = DefaultMaxLateFraction
	}
	return nil
}

// timeProblems checks the rate, how long the run lasts and when it starts.
func (c *Config) timeProblems() []string {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	switch {
	case c.Rate < 0 || c.Rate > MaxRate || math.IsNaN(c.Rate):
		bad("rate must be 0 (unpaced) to %g tuples/s, got %v", MaxRate, c.Rate)
	case c.Rate > 0 && c.Rate < MinRate:
		bad("rate %v tuples/s is below the smallest paced rate, %g tuples/s (one tuple every %v); give 0 for unpaced", c.Rate, MinRate, time.Duration(float64(time.Second)/MinRate))
	}
	if c.Duration < 0 || c.Duration > MaxDuration {
		bad("duration must be 0 to %v, got %v", MaxDuration, c.Duration)
	}
	if c.Duration == 0 && c.Count == 0 {
		bad("give a duration or a count, or the run never ends")
	}
	if c.Count > 0 && c.Rate > 0 && float64(c.Count)/c.Rate > MaxDuration.Seconds() {
		bad("%d tuples at %g tuples/s take longer than %v", c.Count, c.Rate, MaxDuration)
	}
	if c.Warmup < 0 || (c.Duration > 0 && c.Warmup > c.Duration) {
		bad("warm-up must be 0 to the duration (%v), got %v", c.Duration, c.Warmup)
	}
	if !c.StartAt.IsZero() && time.Until(c.StartAt) > MaxStartLead {
		bad("start time %s is more than %v ahead: refused rather than waited for", c.StartAt.UTC().Format(time.RFC3339), MaxStartLead)
	}
	return problems
}

// DefaultMaxLateFraction: a paced run with more than 1% of its slots late
// did not keep its schedule.
const DefaultMaxLateFraction = 0.01
