package sender

import (
	"errors"
	"fmt"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/zmqraw"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sender/tally"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/wire/jsonev"
)

// outlet is where an emission thread's messages go: its ZeroMQ socket,
// or a broker driver's producer (package driver). msgs[i] holds the bytes
// of items[i] for outlets that do not read Buf (no cgo).
type outlet interface {
	// SendBatch sends items in order, each once the TSC reaches its Due,
	// stamping Ready and At; it stops at the first that cannot be sent
	// (zmqraw.ErrAgain: the socket or the in-flight window is full).
	SendBatch(items []zmqraw.BatchItem, msgs [][]byte) (int, error)
	// Send sends one message; unless nonblock it waits a bounded time
	// (the socket's send timeout) before zmqraw.ErrAgain.
	Send(msg []byte, nonblock bool) error
}

// zmqOutlet is the ZeroMQ socket: the batch goes to C as it is.
type zmqOutlet struct{ raw *zmqraw.Socket }

func (o zmqOutlet) SendBatch(items []zmqraw.BatchItem, _ [][]byte) (int, error) {
	return o.raw.SendBatch(items)
}
func (o zmqOutlet) Send(msg []byte, nonblock bool) error { return o.raw.Send(msg, nonblock) }

// brokerOutlet publishes through a driver. Its batches hold one message
// (setupBatch): the loop has waited for its due time already.
type brokerOutlet struct{ p driver.Producer }

// brokerSendTimeout is how long a blocking Send waits for room in the
// window, as the ZeroMQ sockets' send timeout does.
const brokerSendTimeout = 100 * time.Millisecond

func (o brokerOutlet) SendBatch(items []zmqraw.BatchItem, msgs [][]byte) (int, error) {
	for i := range items {
		it := &items[i]
		now := tsc.ReadFast()
		it.Ready = now
		for it.Due > 0 && now < it.Due { // one TSC read a message when none is due later
			now = tsc.ReadFast()
		}
		it.At = now
		if err := o.p.Publish(msgs[i]); err != nil {
			if errors.Is(err, driver.ErrFull) {
				return i, zmqraw.ErrAgain
			}
			return i, err
		}
	}
	return len(items), nil
}

func (o brokerOutlet) Send(msg []byte, nonblock bool) error {
	deadline := time.Now().Add(brokerSendTimeout)
	for {
		err := o.p.Publish(msg)
		if !errors.Is(err, driver.ErrFull) {
			return err
		}
		if nonblock || time.Now().After(deadline) {
			return zmqraw.ErrAgain
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// openBroker connects thread t's producer. The link it reports has one
// peer for the whole run (the broker); whether everything was delivered
// is the producer's final flush (flushBrokers).
func (t *thread) openBroker(brokers driver.Registry) error {
	e, err := driver.Parse(t.endpoint)
	if err != nil {
		return err
	}
	if t.prod, err = brokers.NewProducer(e); err != nil {
		return fmt.Errorf("thread %d: %w", t.id, err)
	}
	t.out = brokerOutlet{t.prod}
	t.link = &link{Link: &tally.Link{Thread: t.id, Endpoint: t.endpoint, Events: []tally.LinkEvent{}}}
	t.link.peers.Store(1)
	t.link.connects.Store(1)
	return nil
}

// flushBrokers waits, up to linger, until each broker thread's publishes
// are in the broker (JetStream: acknowledged), before the connections
// close; the result is the link's Flushed.
func (s *Sender) flushBrokers(linger time.Duration) {
	for _, t := range s.threads {
		if t.prod != nil {
			t.flushErr = t.prod.Flush(linger)
		}
	}
}

// makeTemplates makes the thread's templates: the scenario's encoded
// tuples in buckets, or a user's events as JSON (in the endpoint's
// mapping f).
func (t *thread) makeTemplates(s *scenarios.Scenario, encoded []scenarios.Encoded, f jsonev.Fields, bucket int) error {
	var err error
	if s.Schema == scenarios.SchemaEvents {
		t.tpls, err = scenarios.EventTemplates(s, f)
	} else {
		t.tpls, err = scenarios.Templates(encoded, t.stream, bucket)
	}
	return err
}

// jsonProblems says what a run cannot do with JSON events: a JSON event
// is one tuple, of a schema with a JSON form.
func (c *Config) jsonProblems() []string {
	var problems []string
	for _, ep := range c.Endpoints {
		if _, json := driver.JSONEndpoint(ep); !json {
			if c.Scenario != nil && c.Scenario.Schema == scenarios.SchemaEvents {
				problems = append(problems, fmt.Sprintf("%s: your events go only as JSON: add format=json to a broker endpoint's URL", ep))
			}
			continue
		}
		if c.BucketSize != 1 {
			problems = append(problems, fmt.Sprintf("%s sends JSON events, one a message: --bucket 1, not %d", ep, c.BucketSize))
		}
		if c.Scenario != nil && c.Scenario.Schema != scenarios.SchemaAdEvent && c.Scenario.Schema != scenarios.SchemaSynthetic && c.Scenario.Schema != scenarios.SchemaEvents {
			problems = append(problems, fmt.Sprintf("%s sends JSON events: the %s schema has no JSON form (%s or %s)", ep, c.Scenario.Schema, scenarios.SchemaAdEvent, scenarios.SchemaSynthetic))
		}
	}
	return problems
}
