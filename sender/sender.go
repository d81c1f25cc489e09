package sender

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	zmq "github.com/pebbe/zmq4"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/histo"
	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/internal/zmqraw"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sender/tally"
	"github.com/cloudprofiler-go/cp/servicerate"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/wire"
)

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
	stages   *stage.Set // nil: no stage accounting
	rates    *servicerate.Tracker
	// cpu measures the process's threads and the host (package cpustat).
	cpu *cpustat.Sampler
	// table is a tabulated shape's schedule, made once in New from time 0
	// (a large one takes a while; Run only moves it to the start).
	table *shapedSchedule
	join  *scenarios.Campaigns // the scenario's campaigns (nil: no window declared)
}

// ErrCancelled is New's error when Config.Cancel was closed during the
// preparation.
var ErrCancelled = errors.New("stopped while the run was being prepared")

func (c *Config) cancelled() bool {
	if c.Cancel == nil {
		return false
	}
	select {
	case <-c.Cancel:
		return true
	default:
		return false
	}
}

// thread is one emission thread and its stream.
type thread struct {
	holds    inject.Holds // injected stalls
	sendWork uint64       // injected busy work per bucket, in ticks
	id       int
	stream   uint32
	cpu      int // -1: not pinned
	endpoint string
	sock     *zmq.Socket
	raw      *zmqraw.Socket
	out      outlet          // raw's, or a broker producer's
	prod     driver.Producer // nil: a ZeroMQ socket
	flushErr error           // the producer's final flush
	link     *link
	tpls     []scenarios.Template   // at least one per message of a batch
	matches  []uint64               // per template: its tuples cfg.Expect keeps (nil: none declared)
	matched  uint64                 // tuples sent that cfg.Expect keeps (written by wrapUp)
	keys     [][]scenarios.KeyCount // per template: its campaigns' tuples cfg.Expect keeps (nil: no window declared)
	win      *windowTally           // per campaign and window (nil: no window declared; made by loop)
	items    []zmqraw.BatchItem     // the batch handed to C (see batch.go)
	msgs     [][]byte               // the batch's messages, for outlets that do not read items
	dues     []dueMemo
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
	json          bool // JSON events on a broker: no end marker (a job reads only events)
	err           error
	sched         Schedule
	emit          *profiler.Channel // nil: not profiled
	acct          *stage.Account    // nil: no stage accounting
	finished      atomic.Bool       // the loop has returned (its queue is empty)
	interrupted   bool
	napMargin     time.Duration // idle sleep: wake this long before the slot
	measuredSlots uint64        // slots due after the warm-up (lateness denominator)
	cpuNs         int64         // CPU time of the thread from its start to its end marker
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
	var encoded []scenarios.Encoded
	var err error
	if cfg.Scenario.Schema != scenarios.SchemaEvents { // a user's events are their own templates
		if encoded, err = cfg.Scenario.Generate(); err != nil {
			return nil, err
		}
	}
	// The context (and its I/O threads) is created before any thread is
	// pinned: C threads inherit the creator's affinity mask.
	ctx, err := zmqraw.NewContext(cfg.IOThreads)
	if err != nil {
		return nil, err
	}
	s := &Sender{cfg: cfg, ctx: ctx, cpu: cpustat.New()}
	if cfg.ExpectWindow > 0 {
		if s.join, err = cfg.Scenario.Join(); err != nil {
			s.Close()
			return nil, err
		}
	}
	s.cpu.TrackSystem(cfg.SUTProcesses)
	if cfg.StagePeriod > 0 {
		s.stages = stage.NewSet(cfg.Clock, cfg.StagePeriod)
		s.stages.EnableLive(cfg.LiveActivity)
		if !cfg.NoServiceRates {
			s.rates = servicerate.Track(s.stages, cfg.Clock)
		}
	}
	for i := 0; i < cfg.Threads; i++ {
		if cfg.cancelled() {
			s.Close()
			return nil, ErrCancelled
		}
		if err := s.addThread(i, encoded); err != nil {
			s.Close()
			return nil, err
		}
	}
	if s.sendCost, err = measureSendCost(ctx, s.threads[0].tpls[0].Msg, cfg.Cancel); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.tabulate(); err != nil {
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

// length is the run's length for laying out a shape.
func (s *Sender) length() time.Duration {
	if s.cfg.Duration > 0 || s.cfg.Rate <= 0 {
		return s.cfg.Duration
	}
	return time.Duration(float64(s.cfg.Count) / s.cfg.Rate * float64(time.Second))
}

// tabulate makes a tabulated shape's table before the run (from time 0).
func (s *Sender) tabulate() error {
	if s.cfg.Rate <= 0 {
		return nil
	}
	switch s.cfg.Shape.Kind {
	case "", "constant", "poisson":
		return nil
	}
	sched, err := NewSchedule(s.cfg.Shape, 0, s.cfg.Clock.Hz, s.cfg.BucketSize, ThreadRate(s.cfg.Rate, s.cfg.Threads), s.length(), 0)
	if err != nil {
		return err
	}
	s.table, _ = sched.(*shapedSchedule)
	return nil
}

// addThread prepares emission thread i: its templates, batch, share of
// the count, profiler channels, accounting and socket (the caller closes
// the sender on an error).
func (s *Sender) addThread(i int, encoded []scenarios.Encoded) error {
	cfg := s.cfg
	var err error
	t := &thread{id: i, stream: wire.StreamID(cfg.SenderID, uint8(i)), cpu: -1,
		endpoint: cfg.Endpoints[i%len(cfg.Endpoints)], slots: math.MaxUint64, precise: histo.NewPrecise()}
	if len(cfg.CPUs) > 0 {
		t.cpu = cfg.CPUs[i%len(cfg.CPUs)]
	}
	e, json := driver.JSONEndpoint(t.endpoint)
	if err := t.makeTemplates(cfg.Scenario, encoded, e.Fields, cfg.BucketSize); err != nil {
		return err
	}
	batch := cfg.SendBatch
	if cfg.SendWork > 0 || driver.IsBroker(t.endpoint) {
		batch = 1 // the work is per bucket, in Go, before its send; a broker's client is Go
	}
	t.setupBatch(batch)
	if err := t.countMatches(cfg.Expect); err != nil {
		return err
	}
	if err := t.countKeys(s.join, cfg.Expect); err != nil {
		return err
	}
	if json && cfg.Scenario.Schema != scenarios.SchemaEvents { // the same tuples as events, in the same order: the counts above hold
		if t.tpls, err = scenarios.JSONTemplates(t.tpls, cfg.Scenario.Schema, e.Fields); err != nil {
			return fmt.Errorf("thread %d: %w", i, err)
		}
	}
	t.json = json
	for k := range t.tpls {
		t.tpls[k].Seal(cfg.Seal)
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
			return err
		}
	}
	t.acct = s.stages.Add(fmt.Sprintf("thread%d", i), stage.Sender, t.backlog(cfg.Rate > 0))
	if cfg.Profile != nil { // the thread's state changes on "activity.thread<N>"
		if err := t.acct.LogActivitiesOn(func(name string) (stage.ActivityLog, error) { return cfg.Profile.OpenNamed(name, cfg.Handlers) }); err != nil {
			return err
		}
	}
	s.threads = append(s.threads, t)
	if driver.IsBroker(t.endpoint) {
		return t.openBroker(cfg.Brokers)
	}
	if t.sock, t.link, err = s.openSocket(t.id, t.endpoint); err != nil {
		return err
	}
	if t.raw, err = zmqraw.Wrap(t.sock, 0, 0); err != nil {
		return err
	}
	t.out = zmqOutlet{t.raw}
	return nil
}

func (s *Sender) openSocket(thread int, endpoint string) (*zmq.Socket, *link, error) {
	var link *link
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
		if t.prod != nil {
			t.prod.Close()
			t.prod = nil
		}
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
	s.flushBrokers(linger)
	took := s.closeSockets(linger)
	for _, t := range s.threads {
		t.link.Linger = linger
		t.link.Flushed = t.link.PeersAtEnd > 0 && took < linger-linger/10
		if driver.IsBroker(t.endpoint) { // the producer's own flush, not the sockets'
			t.link.Flushed = t.flushErr == nil
		}
	}
}

// Run emits until the duration, count or Stop, sends every stream's end
// marker, and returns the result. It can be called once.
func (s *Sender) Run() (*tally.Result, error) {
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
	host := s.cpu.Start(cpustat.Period(s.cfg.StagePeriod))
	var wg sync.WaitGroup
	for _, t := range s.threads {
		t.windows = make([]uint64, nWindows)
		if s.cfg.Rate > 0 {
			if s.table != nil { // the same table for every thread, each with its own cursor
				own := *s.table
				own.start = start
				t.sched = &own
			} else {
				sched, err := NewSchedule(s.cfg.Shape, start, clock.Hz, s.cfg.BucketSize, ThreadRate(s.cfg.Rate, s.cfg.Threads), s.length(), t.id)
				if err != nil {
					return nil, err
				}
				t.sched = sched
			}
		}
	}
	if s.cfg.Profile != nil {
		s.stages.Start(s.cfg.Profile)
	} else {
		s.stages.Start(nil)
	}
	for _, t := range s.threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.run(s, start, end)
		}()
	}
	wg.Wait()
	s.stages.Stop()
	s.flush()
	res := s.result(start, end)
	res.Host = host.Stop()
	res.StartUnixNs = clock.UnixNano(start)
	res.WarmupNs = s.cfg.Warmup.Nanoseconds()
	return res, nil
}
