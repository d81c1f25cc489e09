package nats

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/osthread"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func connect(e driver.Endpoint, name string) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.Timeout(driver.ConnectTimeout),
		// a broker gone mid-trial fails the trial; reconnecting would hide it
		nats.NoReconnect()}
	if e.Auth.User != "" || e.Auth.Password != "" {
		opts = append(opts, nats.UserInfo(e.Auth.User, e.Auth.Password))
	}
	nc, err := nats.Connect(e.Server, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s (%s): %w", e.Server, e.Driver, err)
	}
	return nc, nil
}

// newNATSProducer connects a core NATS or a JetStream producer.
func newNATSProducer(e driver.Endpoint) (driver.Producer, error) {
	nc, err := connect(e, "cp-sender")
	if err != nil {
		return nil, err
	}
	if e.Driver == driver.NATS {
		return &coreProducer{nc: nc, subject: e.Subject, window: e.Window}, nil
	}
	p := &jsProducer{nc: nc, subject: e.Subject, window: e.Window}
	p.js, err = jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(e.Window+1),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) {
			p.first.CompareAndSwap(nil, &err) // before the count: Flush reads them in that order
			p.failed.Add(1)
		}))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return p, nil
}

type coreProducer struct {
	nc        *nats.Conn
	subject   string
	window    int
	unchecked int // bytes published since the buffer was last checked
}

// Publish checks the client's buffer against the window once per eighth
// of the window published, not at every message: each check takes the
// connection's lock, as the publish does (three locks a message were 9%
// of dgsend's samples at 124-byte messages). The buffer may so exceed the
// window by an eighth of it.
func (p *coreProducer) Publish(msg []byte) error {
	if p.unchecked += len(msg); p.unchecked > p.window/8 {
		n, err := p.nc.Buffered()
		if err != nil { // closed
			return fmt.Errorf("publish to %s: %w", p.subject, err)
		}
		if n+len(msg) > p.window {
			return driver.ErrFull
		}
		p.unchecked = len(msg)
	}
	if err := p.nc.Publish(p.subject, msg); err != nil {
		return fmt.Errorf("publish to %s: %w", p.subject, err)
	}
	return nil
}

func (p *coreProducer) Flush(timeout time.Duration) error { return p.nc.FlushTimeout(timeout) }
func (p *coreProducer) Close()                            { p.nc.Close() }

type jsProducer struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	subject string
	window  int
	failed  atomic.Uint64
	first   atomic.Pointer[error] // why the first publish failed, for the error
}

func (p *jsProducer) Publish(msg []byte) error {
	if p.js.PublishAsyncPending() >= p.window {
		return driver.ErrFull
	}
	if _, err := p.js.PublishAsync(p.subject, msg); err != nil {
		if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			return driver.ErrFull
		}
		return fmt.Errorf("publish to %s: %w", p.subject, err)
	}
	return nil
}

func (p *jsProducer) Flush(timeout time.Duration) error {
	select {
	case <-p.js.PublishAsyncComplete():
	case <-time.After(timeout):
		return fmt.Errorf("%d publishes to %s not acknowledged within %v", p.js.PublishAsyncPending(), p.subject, timeout)
	}
	if f := p.failed.Load(); f > 0 {
		why := "unknown"
		if e := p.first.Load(); e != nil {
			why = (*e).Error()
			if errors.Is(*e, nats.ErrNoResponders) || errors.Is(*e, jetstream.ErrNoStreamResponse) {
				why += ": no stream takes the subject (was it deleted?)"
			}
		}
		return fmt.Errorf("%d publishes to %s failed (the first: %s)", f, p.subject, why)
	}
	return nil
}

func (p *jsProducer) Close() { p.nc.Close() }

// newNATSConsumer subscribes (core NATS) or pulls from the subject's
// stream (JetStream): the harness's own, made anew, or with a group the
// job's, joined.
func newNATSConsumer(e driver.Endpoint) (driver.Consumer, error) {
	if e.Driver == driver.NATS {
		c, err := dialWire(e)
		switch {
		case err == nil:
			return c, nil
		case !errors.Is(err, errNeedsTLS):
			return nil, err
		}
	}
	nc, err := connect(e, "cp-receiver")
	if err != nil {
		return nil, err
	}
	if e.Driver == driver.NATS { // a server that requires TLS: nats.go's client
		// The channel is the lane's queue in the client: when it is full,
		// core NATS drops for a slow consumer.
		ch := make(chan *nats.Msg, CoreQueue)
		sub, err := nc.ChanSubscribe(e.Subject, ch)
		if err == nil {
			err = nc.Flush() // the subscription is in place before any sender starts
		}
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("subscribe to %s on %s: %w", e.Subject, e.Server, err)
		}
		return &coreConsumer{nc: nc, sub: sub, ch: ch}, nil
	}
	c, err := newJSConsumer(nc, e)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

type coreConsumer struct {
	nc  *nats.Conn
	sub *nats.Subscription
	ch  chan *nats.Msg
}

// CoreQueue and CoreQueueBytes bound what the client holds for the lane
// ahead of it (nats.go's default pending limits of a subscription);
// beyond them core NATS drops, for a slow consumer, and the sequence
// checks count the loss.
const (
	CoreQueue      = 512 << 10
	CoreQueueBytes = 64 << 20
)

// coreSpin is how long the lane polls for the next message before it
// parks: a receiving lane is locked to its OS thread, and parking it costs
// two futex calls per message, which at small messages is most of its
// time (BENCHMARKS.md, fourteenth session); a busy stream's next message
// is usually there within a few microseconds. Between polls it yields its
// CPU (sched_yield): on a host whose CPUs the server and the senders
// share, a poll that only spins takes the CPU the next message needs;
// yielding took 124-byte messages from a median of 846 k to 953 k/s
// (BENCHMARKS.md, twenty-third session).
const coreSpin = 20 * time.Microsecond

// TryNext implements driver.Ready.
func (c *coreConsumer) TryNext() ([]byte, bool) {
	select {
	case m := <-c.ch:
		return m.Data, true
	default:
		return nil, false
	}
}

func (c *coreConsumer) Next(wait time.Duration) ([]byte, error) {
	select {
	case m := <-c.ch:
		return m.Data, nil
	default:
	}
	for deadline := time.Now().Add(coreSpin); time.Now().Before(deadline); {
		select {
		case m := <-c.ch:
			return m.Data, nil
		default:
			osthread.Yield()
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case m := <-c.ch:
		return m.Data, nil
	case <-t.C:
		if !c.sub.IsValid() || c.nc.IsClosed() {
			return nil, fmt.Errorf("receive on %s: %w", c.sub.Subject, nats.ErrConnectionClosed)
		}
		return nil, driver.ErrTimeout
	}
}

func (c *coreConsumer) Lag() (int64, error) { return int64(len(c.ch)), nil }

func (c *coreConsumer) Dropped() uint64 {
	n, _ := c.sub.Dropped()
	return uint64(max(n, 0))
}

func (c *coreConsumer) Close() { c.nc.Close() }

type jsConsumer struct {
	nc   *nats.Conn
	cons jetstream.Consumer
	it   jetstream.MessagesContext
	ack  bool
	// own: the harness's own stream and consumer, which no other client
	// reads (a group's may be shared: receivers reading a job's output).
	// base is then the consumer's delivered count when this client joined
	// it, returned what Next has handed over since: the difference is what
	// the client has fetched and not yet handed over (Lag).
	own      bool
	base     uint64
	returned atomic.Uint64
}

func newJSConsumer(nc *nats.Conn, e driver.Endpoint) (*jsConsumer, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream on %s: %w", e.Server, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var s jetstream.Stream
	durable := "cp"
	if e.Group != "" {
		// a job's stream: joined, never deleted
		durable = e.Group
		s, err = ensureStream(ctx, js, e)
	} else {
		s, err = freshStream(ctx, js, e)
	}
	if err != nil {
		return nil, err
	}
	cons, err := s.CreateOrUpdateConsumer(ctx, consumerConfig(durable, e))
	if err != nil {
		return nil, fmt.Errorf("jetstream: consumer %s on %s: %w", durable, s.CachedInfo().Config.Name, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1024))
	if err != nil {
		return nil, fmt.Errorf("jetstream: pull from %s: %w", s.CachedInfo().Config.Name, err)
	}
	return &jsConsumer{nc: nc, cons: cons, it: it, ack: e.Ack == "explicit", own: e.Group == "", base: cons.CachedInfo().Delivered.Consumer}, nil
}

// consumerConfig is the durable pull consumer of a lane or a job: a job's
// is made by Ensure and by the job with the same endpoint, hence the same
// configuration (JetStream cannot change a consumer's ack policy).
func consumerConfig(durable string, e driver.Endpoint) jetstream.ConsumerConfig {
	policy := jetstream.AckNonePolicy
	if e.Ack == "explicit" {
		policy = jetstream.AckExplicitPolicy
	}
	return jetstream.ConsumerConfig{Durable: durable, AckPolicy: policy}
}

func streamConfig(e driver.Endpoint) jetstream.StreamConfig {
	storage := jetstream.FileStorage
	if e.Storage == "memory" {
		storage = jetstream.MemoryStorage
	}
	return jetstream.StreamConfig{Name: streamName(e), Subjects: []string{e.Subject}, Storage: storage}
}

// freshStream makes the harness's own stream for e's subject anew: a
// trial starts with an empty stream (streams named CP_* are the harness's).
func freshStream(ctx context.Context, js jetstream.JetStream, e driver.Endpoint) (jetstream.Stream, error) {
	name := streamName(e)
	if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("jetstream: remove the last trial's stream %s: %w", name, err)
	}
	s, err := js.CreateStream(ctx, streamConfig(e))
	if err != nil {
		return nil, fmt.Errorf("jetstream: create stream %s for %s: %w", name, e.Subject, err)
	}
	return s, nil
}

// ensureStream finds the stream that captures e's subject (a job's, of
// any name), and makes CP_<subject> only when none does.
func ensureStream(ctx context.Context, js jetstream.JetStream, e driver.Endpoint) (jetstream.Stream, error) {
	name, err := js.StreamNameBySubject(ctx, e.Subject)
	if err == nil {
		return js.Stream(ctx, name)
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("jetstream: which stream holds %s: %w", e.Subject, err)
	}
	return createCapturing(ctx, js, e)
}

// createCapturing makes CP_<subject> for e's subject, or takes the stream
// another client made for it meanwhile (of that name, or a job's own).
func createCapturing(ctx context.Context, js jetstream.JetStream, e driver.Endpoint) (jetstream.Stream, error) {
	s, err := js.CreateStream(ctx, streamConfig(e))
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return js.Stream(ctx, streamName(e)) // made by another client meanwhile
	}
	var api *jetstream.APIError
	if errors.As(err, &api) && api.ErrorCode == jsErrSubjectsOverlap {
		// a job made a stream of its own for the subject meanwhile: it
		// captures the subject, as one found above would have
		if name, err := js.StreamNameBySubject(ctx, e.Subject); err == nil {
			return js.Stream(ctx, name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: create stream %s for %s: %w", streamName(e), e.Subject, err)
	}
	return s, nil
}

// jsErrSubjectsOverlap is JetStream's error code for a stream whose
// subjects another stream already captures (nats.go names no constant).
const jsErrSubjectsOverlap = 10065

func (c *jsConsumer) Next(wait time.Duration) ([]byte, error) {
	m, err := c.it.Next(jetstream.NextMaxWait(wait))
	switch {
	case err == nil:
		if c.ack {
			if err := m.Ack(); err != nil {
				return nil, fmt.Errorf("jetstream: ack: %w", err)
			}
		}
		c.returned.Add(1)
		return m.Data(), nil
	case errors.Is(err, nats.ErrTimeout):
		return nil, driver.ErrTimeout
	}
	return nil, fmt.Errorf("jetstream: receive: %w", err)
}

// Lag is what the stream holds for this consumer and it has not handed
// over: not yet delivered, and delivered into the client's prefetch (up
// to 1,024 messages) but not yet returned by Next. Without acks the
// server forgets a message once it is delivered, so a lane that fell
// behind by less than its prefetch read a lag of 0: the backlog rules did
// not see the harness's own consumer as the limit (BENCHMARKS.md,
// 2026-11-27). With acks (on receipt, in Next) the server's
// acknowledgement-pending count is that prefetch. Without acks, only on
// the harness's own consumer: a group's durable consumer may be shared
// by several receivers, and its delivered count is all of theirs (the
// lag would grow with the others' reading); there the lag is the
// server's, blind to the prefetch as a job's own lag is (docs/brokers.md).
func (c *jsConsumer) Lag() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), driver.LagTimeout)
	defer cancel()
	info, err := c.cons.Info(ctx)
	if err != nil {
		return 0, err
	}
	lag := int64(info.NumPending) + int64(info.NumAckPending)
	if !c.ack && c.own {
		lag += max(int64(info.Delivered.Consumer-c.base)-int64(c.returned.Load()), 0)
	}
	return lag, nil
}

func (c *jsConsumer) Dropped() uint64 { return 0 }

func (c *jsConsumer) Close() {
	c.it.Stop()
	c.nc.Close()
}

// streamName is the JetStream stream that holds a subject: one per
// subject, named after it, so that a lane's stream is its own.
func streamName(e driver.Endpoint) string {
	return "CP_" + strings.NewReplacer(".", "_", "-", "_").Replace(e.Subject)
}

// Driver is the NATS driver: nats:// and jetstream://.
type Driver struct{}

// Schemes implements driver.Driver.
func (Driver) Schemes() []string { return []string{driver.NATS, driver.JetStream} }

// NewProducer implements driver.Driver.
func (Driver) NewProducer(e driver.Endpoint) (driver.Producer, error) { return newNATSProducer(e) }

// NewConsumer implements driver.Driver.
func (Driver) NewConsumer(e driver.Endpoint) (driver.Consumer, error) { return newNATSConsumer(e) }

// Ensure implements driver.Admin: the stream that captures e's subject,
// and e.Group's durable consumer on it (from the first message: a job
// started after the senders still reads everything, and its lag is
// readable before it starts).
func (Driver) Ensure(e driver.Endpoint) error {
	return withJetStream(e, func(ctx context.Context, js jetstream.JetStream) error {
		s, err := ensureStream(ctx, js, e)
		if err != nil || e.Group == "" {
			return err
		}
		if _, err := s.Consumer(ctx, e.Group); err == nil {
			return nil
		}
		if _, err := s.CreateConsumer(ctx, consumerConfig(e.Group, e)); err != nil && !errors.Is(err, jetstream.ErrConsumerExists) {
			return fmt.Errorf("jetstream: consumer %s on %s: %w", e.Group, s.CachedInfo().Config.Name, err)
		}
		return nil
	})
}

// madeFormat writes a stream's or a consumer's creation time.
const madeFormat = "2006-01-02 15:04:05.000000Z"

// Group implements driver.Admin: the durable consumer e.Group's messages
// not yet delivered, and delivered but not acknowledged; the stream's
// last sequence; the stream's and the consumer's creation times.
func (Driver) Group(e driver.Endpoint) (g driver.GroupState, err error) {
	err = withJetStream(e, func(ctx context.Context, js jetstream.JetStream) error {
		name, err := js.StreamNameBySubject(ctx, e.Subject)
		if err != nil {
			return fmt.Errorf("jetstream: which stream holds %s: %w", e.Subject, err)
		}
		s, err := js.Stream(ctx, name)
		if err != nil {
			return fmt.Errorf("jetstream: stream %s: %w", name, err)
		}
		c, err := s.Consumer(ctx, e.Group)
		if err != nil {
			return fmt.Errorf("jetstream: consumer %s on %s: %w", e.Group, name, err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		si := s.CachedInfo()
		g = driver.GroupState{
			Lag:   int64(info.NumPending) + int64(info.NumAckPending),
			Added: int64(si.State.LastSeq),
			Identity: fmt.Sprintf("stream %s made %s, consumer %s made %s", name, si.Created.UTC().Format(madeFormat),
				e.Group, info.Created.UTC().Format(madeFormat)),
		}
		return nil
	})
	return g, err
}

// withJetStream runs f on a connection of its own, bounded in time.
func withJetStream(e driver.Endpoint, f func(context.Context, jetstream.JetStream) error) error {
	if e.Driver != driver.JetStream {
		return driver.ErrNoAdmin
	}
	nc, err := connect(e, "cp-admin")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream on %s: %w", e.Server, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), driver.ConnectTimeout)
	defer cancel()
	return f(ctx, js)
}
