package sender

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	zmq "github.com/pebbe/zmq4"
	"golang.org/x/sys/unix"

	"github.com/cloudprofiler-go/cp/internal/histo"
	"github.com/cloudprofiler-go/cp/internal/osthread"
	"github.com/cloudprofiler-go/cp/internal/zmqraw"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/wire"
)

// Overflow says what a thread does when its socket is at the high-water mark.
type Overflow string

const (
	// Block waits (ZeroMQ's default): nothing is lost, lateness grows.
	Block Overflow = "block"
	// Drop sends with ZMQ_DONTWAIT and counts EAGAIN as a dropped bucket.
	Drop Overflow = "drop"
)

// Idle says how a thread waits for its next slot.
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

// Config describes one dgsend run.
type Config struct {
	Endpoints []string // ZeroMQ endpoints; thread i uses Endpoints[i % len]
	Bind      bool     // bind instead of connect (a system under test pulls from us)
	SenderID  uint8    // distinguishes senders in stream and tuple ids
	Threads   int
	Rate      float64 // total tuples per second over all threads; 0 = unpaced
	Duration  time.Duration
	Shape     Shape         // how the rate varies around its mean (zero: constant)
	Warmup    time.Duration // lateness is recorded only for slots due after the warm-up
	// StartAt (wall clock) aligns the start of several senders, possibly on
	// several hosts; zero or past: start 20 ms after Run is called.
	StartAt       time.Time
	Count         uint64 // total tuples; 0 = until Duration or Stop
	BucketSize    int
	Scenario      *scenarios.Scenario
	Overflow      Overflow
	Idle          Idle
	CPUs          []int // CPU per thread (cycled); nil = not pinned
	HWM           int   // send high-water mark in messages
	IOThreads     int   // libzmq I/O threads
	LateThreshold time.Duration
	// MaxLateFraction is the share of late slots (after the warm-up) above
	// which the run did not keep its schedule (0: DefaultMaxLateFraction).
	MaxLateFraction float64
	SkipRateCheck   bool          // do not refuse rates above the measured send cost
	EndTimeout      time.Duration // how long to try delivering end markers
	Clock           *tsc.Clock
	// Profile, if set, gets a channel "emit.<thread>" per thread, its
	// handler from Handlers (Null when unlisted): every emitted tuple id.
	Profile  *profiler.Profiler
	Handlers *profiler.Handlers
}

// Limits of a sender's configuration. Every value from a flag or a
// controller's request is checked against them before anything is
// allocated (docs/security.md lists them).
const (
	MaxThreads       = 256
	MaxEndpoints     = 256
	MaxRate          = 1e10 // tuples/s
	MaxDuration      = 24 * time.Hour
	MaxBucketSize    = 1 << 20
	MaxMessageBytes  = 64 << 20 // a bucket's encoded size (dgrecv's default --max-message)
	MaxLateThreshold = time.Minute
	MaxEndTimeout    = 10 * time.Minute
	// MaxStartLead is how far in the future a common start may be: a
	// start time beyond it is refused, not waited for.
	MaxStartLead = time.Minute
)

// Validate checks every field against its range and fills defaults; it
// allocates nothing, so it is safe on untrusted input.
func (c *Config) Validate() error {
	problems := zmqraw.Sockets{Endpoints: c.Endpoints, MaxEndpoints: MaxEndpoints, HWM: c.HWM, IOThreads: c.IOThreads, CPUs: c.CPUs}.Problems()
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if c.Threads < 1 || c.Threads > MaxThreads {
		bad("threads must be 1..%d, got %d", MaxThreads, c.Threads)
	}
	if c.Rate < 0 || c.Rate > MaxRate || math.IsNaN(c.Rate) {
		bad("rate must be 0 (unpaced) to %g tuples/s, got %v", MaxRate, c.Rate)
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
	if c.BucketSize < 1 || c.BucketSize > MaxBucketSize {
		bad("bucket size must be 1..%d tuples, got %d", MaxBucketSize, c.BucketSize)
	}
	if c.Overflow != Block && c.Overflow != Drop {
		bad("overflow policy must be %q or %q, got %.32q", Block, Drop, c.Overflow)
	}
	if c.Idle == Auto || c.Idle == "" {
		c.Idle = Sleep
		if runtime.NumCPU() >= 4 {
			c.Idle = Spin
		}
	}
	if c.Idle != Spin && c.Idle != Yield && c.Idle != Sleep {
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

// DefaultMaxLateFraction: a paced run with more than 1% of its slots late
// did not keep its schedule.
const DefaultMaxLateFraction = 0.01

// stoppedEndTimeout bounds the end markers' delivery, and the flush of
// what is queued, after Stop.
const stoppedEndTimeout = 300 * time.Millisecond

// EndGrace is how long after the end of the run a thread that is behind
// schedule keeps sending slots that were due before the end.
const EndGrace = 10 * time.Millisecond

// Sender runs the emission threads of one dgsend process.
type Sender struct {
	cfg      Config
	ctx      *zmq.Context
	threads  []*thread
	stop     atomic.Bool
	ran      atomic.Bool // Run was called
	running  atomic.Bool // emission threads are running
	sendCost time.Duration
	started  time.Time
	mon      monitor
}

// thread is one emission thread and its stream.
type thread struct {
	id       int
	stream   uint32
	cpu      int // -1: not pinned
	endpoint string
	sock     *zmq.Socket
	raw      *zmqraw.Socket
	link     *Link
	tpls     []scenarios.Template
	slots    uint64 // slot limit (count mode)

	// Published counters: written by the emission loop, read by anyone.
	emittedTuples  atomic.Uint64
	emittedBuckets atomic.Uint64
	droppedBuckets atomic.Uint64
	droppedTuples  atomic.Uint64
	lateSlots      atomic.Uint64
	lateness       histo.Log2 // ns

	// Owned by the loop until it returns.
	precise       *histo.Precise // lateness, ns
	windows       []uint64       // cumulative tuples emitted at each 1 s boundary
	scheduled     uint64         // slots the schedule called for before the end
	lastSend      uint64
	endMarker     error
	err           error
	sched         Schedule
	emit          *profiler.Channel // nil: not profiled
	interrupted   bool
	napMargin     time.Duration // idle sleep: wake this long before the slot
	measuredSlots uint64        // slots due after the warm-up (lateness denominator)
}

// New validates cfg, connects the sockets, pre-serializes the buckets and
// measures the cost of one send, refusing a rate whose per-thread budget
// is below it (unless SkipRateCheck).
func New(cfg Config) (*Sender, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		return nil, errors.New("no TSC clock")
	}
	encoded, err := cfg.Scenario.Generate()
	if err != nil {
		return nil, err
	}
	// The context (and its I/O threads) is created before any thread is
	// pinned: C threads inherit the creator's affinity mask.
	ctx, err := zmqraw.NewContext(cfg.IOThreads)
	if err != nil {
		return nil, err
	}
	s := &Sender{cfg: cfg, ctx: ctx}
	for i := 0; i < cfg.Threads; i++ {
		t := &thread{id: i, stream: wire.StreamID(cfg.SenderID, uint8(i)), cpu: -1,
			endpoint: cfg.Endpoints[i%len(cfg.Endpoints)], slots: math.MaxUint64, precise: histo.NewPrecise()}
		if len(cfg.CPUs) > 0 {
			t.cpu = cfg.CPUs[i%len(cfg.CPUs)]
		}
		if t.tpls, err = scenarios.Templates(encoded, t.stream, cfg.BucketSize); err != nil {
			s.Close()
			return nil, err
		}
		if cfg.Count > 0 {
			share := cfg.Count / uint64(cfg.Threads)
			if uint64(i) < cfg.Count%uint64(cfg.Threads) {
				share++
			}
			t.slots = (share + uint64(cfg.BucketSize) - 1) / uint64(cfg.BucketSize) // whole buckets
		}
		if cfg.Profile != nil {
			// Kept even when Null: a live switch may turn it on.
			if t.emit, err = cfg.Profile.OpenNamed(fmt.Sprintf("emit.%d", i), cfg.Handlers); err != nil {
				s.Close()
				return nil, err
			}
		}
		s.threads = append(s.threads, t)
		if t.sock, t.link, err = s.openSocket(t.id, t.endpoint); err != nil {
			s.Close()
			return nil, err
		}
		if t.raw, err = zmqraw.Wrap(t.sock, 0, 0); err != nil {
			s.Close()
			return nil, err
		}
	}
	if s.sendCost, err = measureSendCost(ctx, s.threads[0].tpls[0].Msg); err != nil {
		s.Close()
		return nil, err
	}
	if cfg.Rate > 0 && !cfg.SkipRateCheck {
		budget := time.Duration(float64(time.Second) * float64(cfg.BucketSize) * float64(cfg.Threads) / cfg.Rate)
		if budget < s.sendCost {
			most := float64(cfg.BucketSize) * float64(cfg.Threads) / s.sendCost.Seconds()
			s.Close()
			return nil, &RateError{Rate: cfg.Rate, Budget: budget, SendCost: s.sendCost, BucketSize: cfg.BucketSize, Threads: cfg.Threads, Most: most}
		}
	}
	return s, nil
}

// RateError is a rate refused because its per-thread budget is below the
// measured cost of one send: the sender could not keep the schedule.
type RateError struct {
	Rate       float64
	Budget     time.Duration // per thread and send
	SendCost   time.Duration
	BucketSize int
	Threads    int
	Most       float64 // about the highest rate these threads can send
}

func (e *RateError) Error() string {
	return fmt.Sprintf("rate %.0f tuples/s needs a send every %v per thread, but one send of a %d-tuple bucket costs %v here: "+
		"the most %d thread(s) can do is about %.0f tuples/s; use more threads or larger buckets (--bucket), or --no-rate-check to try anyway",
		e.Rate, e.Budget, e.BucketSize, e.SendCost, e.Threads, e.Most)
}

func (s *Sender) openSocket(thread int, endpoint string) (*zmq.Socket, *Link, error) {
	var link *Link
	// A bounded send timeout lets a blocked thread notice the end of the
	// trial or a stop request; in block mode it simply retries. The
	// monitor is attached before connecting: no event is missed.
	sock, err := zmqraw.Open{Kind: zmq.PUSH, HWM: s.cfg.HWM, Timeout: 100 * time.Millisecond, Linger: s.cfg.EndTimeout, Bind: s.cfg.Bind,
		Attach: func(sock *zmq.Socket) (err error) {
			link, err = s.mon.watch(s.ctx, sock, thread, endpoint)
			return err
		}}.Socket(s.ctx, endpoint)
	if err != nil {
		return nil, nil, err
	}
	return sock, link, nil
}

// measureSendCost times zmq_send of msg into a loopback PUSH socket that a
// goroutine drains (so the queue's memory is recycled, as in a real run)
// and returns the median per-send CPU cost of five batches: the floor below
// which a slot budget cannot be met.
func measureSendCost(ctx *zmq.Context, msg []byte) (time.Duration, error) {
	pull, err := ctx.NewSocket(zmq.PULL)
	if err != nil {
		return 0, fmt.Errorf("measure send cost: %w", err)
	}
	defer pull.Close()
	_ = pull.SetLinger(0)
	_ = pull.SetRcvtimeo(50 * time.Millisecond)
	if err := pull.Bind("tcp://127.0.0.1:*"); err != nil {
		return 0, fmt.Errorf("measure send cost: bind loopback: %w", err)
	}
	ep, _ := pull.GetLastEndpoint()
	push, err := ctx.NewSocket(zmq.PUSH)
	if err != nil {
		return 0, fmt.Errorf("measure send cost: %w", err)
	}
	defer push.Close()
	_ = push.SetLinger(0)
	if err := push.Connect(ep); err != nil {
		return 0, fmt.Errorf("measure send cost: connect %s: %w", ep, err)
	}
	in, err := zmqraw.Wrap(pull, 1, len(msg))
	if err != nil {
		return 0, err
	}
	out, err := zmqraw.Wrap(push, 0, 0)
	if err != nil {
		in.Close()
		return 0, err
	}
	defer out.Close()
	var stop atomic.Bool
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		defer in.Close()
		osthread.LockWithTightTimers()
		for !stop.Load() {
			_, _ = in.Recv(0)
		}
	}()
	defer func() { stop.Store(true); <-drained }()
	// CPU time of this thread, not wall time: on a small machine the drain
	// and the I/O threads take the CPU away, and that is contention (which
	// the run reports as lateness), not the cost of a send.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n := max(200, min((64<<20)/(len(msg)+64), 20000)) // ~64 MiB per batch at most
	costs := make([]time.Duration, 0, 5)
	for batch := 0; batch < 6; batch++ {
		start, err := threadCPUTime()
		if err != nil {
			return 0, err
		}
		for i := 0; i < n; i++ {
			if err := out.Send(msg, false); err != nil && err != zmqraw.ErrAgain {
				return 0, fmt.Errorf("measure send cost: %w", err)
			}
		}
		end, err := threadCPUTime()
		if err != nil {
			return 0, err
		}
		if batch > 0 { // the first batch warms up the connection
			costs = append(costs, (end-start)/time.Duration(n))
		}
	}
	sort.Slice(costs, func(i, j int) bool { return costs[i] < costs[j] })
	return costs[len(costs)/2], nil
}

func threadCPUTime() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, fmt.Errorf("read thread CPU time: %w", err)
	}
	return time.Duration(ts.Nano()), nil
}

// Stop asks the threads to finish; it is safe from a signal handler
// goroutine. Run still sends the end markers.
func (s *Sender) Stop() { s.stop.Store(true) }

// Close releases the sockets and the ZeroMQ context. Run has closed them
// already (to learn whether everything queued was flushed); before Run
// there is nothing queued to wait for.
func (s *Sender) Close() { s.closeSockets(0) }

// ThreadRate is one emission thread's rate when total is shared evenly by
// threads threads: the one place a rate is split, whether by cpsweep over
// every thread of every sender or by a sender over its own.
func ThreadRate(total float64, threads int) float64 { return total / float64(threads) }

// closeSockets closes every socket, lingering up to linger where a peer is
// connected (none: waiting would deliver nothing), and terminates the
// context, which waits for what is queued to leave; it returns how long
// that took.
func (s *Sender) closeSockets(linger time.Duration) time.Duration {
	for _, t := range s.threads {
		if t.raw != nil {
			t.raw.Close()
			t.raw = nil
		}
		if t.sock != nil {
			l := linger
			if t.link == nil || t.link.PeersAtEnd == 0 {
				l = 0
			}
			_ = t.sock.SetLinger(l)
			t.sock.Close()
			t.sock = nil
		}
	}
	s.mon.wait()
	if s.ctx == nil {
		return 0
	}
	start := time.Now()
	_ = s.ctx.Term()
	s.ctx = nil
	return time.Since(start)
}

// flush closes the sockets after the run and records, per link, whether
// everything queued left (the context closed before the linger ran out).
func (s *Sender) flush() {
	linger := s.cfg.EndTimeout
	if s.stop.Load() {
		linger = stoppedEndTimeout
	}
	took := s.closeSockets(linger)
	for _, t := range s.threads {
		t.link.linger = linger
		t.link.Flushed = t.link.PeersAtEnd > 0 && took < linger-linger/10
	}
}

// Run emits until the duration, count or Stop, sends every stream's end
// marker, and returns the result. It can be called once.
func (s *Sender) Run() (*Result, error) {
	if !s.ran.CompareAndSwap(false, true) {
		return nil, errors.New("sender already ran")
	}
	s.running.Store(true)
	defer s.running.Store(false)
	clock := s.cfg.Clock
	// A common start a little in the future so all threads (and, with
	// StartAt, all senders) begin together.
	lead := 20 * time.Millisecond
	if until := time.Until(s.cfg.StartAt); until > lead {
		lead = until
	}
	start := tsc.Read() + clock.Ticks(lead)
	end := uint64(math.MaxUint64)
	if s.cfg.Duration > 0 {
		end = start + clock.Ticks(s.cfg.Duration)
	}
	nWindows := 1
	if s.cfg.Duration > 0 {
		nWindows = int(s.cfg.Duration/time.Second) + 2
	} else if s.cfg.Rate > 0 {
		nWindows = int(float64(s.cfg.Count)/s.cfg.Rate) + 2
	}
	nWindows = min(max(nWindows, 1), 7*24*3600)
	s.started = time.Now()
	s.mon.run()
	var wg sync.WaitGroup
	var shared *profile // a tabulated shape is the same for every thread
	for _, t := range s.threads {
		t.windows = make([]uint64, nWindows)
		if s.cfg.Rate > 0 {
			if shared != nil {
				own := *shared
				t.sched = &own
			} else {
				length := s.cfg.Duration
				if length <= 0 {
					length = time.Duration(float64(s.cfg.Count) / s.cfg.Rate * float64(time.Second))
				}
				sched, err := NewSchedule(s.cfg.Shape, start, clock.Hz, s.cfg.BucketSize, ThreadRate(s.cfg.Rate, s.cfg.Threads), length, t.id)
				if err != nil {
					return nil, err
				}
				t.sched = sched
				shared, _ = sched.(*profile)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.run(s, start, end)
		}()
	}
	wg.Wait()
	s.flush()
	res := s.result(start, end)
	res.StartUnixNs = clock.UnixNano(start)
	res.WarmupNs = s.cfg.Warmup.Nanoseconds()
	return res, nil
}

// run is one emission thread (Fig. 9b). It owns its socket and never
// unlocks its OS thread: a pinned thread must not return to the pool.
func (t *thread) run(s *Sender, start, end uint64) {
	if t.cpu >= 0 {
		if err := osthread.PinThread(t.cpu); err != nil {
			t.err = err
			return
		}
	}
	osthread.LockWithTightTimers()
	if s.cfg.Idle == Sleep {
		// Sleep only as close to a slot as this thread's wakeups allow.
		t.napMargin = osthread.NapOvershoot(20*time.Microsecond, 50) + 5*time.Microsecond
	}
	t.loop(s, start, end)
	t.endMarker = t.sendEnd(s)
}

func (t *thread) loop(s *Sender, start, end uint64) {
	cfg := &s.cfg
	clock := cfg.Clock
	paced := cfg.Rate > 0
	drop := cfg.Overflow == Drop
	lateTicks := clock.Ticks(cfg.LateThreshold)
	nsPerTick := 1e9 / clock.Hz
	pace := pacer{idle: cfg.Idle, stop: &s.stop,
		yieldTicks:  clock.Ticks(5 * time.Microsecond),
		sleepMargin: clock.Ticks(t.napMargin),
		minNap:      clock.Ticks(10 * time.Microsecond),
		slack:       clock.Ticks(3 * time.Microsecond),
		maxMargin:   clock.Ticks(250 * time.Microsecond),
		maxNap:      clock.Ticks(maxNap),
		nsPerTick:   nsPerTick,
	}
	if paced {
		pace.maxMargin = min(pace.maxMargin, uint64(t.sched.SlotTicks()/2))
	}
	pace.sleepMargin = min(pace.sleepMargin, pace.maxMargin)
	measureFrom := start + clock.Ticks(cfg.Warmup)
	endGrace := end
	if end != math.MaxUint64 {
		endGrace = end + clock.Ticks(EndGrace)
	}
	ticksPerSec := uint64(clock.Hz)
	publishTicks := clock.Ticks(publishEvery)
	nextPublish := start
	bucket := uint64(cfg.BucketSize)
	tpls := t.tpls
	stop := &s.stop

	var (
		k, seq, tupleSeq, emitted, buckets, dropB, late, measured uint64
		idx                                                       int
		w                                                         int
		winEnd                                                    = start + ticksPerSec
	)
	// Until the common start (up to MaxStartLead away), nap in short
	// slices so that a stop is noticed at once.
	for !stop.Load() && tsc.ReadFast()+pace.maxNap < start {
		osthread.Nap(maxNap)
	}
	pace.wait(start)
	for k < t.slots {
		var due uint64
		if paced {
			due = t.sched.Due(k)
			pace.wait(due)
		}
		tpl := &tpls[idx]
		if paced {
			if due >= end {
				break // the schedule is complete
			}
			tpl.Patch(seq, wire.TupleID(t.stream, tupleSeq), clock.UnixNano(due))
		}
		at := tsc.ReadFast()
		// A slot due before the end is still sent a little after it; a
		// thread more than the grace behind stops, and the rest of the
		// schedule is reported as shortfall.
		if stop.Load() || (paced && at >= endGrace) || (!paced && at >= end) {
			t.interrupted = stop.Load() && at < end
			break
		}
		if !paced {
			due = at
			tpl.Patch(seq, wire.TupleID(t.stream, tupleSeq), clock.UnixNano(at))
		}
		err := t.raw.Send(tpl.Msg, drop)
		for err == zmqraw.ErrAgain && !drop { // block mode: the send timeout expired, keep trying
			if tsc.ReadFast() >= end || stop.Load() {
				break
			}
			err = t.raw.Send(tpl.Msg, false)
		}
		switch err {
		case nil:
			if t.emit != nil { // stamped with the instant of the send (a Null channel returns at once)
				t.emit.LogRangeAt(at, wire.TupleID(t.stream, tupleSeq), bucket)
			}
			seq++
			tupleSeq += bucket
			emitted += bucket
			buckets++
		case zmqraw.ErrAgain:
			if drop {
				dropB++
			}
		default:
			t.err = fmt.Errorf("send on %s: %w", t.endpoint, err)
		}
		if paced && due >= measureFrom {
			measured++
			lateness := at - due
			if at < due {
				lateness = 0
			}
			if lateness > lateTicks {
				late++
			}
			ns := uint64(float64(lateness) * nsPerTick) // the same buckets on every host
			t.lateness.Record(ns)
			t.precise.Record(int64(ns))
		}
		for at >= winEnd {
			if w < len(t.windows) {
				t.windows[w] = emitted
			}
			w++
			winEnd += ticksPerSec
		}
		t.lastSend = at
		k++
		if idx++; idx == len(tpls) {
			idx = 0
		}
		// Counters are published every 64 slots, and at least every
		// publishEvery, so that a scrape at a low rate is exact too.
		if k&63 == 0 || at >= nextPublish || t.err != nil {
			nextPublish = at + publishTicks
			t.publish(emitted, buckets, dropB, late, bucket)
			if t.err != nil {
				break
			}
		}
	}
	t.publish(emitted, buckets, dropB, late, bucket)
	t.measuredSlots = measured
	if paced {
		// What the schedule called for: every slot due before the end (or,
		// when stopped early, before the stop), up to the count limit.
		stopAt := end
		if t.interrupted || stopAt == math.MaxUint64 {
			stopAt = t.lastSend + 1
		}
		t.scheduled = min(t.sched.SlotsBefore(stopAt), t.slots)
		t.scheduled = max(t.scheduled, k)
	} else {
		t.scheduled = k
	}
	// Windows not reached (run ended early) stay at the final count.
	for ; w < len(t.windows); w++ {
		t.windows[w] = emitted
	}
}

func (t *thread) publish(emitted, buckets, dropB, late, bucket uint64) {
	t.emittedTuples.Store(emitted)
	t.emittedBuckets.Store(buckets)
	t.droppedBuckets.Store(dropB)
	t.droppedTuples.Store(dropB * bucket)
	t.lateSlots.Store(late)
	t.lateness.Publish()
}

// publishEvery bounds how stale the published counters may be while
// the loop is sending.
const publishEvery = 10 * time.Millisecond

// maxNap is the longest the emission loop sleeps at once: a stop is
// noticed within it, however far the next slot is.
const maxNap = 10 * time.Millisecond

// pacer holds an emission thread until its next slot (the idle
// strategy's wait) and returns early when the run is stopped.
type pacer struct {
	idle       Idle
	stop       *atomic.Bool
	yieldTicks uint64 // Yield: spin only this close to the slot
	// sleepMargin is the thread's adaptive wake-up margin (Sleep), minNap
	// the shortest sleep worth taking, slack the safety added to an
	// observed overshoot, maxMargin the widest margin, maxNap the longest
	// single sleep.
	sleepMargin, minNap, slack, maxMargin, maxNap uint64
	nsPerTick                                     float64
}

// wait returns when the TSC reaches due, or when the run is stopped.
func (p *pacer) wait(due uint64) {
	for {
		now := tsc.ReadFast()
		if now >= due || p.stop.Load() {
			return
		}
		rem := due - now
		switch {
		case p.idle == Yield && rem > p.yieldTicks:
			_, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		case p.idle == Sleep && rem > p.sleepMargin+p.minNap:
			// Wake a margin before the slot and spin the rest. The margin
			// follows this thread's wake-up overshoot (a VM's vCPU wakes
			// later from longer sleeps): it widens by a quarter of the gap
			// after a late wake-up and narrows slowly after timely ones, up
			// to maxMargin. A longer overshoot is the CPU being busy, which
			// spinning longer before every slot would only make worse.
			nap := min(rem-p.sleepMargin, p.maxNap)
			osthread.Nap(time.Duration(float64(nap) * p.nsPerTick))
			woke := tsc.ReadFast()
			if over := int64(woke - (now + nap)); over > 0 && uint64(over)+p.slack > p.sleepMargin {
				p.sleepMargin = min(p.sleepMargin+(uint64(over)+p.slack-p.sleepMargin)/4+1, p.maxMargin)
			} else {
				p.sleepMargin -= p.sleepMargin / 64
			}
		}
	}
}

// sendEnd delivers the stream's end marker, retrying until EndTimeout.
func (t *thread) sendEnd(s *Sender) error {
	reason := "completed"
	switch {
	case t.err != nil:
		reason = "error"
	case t.interrupted:
		reason = "interrupted"
	}
	msg, err := wire.AppendEnd(nil, t.stream, wire.End{
		Tuples: t.emittedTuples.Load(), Buckets: t.emittedBuckets.Load(),
		DroppedBuckets: t.droppedBuckets.Load(), DroppedTuples: t.droppedTuples.Load(), Reason: reason,
	})
	if err != nil {
		return err
	}
	// The run's connection state is taken when the marker is queued: a
	// peer that leaves after that (a receiver that got everything and
	// exits) is no fault of the run.
	defer t.link.settle()
	if !s.stop.Load() { // a stop ends the run within a second
		t.link.awaitFirst(min(s.cfg.EndTimeout, connectGrace))
	}
	timeout := s.cfg.EndTimeout
	if s.stop.Load() || t.link.peers.Load() == 0 {
		// a stop ends the run within a second; with no peer, waiting longer delivers nothing
		timeout = min(timeout, stoppedEndTimeout)
	}
	deadline := time.Now().Add(timeout)
	for {
		err := t.raw.Send(msg, false)
		if err == nil {
			return nil
		}
		if err != zmqraw.ErrAgain || time.Now().After(deadline) {
			return fmt.Errorf("end marker of stream %d to %s not delivered within %v: %w", t.stream, t.endpoint, timeout, err)
		}
	}
}
