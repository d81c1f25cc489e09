package driver

import (
	"errors"
	"time"
)

// Producer publishes one sender thread's messages.
type Producer interface {
	// Publish hands msg to the client (which copies it) without waiting
	// for the broker; ErrFull when the in-flight window is full.
	Publish(msg []byte) error
	// Flush waits until the broker has everything published (JetStream,
	// Kafka: acknowledged), up to timeout.
	Flush(timeout time.Duration) error
	Close()
}

// Consumer receives one receiver lane's messages.
type Consumer interface {
	// Next returns the next message's bytes, the caller's to keep,
	// waiting up to wait; ErrTimeout if none came.
	Next(wait time.Duration) ([]byte, error)
	// Lag is the broker's backlog for this consumer: messages stored and
	// not yet delivered (or acknowledged), or held by the client (core
	// NATS).
	Lag() (int64, error)
	// Dropped counts messages the broker or client discarded for this
	// consumer (core NATS: a slow consumer's overflow).
	Dropped() uint64
	Close()
}

// NewProducer connects a producer for e. Its errors, but ErrFull, are
// *Failure.
func NewProducer(e Endpoint) (Producer, error) {
	var p Producer
	var err error
	switch e.Driver {
	case Redis:
		p, err = newRedisProducer(e)
	case Kafka:
		p, err = newKafkaProducer(e)
	default:
		p, err = newNATSProducer(e)
	}
	if err != nil {
		return nil, &Failure{e.where(), err}
	}
	return failing{p, e.where()}, nil
}

// NewConsumer connects a consumer for e; the receiver makes the broker's
// stream, key or topic anew for it (every driver's is the harness's own).
// Its errors, but ErrTimeout, are *Failure.
func NewConsumer(e Endpoint) (Consumer, error) {
	var c Consumer
	var err error
	switch e.Driver {
	case Redis:
		c, err = newRedisConsumer(e)
	case Kafka:
		c, err = newKafkaConsumer(e)
	default:
		c, err = newNATSConsumer(e)
	}
	if err != nil {
		return nil, &Failure{e.where(), err}
	}
	return failingConsumer{c, e.where()}, nil
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
