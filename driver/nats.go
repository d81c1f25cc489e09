package driver

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Producer publishes one sender thread's messages.
type Producer interface {
	// Publish hands msg to the client (which copies it) without waiting
	// for the broker; ErrFull when the in-flight window is full.
	Publish(msg []byte) error
	// Flush waits until the broker has everything published (JetStream:
	// acknowledged), up to timeout.
	Flush(timeout time.Duration) error
	// Failed counts publishes the broker refused or never acknowledged.
	Failed() uint64
	Close()
}

// Consumer receives one receiver lane's messages.
type Consumer interface {
	// Next returns the next message's bytes (the consumer keeps them valid
	// until the next call or Close is not promised: copy or use them
	// before asking for another), waiting up to wait; ErrTimeout if none.
	Next(wait time.Duration) ([]byte, error)
	// Lag is the broker's backlog for this consumer: messages stored and
	// not yet delivered (JetStream), or held by the client (core NATS).
	Lag() (int64, error)
	// Dropped counts messages the broker or client discarded for this
	// consumer (core NATS: a slow consumer's overflow).
	Dropped() uint64
	Close()
}

func connect(e Endpoint, name string) (*nats.Conn, error) {
	nc, err := nats.Connect(e.Server, nats.Name(name), nats.Timeout(connectTimeout),
		// a broker gone mid-trial fails the trial; reconnecting would hide it
		nats.NoReconnect())
	if err != nil {
		return nil, fmt.Errorf("connect to %s (%s): %w", e.Server, e.Driver, err)
	}
	return nc, nil
}

// NewProducer connects a producer for e. Its errors, but ErrFull, are
// *Failure.
func NewProducer(e Endpoint) (Producer, error) {
	if e.Driver == Redis || e.Driver == Kafka {
		var p Producer
		var err error
		if e.Driver == Redis {
			p, err = newRedisProducer(e)
		} else {
			p, err = newKafkaProducer(e)
		}
		if err != nil {
			return nil, &Failure{e.where(), err}
		}
		return failing{p, e.where()}, nil
	}
	nc, err := connect(e, "cp-sender")
	if err != nil {
		return nil, &Failure{e.where(), err}
	}
	if e.Driver == NATS {
		return failing{&coreProducer{nc: nc, subject: e.Subject, window: e.Window}, e.where()}, nil
	}
	p := &jsProducer{nc: nc, subject: e.Subject, window: e.Window}
	p.js, err = jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(e.Window+1),
		jetstream.WithPublishAsyncErrHandler(func(jetstream.JetStream, *nats.Msg, error) { p.failed.Add(1) }))
	if err != nil {
		nc.Close()
		return nil, &Failure{e.where(), fmt.Errorf("jetstream: %w", err)}
	}
	return failing{p, e.where()}, nil
}

// failing marks a producer's errors (but a full window) as the broker's.
type failing struct {
	Producer
	where string
}

func (f failing) Publish(msg []byte) error {
	err := f.Producer.Publish(msg)
	if err == nil || errors.Is(err, ErrFull) {
		return err
	}
	return &Failure{f.where, err}
}

func (f failing) Flush(timeout time.Duration) error {
	if err := f.Producer.Flush(timeout); err != nil {
		return &Failure{f.where, err}
	}
	return nil
}

type coreProducer struct {
	nc      *nats.Conn
	subject string
	window  int
}

func (p *coreProducer) Publish(msg []byte) error {
	if p.nc.IsClosed() {
		return fmt.Errorf("publish to %s: %w", p.subject, nats.ErrConnectionClosed)
	}
	if n, _ := p.nc.Buffered(); n+len(msg) > p.window {
		return ErrFull
	}
	return p.nc.Publish(p.subject, msg)
}

func (p *coreProducer) Flush(timeout time.Duration) error { return p.nc.FlushTimeout(timeout) }
func (p *coreProducer) Failed() uint64                    { return 0 }
func (p *coreProducer) Close()                            { p.nc.Close() }

type jsProducer struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	subject string
	window  int
	failed  atomic.Uint64
}

func (p *jsProducer) Publish(msg []byte) error {
	if p.js.PublishAsyncPending() >= p.window {
		return ErrFull
	}
	if _, err := p.js.PublishAsync(p.subject, msg); err != nil {
		if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			return ErrFull
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
		return fmt.Errorf("%d publishes to %s failed", f, p.subject)
	}
	return nil
}

func (p *jsProducer) Failed() uint64 { return p.failed.Load() }
func (p *jsProducer) Close()         { p.nc.Close() }

// NewConsumer connects a consumer for e. For JetStream it makes the
// subject's stream anew (a trial starts with an empty stream; streams
// named CP_* are the harness's own) and a consumer on it. Its errors, but
// ErrTimeout, are *Failure.
func NewConsumer(e Endpoint) (Consumer, error) {
	c, err := newConsumer(e)
	if err != nil {
		return nil, &Failure{e.where(), err}
	}
	return failingConsumer{c, e.where()}, nil
}

// failingConsumer marks a consumer's errors (but a timeout) as the broker's.
type failingConsumer struct {
	Consumer
	where string
}

func (f failingConsumer) Next(wait time.Duration) ([]byte, error) {
	b, err := f.Consumer.Next(wait)
	if err == nil || errors.Is(err, ErrTimeout) {
		return b, err
	}
	return nil, &Failure{f.where, err}
}

func newConsumer(e Endpoint) (Consumer, error) {
	switch e.Driver {
	case Redis:
		return newRedisConsumer(e)
	case Kafka:
		return newKafkaConsumer(e)
	}
	nc, err := connect(e, "cp-receiver")
	if err != nil {
		return nil, err
	}
	if e.Driver == NATS {
		// The channel is the lane's queue in the client: when it is full,
		// core NATS drops for a slow consumer.
		ch := make(chan *nats.Msg, coreChanLen)
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

// coreChanLen bounds the messages the client hands over ahead of the lane
// (the window bounds their bytes); beyond it, core NATS drops them for a
// slow consumer, which the sequence checks count as loss.
const coreChanLen = 1 << 16

// coreSpin is how long the lane polls for the next message before it
// parks: a receiving lane is locked to its OS thread, and parking it costs
// two futex calls per message, which at small messages is most of its
// time (BENCHMARKS.md, fourteenth session); a busy stream's next message
// is usually there within a few microseconds.
const coreSpin = 20 * time.Microsecond

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
		return nil, ErrTimeout
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
}

func newJSConsumer(nc *nats.Conn, e Endpoint) (*jsConsumer, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream on %s: %w", e.Server, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name := e.streamName()
	if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("jetstream: remove the last trial's stream %s: %w", name, err)
	}
	storage := jetstream.FileStorage
	if e.Storage == "memory" {
		storage = jetstream.MemoryStorage
	}
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{e.Subject}, Storage: storage})
	if err != nil {
		return nil, fmt.Errorf("jetstream: create stream %s for %s: %w", name, e.Subject, err)
	}
	policy := jetstream.AckNonePolicy
	if e.Ack == "explicit" {
		policy = jetstream.AckExplicitPolicy
	}
	cons, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "cp", AckPolicy: policy})
	if err != nil {
		return nil, fmt.Errorf("jetstream: consumer on %s: %w", name, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1024))
	if err != nil {
		return nil, fmt.Errorf("jetstream: pull from %s: %w", name, err)
	}
	return &jsConsumer{nc: nc, cons: cons, it: it, ack: e.Ack == "explicit"}, nil
}

func (c *jsConsumer) Next(wait time.Duration) ([]byte, error) {
	m, err := c.it.Next(jetstream.NextMaxWait(wait))
	switch {
	case err == nil:
		if c.ack {
			if err := m.Ack(); err != nil {
				return nil, fmt.Errorf("jetstream: ack: %w", err)
			}
		}
		return m.Data(), nil
	case errors.Is(err, nats.ErrTimeout):
		return nil, ErrTimeout
	}
	return nil, fmt.Errorf("jetstream: receive: %w", err)
}

func (c *jsConsumer) Lag() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	info, err := c.cons.Info(ctx)
	if err != nil {
		return 0, err
	}
	return int64(info.NumPending) + int64(info.NumAckPending), nil
}

func (c *jsConsumer) Dropped() uint64 { return 0 }

func (c *jsConsumer) Close() {
	c.it.Stop()
	c.nc.Close()
}
