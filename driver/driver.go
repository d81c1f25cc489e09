package driver

import (
	"errors"
	"fmt"
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

// Ready is a Consumer that can hand over a message already in the client
// without waiting: a receiver then knows it did not wait, without reading
// a clock around Next (two TSC reads a message, at a million small
// messages a second).
type Ready interface {
	// TryNext returns the next message if one is there now.
	TryNext() ([]byte, bool)
}

// Driver is one broker's client: it connects producers and consumers for
// the endpoints of its schemes. Each lives in a package of its own
// (driver/nats, driver/redis, driver/kafka), so that a program links only
// the clients it registers.
type Driver interface {
	// Schemes are the endpoint schemes it serves (nats and jetstream).
	Schemes() []string
	NewProducer(e Endpoint) (Producer, error)
	// NewConsumer makes the broker's stream, key or topic anew for it
	// (every driver's is the harness's own).
	NewConsumer(e Endpoint) (Consumer, error)
}

// Admin is what a sweep asks of a broker about a job's topics; the
// drivers with persistence (JetStream, Redis Streams, Kafka) have it.
type Admin interface {
	// Ensure creates e's stream, key or topic where it is missing; it
	// never deletes or empties one.
	Ensure(e Endpoint) error
	// Group is e.Group's state on e: its backlog and which incarnation
	// of e (and of the group) it is.
	Group(e Endpoint) (GroupState, error)
}

// GroupState is what a broker says of a job's group on its input.
type GroupState struct {
	// Lag is the group's backlog: messages stored and not yet delivered
	// to it, or delivered and not acknowledged (committed, on Kafka).
	Lag int64
	// Added counts the messages ever added to the input since it was
	// made (JetStream: its last sequence; Redis: entries-added; Kafka:
	// its end offsets). It never goes down while the input lives.
	Added int64
	// Identity names this incarnation of the input and of the group
	// where the broker has one (JetStream: their creation times; Kafka:
	// the topic's ID); "" where it has none (Redis).
	Identity string
}

// Remade says why now cannot be the same input and group as before:
// deleted and made again (by the job reconnecting, say) between the two
// reads, which a trial may not see as a failed read. "": it can be.
func Remade(before, now GroupState) string {
	switch {
	case before.Identity != "" && now.Identity != before.Identity:
		return fmt.Sprintf("it was %s, it is %s now", before.Identity, now.Identity)
	case now.Added < before.Added:
		return fmt.Sprintf("it had had %d messages added, it has had %d now", before.Added, now.Added)
	}
	return ""
}

// ErrNoAdmin: the broker keeps no backlog to read (core NATS).
var ErrNoAdmin = errors.New("this broker keeps no stream or group to prepare or read a backlog from (core NATS delivers to whoever is subscribed, or drops)")

// Registry is the drivers a program was built with, by scheme. The
// programs make theirs (cmd/internal/cli.Brokers) and hand it down to the
// sender and the receiver; the zero Registry has none.
type Registry struct{ by map[string]Driver }

// NewRegistry registers ds by their schemes.
func NewRegistry(ds ...Driver) Registry {
	r := Registry{by: map[string]Driver{}}
	for _, d := range ds {
		for _, s := range d.Schemes() {
			r.by[s] = d
		}
	}
	return r
}

func (r Registry) driver(e Endpoint) (Driver, error) {
	d, ok := r.by[e.Driver]
	if !ok {
		return nil, fmt.Errorf("broker endpoint %s: this program was built without the %s driver", e.Where(), e.Driver)
	}
	return d, nil
}

// NewProducer connects a producer for e. Its errors, but ErrFull, are
// *Failure.
func (r Registry) NewProducer(e Endpoint) (Producer, error) {
	d, err := r.driver(e)
	if err != nil {
		return nil, err
	}
	p, err := d.NewProducer(e)
	if err != nil {
		return nil, &Failure{e.Where(), err}
	}
	return failing{p, e.Where()}, nil
}

// NewConsumer connects a consumer for e. Its errors, but ErrTimeout, are
// *Failure.
func (r Registry) NewConsumer(e Endpoint) (Consumer, error) {
	d, err := r.driver(e)
	if err != nil {
		return nil, err
	}
	c, err := d.NewConsumer(e)
	if err != nil {
		return nil, &Failure{e.Where(), err}
	}
	if ready, ok := c.(Ready); ok {
		return readyConsumer{failingConsumer{c, e.Where()}, ready}, nil
	}
	return failingConsumer{c, e.Where()}, nil
}

// Ensure creates e's stream, key or topic where it is missing (ErrNoAdmin
// for core NATS).
func (r Registry) Ensure(e Endpoint) error {
	a, err := r.admin(e)
	if err != nil {
		return err
	}
	if err := a.Ensure(e); err != nil {
		return &Failure{e.Where(), err}
	}
	return nil
}

// Group is e.Group's state on e (ErrNoAdmin for core NATS).
func (r Registry) Group(e Endpoint) (GroupState, error) {
	if e.Group == "" {
		return GroupState{}, fmt.Errorf("broker endpoint %s: no group to read a backlog of: give ?group=NAME, the job's consumer group", e.Where())
	}
	a, err := r.admin(e)
	if err != nil {
		return GroupState{}, err
	}
	g, err := a.Group(e)
	if err != nil {
		return GroupState{}, &Failure{e.Where(), err}
	}
	return g, nil
}

// GroupLag is e.Group's backlog on e (ErrNoAdmin for core NATS).
func (r Registry) GroupLag(e Endpoint) (int64, error) {
	g, err := r.Group(e)
	return g.Lag, err
}

func (r Registry) admin(e Endpoint) (Admin, error) {
	d, err := r.driver(e)
	if err != nil {
		return nil, err
	}
	a, ok := d.(Admin)
	if !ok {
		return nil, fmt.Errorf("broker endpoint %s: %w", e.Where(), ErrNoAdmin)
	}
	return a, nil
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

// readyConsumer is a failingConsumer that hands over what its consumer
// holds (TryNext returns no error to mark).
type readyConsumer struct {
	failingConsumer
	ready Ready
}

func (f readyConsumer) TryNext() ([]byte, bool) { return f.ready.TryNext() }

// failingConsumer marks a consumer's errors (but a timeout) as the broker's.
type failingConsumer struct {
	Consumer
	where string
}

func (f failingConsumer) Next(wait time.Duration) ([]byte, error) {
	b, err := f.Consumer.Next(wait)
	if err == nil || errors.Is(err, ErrTimeout) || errors.Is(err, ErrNoPayload) {
		return b, err
	}
	return nil, &Failure{f.where, err}
}
