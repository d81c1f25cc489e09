package receiver

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	zmq "github.com/pebbe/zmq4"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/histo"
	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/internal/osthread"
	"github.com/cloudprofiler-go/cp/internal/zmqraw"
	"github.com/cloudprofiler-go/cp/objfactory"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/servicerate"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/wire"
)

// Receiver runs the lanes and the consumer of one dgrecv process.
type Receiver struct {
	// windowFrom counts the JSON windows by what their latency is
	// measured from (the lanes' decoders add to it).
	windowFrom windowBasis

	cfg     Config
	cpu     *cpustat.Sampler // the process's threads and the host
	ctx     *zmq.Context
	lanes   []*lane
	stop    atomic.Bool  // stops the deserializers
	done    atomic.Bool  // asks the consumer to drain and exit
	quit    atomic.Bool  // external Stop
	started atomic.Int64 // Unix ns when Run began (read by Snapshot)
	// startTicks is the TSC when Run began: injected stalls and the work
	// schedule count from it.
	startTicks uint64

	consumed  atomic.Uint64
	latency   histo.Log2 // consumer: intended send -> consumed, ns (weighted by tuples)
	precise   *histo.Precise
	checksum  uint64
	windowSum uint64       // the counts of the windows consumed (schema window)
	perWindow *windowTally // the same per key and window (nil: not schema window)
	// trialStartNs: buckets meant to be sent before it are an earlier
	// trial's (a job's output; 0: none are).
	trialStartNs int64
	// ids judge a map's or filter's output per identity (nil: windows,
	// or not a sweep's trial of a job). The consumer's until it returns.
	ids         *identities
	jobFailure  atomic.Value          // string: the job is gone (set by the monitor)
	backlog     []tally.BacklogSample // written by the monitor only
	jobLag      *jobLag               // a job's lag on its input (nil: no job)
	consumedCh  *profiler.Channel     // nil: not profiled
	lastLatency atomic.Int64          // latency of the latest consumed bucket, ns
	lastWindow  atomic.Int64          // arrival of the latest consumed window less its end, ns (noWindow: none yet)
	firstData   atomic.Uint64         // TSC when the first data bucket was consumed
	lastConsum  atomic.Uint64         // TSC when the last tuple was consumed
	stages      *stage.Set            // nil: no stage accounting
	rates       *servicerate.Tracker
	prefill     []*zmq.Socket // Prefill's sockets, closed with the receiver
	consumerAcc *stage.Account
	// An idle consumer parks (parked) until a lane queues a bucket and
	// wakes it: one wake-up per bucket at most, where polling with naps
	// took 2.66 sleeps per bucket at 20 k buckets/s (BENCHMARKS.md).
	parked atomic.Bool
	wake   chan struct{} // capacity 1
}

type lane struct {
	*objfactory.Lane
	endpoint     string
	sock         *zmq.Socket
	raw          *zmqraw.Socket
	cons         driver.Consumer // a broker's, instead of sock
	streams      streamTable
	cpu          int
	err          error
	lastMsg      atomic.Uint64     // TSC of the last message (written by the deserializer)
	receive      *profiler.Channel // nil: not profiled
	deserialized *profiler.Channel
	holds        inject.Holds // injected stalls
	decodeWork   uint64       // injected busy work per bucket, in ticks
	quit         *atomic.Bool // the receiver's Stop: ends an injected stall
	stopped      atomic.Bool  // the lane's goroutine returned (err is set)
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
	r := &Receiver{cfg: cfg, ctx: ctx, precise: histo.NewPrecise(), cpu: cpustat.New(), wake: make(chan struct{}, 1)}
	r.cpu.TrackSystem(cfg.SUTProcesses)
	r.jobLag = jobLagOf(cfg)
	r.judgesJob()
	if cfg.StagePeriod > 0 {
		r.stages = stage.NewSet(cfg.Clock, cfg.StagePeriod)
		r.stages.EnableLive(cfg.LiveActivity)
		if !cfg.NoServiceRates {
			r.rates = servicerate.Track(r.stages, cfg.Clock)
		}
	}
	for i, ep := range cfg.Endpoints {
		l := &lane{endpoint: ep, cpu: -1, streams: streamTable{lane: i, stages: r.stages, next: cfg.StreamNext, join: cfg.jobMode()}}
		if len(cfg.CPUs) > 0 {
			l.cpu = cfg.CPUs[i%len(cfg.CPUs)]
		}
		if l.Lane, err = objfactory.NewLane(i, cfg.Ring, decode); err != nil {
			r.Close()
			return nil, err
		}
		l.DecodeMessage = jsonMessages(ep, &r.windowFrom)
		l.Acct = r.stages.Add(fmt.Sprintf("lane%d", i), stage.Lane, l.hasWork)
		l.Queued = r.wakeConsumer
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
			if err := logActivities(cfg, l.Acct); err != nil {
				r.Close()
				return nil, err
			}
		}
		r.lanes = append(r.lanes, l)
		if err := r.openSource(l, ep); err != nil {
			r.Close()
			return nil, err
		}
	}
	r.consumerAcc = r.stages.Add("consumer", stage.Consumer, func() int64 {
		n := 0
		for _, l := range r.lanes {
			n += l.Occupancy()
		}
		return int64(n)
	})
	r.stages.SetCapacity(r.consumerAcc, int64(cfg.Ring*len(cfg.Endpoints)))
	if cfg.Profile != nil {
		if r.consumedCh, err = cfg.Profile.OpenNamed("consumed", cfg.Handlers); err != nil {
			r.Close()
			return nil, err
		}
		if err := logActivities(cfg, r.consumerAcc); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

// logActivities logs a stage's state changes on its channel
// "activity.<stage>" (kept even when Null: a live switch may turn it on).
func logActivities(cfg Config, a *stage.Account) error {
	return a.LogActivitiesOn(func(name string) (stage.ActivityLog, error) { return cfg.Profile.OpenNamed(name, cfg.Handlers) })
}

func (r *Receiver) openSocket(ep string) (*zmq.Socket, error) {
	// The receive timeout lets a lane notice a stop.
	return zmqraw.Open{Kind: zmq.PULL, HWM: r.cfg.HWM, Timeout: 100 * time.Millisecond, Bind: !r.cfg.Connect, MaxMessage: int64(r.cfg.MaxMessage)}.Socket(r.ctx, ep)
}

// laneSource is a lane's socket as the object factory's Source: each
// bucket receives into its own held-message slot.
type laneSource struct{ raw *zmqraw.Socket }

func (s laneSource) Recv(b *objfactory.Bucket) error {
	msg, err := s.raw.Recv(b.Slot)
	b.Msg, b.Waited = msg, s.raw.Waited()
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

// MaxMessage is the largest message a lane takes (bytes): --max-message,
// or lower to fit the memory budget.
func (r *Receiver) MaxMessage() int { return r.cfg.MaxMessage }

// BoundEndpoints returns the endpoints actually bound (resolving port 0 or *).
func (r *Receiver) BoundEndpoints() []string {
	out := make([]string, len(r.lanes))
	for i, l := range r.lanes {
		out[i] = l.endpoint
		if l.sock == nil {
			continue
		}
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
	r.jobLag.close()
	for _, s := range r.prefill {
		_ = s.SetLinger(0)
		s.Close()
	}
	r.prefill = nil
	for _, l := range r.lanes {
		if l.cons != nil {
			l.cons.Close()
		}
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
func (r *Receiver) Run() (*tally.Result, error) {
	r.started.Store(time.Now().UnixNano())
	r.startTicks = tsc.ReadFast()
	r.lastWindow.Store(noWindow)
	if r.cfg.Profile != nil {
		r.stages.Start(r.cfg.Profile)
	} else {
		r.stages.Start(nil)
	}
	host := r.cpu.Start(cpustat.Period(r.cfg.StagePeriod))
	var wg sync.WaitGroup
	for _, l := range r.lanes {
		l.holds = inject.NewHolds(inject.Windows(r.cfg.Stalls, fmt.Sprintf("lane%d", l.ID)), r.startTicks, r.cfg.Clock)
		l.decodeWork, l.quit = r.cfg.Clock.Ticks(r.cfg.DecodeWork), &r.quit
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer l.stopped.Store(true) // after l.err: the monitor reads it then
			if l.cpu >= 0 {
				if err := osthread.PinThread(l.cpu); err != nil {
					l.err = err
					return
				}
			}
			osthread.LockWithTightTimers() // the socket belongs to this thread
			r.cpu.Register(fmt.Sprintf("lane%d", l.ID))
			accept := l.accept
			if r.cfg.Drain {
				accept = func(b *objfactory.Bucket) bool { return l.drain(r, b) }
			}
			var src objfactory.Source = laneSource{l.raw}
			if l.cons != nil {
				src = newBrokerSource(l.cons, r.cfg.MaxMessage, r.cfg.Clock.Ticks(waitedAfter))
			}
			l.err = l.Run(src, &r.stop, accept)
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
		osthread.LockWithTightTimers() // its own thread, for pinning and the per-thread CPU
		r.cpu.Register("consumer")
		r.consume()
	}()
	reason, sampler := r.monitor()
	drainSampled := make(chan struct{})
	go func() { // from now: the lanes' stop can take as long as the consumer's next bucket
		defer close(drainSampled)
		r.sampleDrain(sampler, consumerDone)
	}()
	r.stop.Store(true)
	wg.Wait()
	r.done.Store(true)
	r.wakeConsumer()
	<-drainSampled
	r.stages.Stop()
	res := r.result(reason)
	res.Host = host.Stop()
	for _, l := range r.lanes {
		if l.err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("lane %d (%s): %v", l.ID, l.endpoint, l.err))
		}
		if l.cons != nil {
			res.BrokerDropped += l.cons.Dropped()
		}
		if driver.IsFailure(l.err) {
			res.SystemFailures = append(res.SystemFailures, fmt.Sprintf("lane %d: %v", l.ID, l.err))
		}
	}
	return res, nil
}

var errAfterEnd = errors.New("message of a stream after its end marker")

// accept runs on a lane's deserializer for every well-formed message.
func (l *lane) accept(b *objfactory.Bucket) bool {
	st := l.streams.get(b.Header.Stream)
	b.Tag = st
	if b.Header.Kind != wire.KindEnd { // off the network: data buckets, as the sender counts them
		st.acct.Add(1, uint64(b.Header.Count))
	}
	now := tsc.ReadFast()
	l.lastMsg.Store(now)
	if l.decodeWork > 0 {
		inject.Spin(tsc.ReadFast, l.decodeWork)
	}
	if l.holds.Any() {
		l.holds.Hold(now, l.quit)
	}
	if st.endSeen { // data or a second end marker after the stream ended
		l.Malformed(objfactory.ReasonAfterEnd, errAfterEnd)
		return false
	}
	if b.Header.Kind == wire.KindEnd {
		st.endSeen = true
		return true // queued behind the stream's data, so the consumer sees it last
	}
	if st.id != jsonStream && st.track(b.Header.Seq) {
		return false
	}
	if ch := l.receive; ch != nil && !ch.Null() { // stamped when the message arrived
		logBucket(ch, b.Received, b.Tuples)
	}
	if ch := l.deserialized; ch != nil && !ch.Null() { // decoded whole: one instant
		logBucket(ch, tsc.ReadFast(), b.Tuples)
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
	now := b.Received // counted as it arrived: no TSC read of its own
	r.firstData.CompareAndSwap(0, now)
	r.lastConsum.Store(now)
	return false
}

// hasWork is a lane's queue for the diagnosis: 0 while it waits on an
// empty socket, else 1 (what is in the socket cannot be seen from here).
func (l *lane) hasWork() int64 {
	if l.Acct.Current() == stage.Waiting {
		return 0
	}
	return 1
}

func (r *Receiver) empty() bool {
	for _, l := range r.lanes {
		if l.Occupancy() > 0 {
			return false
		}
	}
	return true
}

// monitor decides when the run is over and logs malformed input; its
// backlog sampler goes on through the drain (sampleDrain).
func (r *Receiver) monitor() (reason string, sampler *backlogSampler) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var lastMalformed uint64
	logMalformed := func() {
		m := r.malformedTotal()
		if m <= lastMalformed || r.cfg.Logf == nil {
			return
		}
		r.cfg.Logf("skipped %d malformed message(s) (latest: %s)", m-lastMalformed, r.latestMalformed())
		lastMalformed = m
	}
	defer logMalformed()
	lastLog := time.Now()
	end := endWatch{lastSeenAt: time.Now()}
	sampler = &backlogSampler{every: backlogEvery}
	for range tick.C {
		now := time.Now()
		sampler.sample(r, now)
		if r.quit.Load() {
			return "stopped", sampler
		}
		if r.cfg.Duration > 0 && now.Sub(time.Unix(0, r.started.Load())) >= r.cfg.Duration {
			return "duration reached", sampler
		}
		if now.Sub(lastLog) >= time.Second { // at most one log line a second
			lastLog = now
			logMalformed()
		}
		if reason := end.check(r, now); reason != "" {
			return reason, sampler
		}
	}
	return "stopped", sampler
}

// sampleDrain samples the backlog until the consumer is done draining
// the rings, and once more at its end.
func (r *Receiver) sampleDrain(sampler *backlogSampler, consumerDone <-chan struct{}) {
	tick := time.NewTicker(backlogEvery)
	defer tick.Stop()
	for {
		select {
		case now := <-tick.C:
			sampler.drained(r, now)
		case <-consumerDone:
			sampler.last = time.Time{} // the end's sample, however recent the last
			sampler.drained(r, time.Now())
			return
		}
	}
}

// Prefill queues msgs for lane before Run, through an in-process PUSH
// socket on the receiver's own context: the lane then reads a queue that
// never runs dry (cpsweep capacity measures a stage alone this way, as
// RaftLib §V-B measures a kernel from a resident data source). The lane's
// endpoint must be inproc:// and its high-water mark above len(msgs).
func (r *Receiver) Prefill(lane int, msgs [][]byte) error {
	if lane < 0 || lane >= len(r.lanes) {
		return fmt.Errorf("prefill lane %d of %d", lane, len(r.lanes))
	}
	ep := r.lanes[lane].endpoint
	if !strings.HasPrefix(ep, "inproc://") {
		return fmt.Errorf("prefill lane %d: endpoint %q is not inproc://", lane, ep)
	}
	push, err := zmqraw.Open{Kind: zmq.PUSH, HWM: len(msgs) + 1, Timeout: time.Second}.Socket(r.ctx, ep)
	if err != nil {
		return fmt.Errorf("prefill lane %d: %w", lane, err)
	}
	r.prefill = append(r.prefill, push)
	for i, m := range msgs {
		if _, err := push.SendBytes(m, zmq.DONTWAIT); err != nil {
			return fmt.Errorf("prefill lane %d: message %d of %d: %w", lane, i+1, len(msgs), err)
		}
	}
	return nil
}
