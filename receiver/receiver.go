package receiver

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	zmq "github.com/pebbe/zmq4"

	"github.com/cloudprofiler-go/cp/internal/histo"
	"github.com/cloudprofiler-go/cp/internal/osthread"
	"github.com/cloudprofiler-go/cp/internal/zmqraw"
	"github.com/cloudprofiler-go/cp/objfactory"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/wire"
)

// Config describes one dgrecv run.
type Config struct {
	Endpoints []string // one PULL socket (lane) per endpoint
	Connect   bool     // connect instead of bind (behind a system under test that pushes)
	Schema    string   // tuple schema: ad-event, synthetic or raw
	// Drain checks bucket headers and accounts per stream but neither
	// decodes tuples nor consumes them one by one: a receiver that measures
	// the sender and the network rather than the object factory.
	Drain         bool
	RingCapacity  int // buckets per lane (power of two)
	MaxMessage    int // larger messages are counted as malformed and skipped
	HWM           int // receive high-water mark in messages
	IOThreads     int
	WorkPerTuple  time.Duration // emulated processing cost per consumed tuple
	ExpectStreams int           // finish when this many streams ended (0: when all seen streams ended)
	Settle        time.Duration // with ExpectStreams 0: quiet time after the last end marker
	EndTimeout    time.Duration // give up on missing end markers after this long without data
	Duration      time.Duration // hard limit on the run (0: none)
	CPUs          []int         // CPUs for the lane deserializers, then the consumer; nil: not pinned
	Clock         *tsc.Clock
	// Sink is called for every consumed tuple on the consumer goroutine (the
	// source operator of a system under test). Nil: a checksum of the ids,
	// so the work cannot be optimised away.
	Sink func(*scenarios.Tuple)
	// Logf reports malformed input (at most once per second) and progress
	// notes. Nil: silent.
	Logf func(format string, args ...any)
	// Profile, if set, gets channels "receive.<lane>" (every tuple id,
	// stamped when its message arrived, before decoding),
	// "deserialized.<lane>" (every tuple id once its bucket is decoded, on
	// the lane's deserializer) and "consumed" (on the consumer), handlers
	// from Handlers (Null when unlisted, and switchable live).
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

// Validate checks every field against its range and fills defaults; it
// allocates nothing, so it is safe on untrusted input.
func (c *Config) Validate() error {
	problems := zmqraw.Sockets{Endpoints: c.Endpoints, MaxEndpoints: MaxLanes, HWM: c.HWM, IOThreads: c.IOThreads, CPUs: c.CPUs}.Problems()
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if _, ok := scenarios.DecoderFor(c.Schema); !ok && !c.Drain {
		bad("unknown schema %.32q (use ad-event, synthetic or raw)", c.Schema)
	}
	if c.RingCapacity == 0 {
		c.RingCapacity = DefaultRing
	}
	if c.RingCapacity < 2 || c.RingCapacity > MaxRing || c.RingCapacity&(c.RingCapacity-1) != 0 {
		bad("ring capacity must be a power of two from 2 to %d, got %d", MaxRing, c.RingCapacity)
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
	if c.ExpectStreams < 0 || c.ExpectStreams > MaxExpectStreams {
		bad("expect-streams must be 0 to %d, got %d", MaxExpectStreams, c.ExpectStreams)
	}
	if c.Settle < 0 || c.Settle > MaxWait || c.EndTimeout < 0 || c.EndTimeout > MaxWait {
		bad("settle and end timeout must be 0 to %v, got %v and %v", MaxWait, c.Settle, c.EndTimeout)
	}
	if c.Duration < 0 || c.Duration > MaxDuration {
		bad("duration must be 0 (no limit) to %v, got %v", MaxDuration, c.Duration)
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	c.HWM, c.IOThreads = zmqraw.Defaults(c.HWM, c.IOThreads)
	if c.Settle == 0 {
		c.Settle = 500 * time.Millisecond
	}
	if c.EndTimeout == 0 {
		c.EndTimeout = 10 * time.Second
	}
	return nil
}

// Receiver runs the lanes and the consumer of one dgrecv process.
type Receiver struct {
	cfg     Config
	ctx     *zmq.Context
	lanes   []*lane
	stop    atomic.Bool  // stops the deserializers
	done    atomic.Bool  // asks the consumer to drain and exit
	quit    atomic.Bool  // external Stop
	started atomic.Int64 // Unix ns when Run began (read by Snapshot)

	consumed    atomic.Uint64
	latency     histo.Log2 // consumer: intended send -> consumed, ns (weighted by tuples)
	precise     *histo.Precise
	checksum    uint64
	backlog     []BacklogSample   // written by the monitor only
	consumedCh  *profiler.Channel // nil: not profiled
	lastLatency atomic.Int64      // latency of the latest consumed bucket, ns
	firstData   atomic.Uint64     // TSC when the first data bucket was consumed
	lastConsum  atomic.Uint64     // TSC when the last tuple was consumed
}

type lane struct {
	*objfactory.Lane
	endpoint     string
	sock         *zmq.Socket
	raw          *zmqraw.Socket
	streams      streamTable
	cpu          int
	err          error
	lastMsg      atomic.Uint64     // TSC of the last message (written by the deserializer)
	receive      *profiler.Channel // nil: not profiled
	deserialized *profiler.Channel
}

// New validates cfg, binds (or connects) the lanes' sockets and allocates
// the object factory's buckets.
func New(cfg Config) (*Receiver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		return nil, errors.New("no TSC clock")
	}
	decode, _ := scenarios.DecoderFor(cfg.Schema)
	if cfg.Drain {
		decode = nil
	}
	ctx, err := zmqraw.NewContext(cfg.IOThreads)
	if err != nil {
		return nil, err
	}
	r := &Receiver{cfg: cfg, ctx: ctx, precise: histo.NewPrecise()}
	for i, ep := range cfg.Endpoints {
		l := &lane{endpoint: ep, cpu: -1, streams: streamTable{lane: i}}
		if len(cfg.CPUs) > 0 {
			l.cpu = cfg.CPUs[i%len(cfg.CPUs)]
		}
		if l.Lane, err = objfactory.NewLane(i, cfg.RingCapacity, decode); err != nil {
			r.Close()
			return nil, err
		}
		if cfg.Profile != nil {
			// Kept even when Null: a live switch may turn them on.
			if l.receive, err = cfg.Profile.OpenNamed(fmt.Sprintf("receive.%d", i), cfg.Handlers); err != nil {
				r.Close()
				return nil, err
			}
			if l.deserialized, err = cfg.Profile.OpenNamed(fmt.Sprintf("deserialized.%d", i), cfg.Handlers); err != nil {
				r.Close()
				return nil, err
			}
		}
		r.lanes = append(r.lanes, l)
		if l.sock, err = r.openSocket(ep); err != nil {
			r.Close()
			return nil, err
		}
		if l.raw, err = zmqraw.Wrap(l.sock, cfg.RingCapacity, cfg.MaxMessage); err != nil {
			r.Close()
			return nil, err
		}
	}
	if cfg.Profile != nil {
		if r.consumedCh, err = cfg.Profile.OpenNamed("consumed", cfg.Handlers); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

func (r *Receiver) openSocket(ep string) (*zmq.Socket, error) {
	// The receive timeout lets a lane notice a stop.
	return zmqraw.Open{Kind: zmq.PULL, HWM: r.cfg.HWM, Timeout: 100 * time.Millisecond, Bind: !r.cfg.Connect}.Socket(r.ctx, ep)
}

// laneSource is a lane's socket as the object factory's Source: each
// bucket receives into its own held-message slot.
type laneSource struct{ raw *zmqraw.Socket }

func (s laneSource) Recv(b *objfactory.Bucket) error {
	msg, err := s.raw.Recv(b.Slot)
	b.Msg = msg
	switch err {
	case nil:
		return nil
	case zmqraw.ErrTimeout:
		return objfactory.ErrTimeout
	case zmqraw.ErrOversized:
		return objfactory.ErrOversized
	case zmqraw.ErrMultipart:
		return objfactory.ErrMultipart
	}
	return err
}

// BoundEndpoints returns the endpoints actually bound (resolving port 0 or *).
func (r *Receiver) BoundEndpoints() []string {
	out := make([]string, len(r.lanes))
	for i, l := range r.lanes {
		out[i] = l.endpoint
		if ep, err := l.sock.GetLastEndpoint(); err == nil && ep != "" {
			out[i] = ep
		}
	}
	return out
}

// Stop ends the run early (safe from any goroutine); Run still reports.
func (r *Receiver) Stop() { r.quit.Store(true) }

// Close releases sockets and the ZeroMQ context.
func (r *Receiver) Close() {
	for _, l := range r.lanes {
		if l.raw != nil {
			l.raw.Close()
		}
		if l.sock != nil {
			l.sock.Close()
		}
	}
	if r.ctx != nil {
		_ = r.ctx.Term()
		r.ctx = nil
	}
}

// Run receives and consumes until the run is complete (every expected
// stream ended), the end timeout passes without data, the duration is up,
// or Stop; then it returns the accounting.
func (r *Receiver) Run() (*Result, error) {
	r.started.Store(time.Now().UnixNano())
	var wg sync.WaitGroup
	for _, l := range r.lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if l.cpu >= 0 {
				if err := osthread.PinThread(l.cpu); err != nil {
					l.err = err
					return
				}
			}
			osthread.LockWithTightTimers() // the socket belongs to this thread
			accept := l.accept
			if r.cfg.Drain {
				accept = func(b *objfactory.Bucket) bool { return l.drain(r, b) }
			}
			l.err = l.Run(laneSource{l.raw}, &r.stop, accept)
		}()
	}
	consumerDone := make(chan struct{})
	go func() {
		defer close(consumerDone)
		if len(r.cfg.CPUs) > 0 {
			if err := osthread.PinThread(r.cfg.CPUs[len(r.lanes)%len(r.cfg.CPUs)]); err != nil && r.cfg.Logf != nil {
				r.cfg.Logf("consumer not pinned: %v", err)
			}
		}
		osthread.LockWithTightTimers() // short idle naps
		r.consume()
	}()
	reason := r.monitor()
	r.stop.Store(true)
	wg.Wait()
	r.done.Store(true)
	<-consumerDone
	res := r.result(reason)
	for _, l := range r.lanes {
		if l.err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("lane %d (%s): %v", l.ID, l.endpoint, l.err))
		}
	}
	return res, nil
}

var errAfterEnd = errors.New("message of a stream after its end marker")

// accept runs on a lane's deserializer for every well-formed message.
func (l *lane) accept(b *objfactory.Bucket) bool {
	st := l.streams.get(b.Header.Stream)
	b.Tag = st
	l.lastMsg.Store(tsc.ReadFast())
	if st.endSeen { // data or a second end marker after the stream ended
		l.Malformed(objfactory.ReasonAfterEnd, errAfterEnd)
		return false
	}
	if b.Header.Kind == wire.KindEnd {
		st.endSeen = true
		return true // queued behind the stream's data, so the consumer sees it last
	}
	if st.track(b.Header.Seq) {
		return false
	}
	if ch := l.receive; ch != nil && !ch.Null() { // stamped when the message arrived
		for i := range b.Tuples {
			ch.LogTSAt(b.Received, b.Tuples[i].ID)
		}
	}
	if ch := l.deserialized; ch != nil && !ch.Null() {
		for i := range b.Tuples {
			ch.LogTS(b.Tuples[i].ID)
		}
	}
	st.recvBuckets.Add(1)
	st.recvTuples.Add(uint64(b.Header.Count))
	return true
}

// drain accounts a data bucket as consumed on the deserializer itself and
// recycles it at once (drain mode); end markers still go through the ring
// to the consumer, behind the stream's data.
func (l *lane) drain(r *Receiver, b *objfactory.Bucket) bool {
	if !l.accept(b) || b.Header.Kind == wire.KindEnd {
		return b.Header.Kind == wire.KindEnd
	}
	st := b.Tag.(*stream)
	n := uint64(b.Header.Count)
	st.consumedTuples.Add(n)
	st.consumedBuckets.Add(1)
	r.consumed.Add(n)
	now := tsc.ReadFast()
	r.firstData.CompareAndSwap(0, now)
	r.lastConsum.Store(now)
	return false
}

// consume drains the lanes round-robin a tuple at a time until told to
// finish, then empties them.
func (r *Receiver) consume() {
	clock := r.cfg.Clock
	sink := r.cfg.Sink
	work := clock.Ticks(r.cfg.WorkPerTuple)
	// The totals are published every 64 buckets, when the rings run dry,
	// or after publishEvery (a slow consumer's metrics stay current),
	// from the clock read each bucket already makes.
	publishEvery := clock.Ticks(10 * time.Millisecond)
	var checksum, pending, sinceIdle, published uint64
	idle := 0
	for {
		got := false
		for _, l := range r.lanes {
			if work > 0 && r.quit.Load() {
				break // stopped: the rest of the rings is left unconsumed
			}
			b, ok := l.Pop()
			if !ok {
				continue
			}
			got = true
			st := b.Tag.(*stream)
			if b.Header.Kind == wire.KindEnd {
				st.end = b.End
				st.ended.Store(true)
				l.Release(b)
				continue
			}
			consumedCh := r.consumedCh
			if consumedCh != nil && consumedCh.Null() {
				consumedCh = nil // asked per bucket: the handler may be switched live
			}
			n := uint64(len(b.Tuples))
			for i := range b.Tuples {
				if work > 0 && r.quit.Load() { // a stop must not wait for a ring of busy work
					n = uint64(i)
					break
				}
				t := &b.Tuples[i]
				if consumedCh != nil {
					consumedCh.LogTS(t.ID)
				}
				if sink != nil {
					sink(t)
				} else {
					checksum += t.ID
				}
				if work > 0 {
					for until := tsc.ReadFast() + work; tsc.ReadFast() < until; {
					}
				}
			}
			var ticks uint64
			if n > 0 {
				// One clock read per bucket: the time the last tuple of the
				// bucket was consumed, an upper bound for all of them.
				ticks = tsc.ReadFast()
				now := clock.UnixNano(ticks)
				lat := now - b.Tuples[0].IntendedNs
				if lat < 0 {
					lat = 0
				}
				r.latency.RecordN(uint64(lat), n)
				r.lastLatency.Store(lat)
				r.precise.RecordN(lat, int64(n))
				if r.firstData.Load() == 0 {
					r.firstData.Store(ticks)
				}
				r.lastConsum.Store(ticks)
			}
			pending += n
			st.consumedTuples.Add(n)
			st.consumedBuckets.Add(1)
			l.Release(b)
			if sinceIdle++; sinceIdle&63 == 0 || ticks-published > publishEvery {
				r.consumed.Add(pending)
				pending, published = 0, ticks
				r.latency.Publish()
			}
		}
		if got {
			idle = 0
			continue
		}
		r.consumed.Add(pending)
		pending = 0
		r.latency.Publish()
		if r.done.Load() && (r.empty() || (work > 0 && r.quit.Load())) { // stopped in busy work: what is left stays unconsumed
			r.checksum = checksum
			return
		}
		// Nothing to do: spin briefly, then yield, then nap, so an idle
		// consumer does not take a core from the deserializers.
		idle++
		switch {
		case idle < 64:
		case idle < 256:
			runtime.Gosched()
		default:
			osthread.Nap(20 * time.Microsecond)
		}
	}
}

func (r *Receiver) empty() bool {
	for _, l := range r.lanes {
		if l.Occupancy() > 0 {
			return false
		}
	}
	return true
}

// The backlog series: one sample every backlogEvery at first, at most
// maxBacklog samples (a longer run samples less often).
const (
	backlogEvery = 100 * time.Millisecond
	maxBacklog   = 4096
)

// thin keeps every other sample, in place.
func thin(s []BacklogSample) []BacklogSample {
	n := 0
	for i := 0; i < len(s); i += 2 {
		s[n] = s[i]
		n++
	}
	return s[:n]
}

// monitor decides when the run is over and logs malformed input.
func (r *Receiver) monitor() string {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var lastMalformed uint64
	logMalformed := func() {
		m := r.malformedTotal()
		if m <= lastMalformed || r.cfg.Logf == nil {
			return
		}
		var last string
		for _, l := range r.lanes {
			if p := l.Stats.LastError.Load(); p != nil {
				last = *p
			}
		}
		r.cfg.Logf("skipped %d malformed message(s) (latest: %s)", m-lastMalformed, last)
		lastMalformed = m
	}
	defer logMalformed()
	lastLog := time.Now()
	var lastSeen uint64 // newest message TSC over all lanes
	lastSeenAt := time.Now()
	var allEndedAt time.Time
	lastSample := time.Time{}
	every := backlogEvery
	for range tick.C {
		now := time.Now()
		if now.Sub(lastSample) >= every {
			lastSample = now
			if len(r.backlog) == maxBacklog {
				// Bounded memory however long the run: keep every other
				// sample and sample half as often from now on.
				r.backlog = thin(r.backlog)
				every *= 2
			}
			occ := 0
			for _, l := range r.lanes {
				occ += l.Occupancy()
			}
			r.backlog = append(r.backlog, BacklogSample{UnixNs: now.UnixNano(), Buckets: occ, Consumed: r.consumed.Load(), LatencyNs: r.lastLatency.Load()})
		}
		if r.quit.Load() {
			return "stopped"
		}
		if r.cfg.Duration > 0 && now.Sub(time.Unix(0, r.started.Load())) >= r.cfg.Duration {
			return "duration reached"
		}
		if now.Sub(lastLog) >= time.Second { // at most one log line a second
			lastLog = now
			logMalformed()
		}
		var newest uint64
		for _, l := range r.lanes {
			newest = max(newest, l.lastMsg.Load())
		}
		if newest != lastSeen {
			lastSeen, lastSeenAt = newest, now
		}
		streams, ended := 0, 0
		for _, l := range r.lanes {
			n, e := l.streams.count()
			streams, ended = streams+n, ended+e
		}
		switch {
		case r.cfg.ExpectStreams > 0 && ended >= r.cfg.ExpectStreams:
			return "all expected streams ended"
		case r.cfg.ExpectStreams == 0 && streams > 0 && ended == streams:
			if allEndedAt.IsZero() {
				allEndedAt = now
			}
			if now.Sub(allEndedAt) >= r.cfg.Settle && now.Sub(lastSeenAt) >= r.cfg.Settle {
				return "all streams ended"
			}
		default:
			allEndedAt = time.Time{}
		}
		if lastSeen != 0 && now.Sub(lastSeenAt) >= r.cfg.EndTimeout {
			return fmt.Sprintf("no data for %v: gave up waiting for end markers", r.cfg.EndTimeout)
		}
	}
	return "stopped"
}

func (r *Receiver) malformedTotal() uint64 {
	var m uint64
	for _, l := range r.lanes {
		m += l.Stats.MalformedTotal()
	}
	return m
}
