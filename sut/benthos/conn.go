package benthos

import (
	"context"
	"errors"
	"sync"

	"github.com/cloudprofiler-go/cp/driver"
)

// consumerSlot holds an input's consumer: Connect puts one in, a read
// that fails drops it (the engine's next Connect makes another), Close
// closes it. The engine calls Connect and Close against ReadBatch.
type consumerSlot struct {
	mu sync.Mutex
	c  driver.Consumer
}

func (s *consumerSlot) set(c driver.Consumer) {
	s.mu.Lock()
	s.c = c
	s.mu.Unlock()
}

func (s *consumerSlot) get() driver.Consumer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c
}

// drop closes a consumer that failed, unless Close or Connect replaced
// it already (each reconnect leaked one while it was left open).
func (s *consumerSlot) drop(c driver.Consumer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == c {
		s.c = nil
		c.Close()
	}
}

func (s *consumerSlot) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil {
		s.c.Close()
		s.c = nil
	}
}

// producerConn is an output's producer and its Connect, which cp_output
// and cp_broker share (the engine's write calls follow a Connect).
type producerConn struct {
	reg       driver.Registry
	e         driver.Endpoint
	plugin    string // named to connected
	connected Connected
	p         driver.Producer
}

// Connect connects the producer. A persisted output exists before the
// first publish (JetStream refuses a subject no stream captures); one
// already there is kept.
func (o *producerConn) Connect(context.Context) error {
	if o.p != nil {
		return nil
	}
	if err := o.reg.Ensure(o.e); err != nil && !errors.Is(err, driver.ErrNoAdmin) {
		return err
	}
	p, err := o.reg.NewProducer(o.e)
	if err != nil {
		return err
	}
	o.p = p
	o.connected(o.plugin, o.e.Where())
	return nil
}
