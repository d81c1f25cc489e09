package receiver

import (
	"errors"
	"fmt"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/zmqraw"
	"github.com/cloudprofiler-go/cp/objfactory"
	"github.com/cloudprofiler-go/cp/tsc"
)

// brokerSource is a lane's broker consumer as the object factory's
// Source. Each message is a fresh byte slice of the client's, so a bucket
// may hold it until it is released.
type brokerSource struct {
	c         driver.Consumer
	max       int          // the receive limit (bytes)
	waitTicks uint64       // waitedAfter in TSC ticks
	ready     driver.Ready // c, when it can hand over what it holds (nil: it cannot)
}

// newBrokerSource reads lane messages from c.
func newBrokerSource(c driver.Consumer, max int, waitTicks uint64) brokerSource {
	ready, _ := c.(driver.Ready)
	return brokerSource{c: c, max: max, waitTicks: waitTicks, ready: ready}
}

// brokerPoll is the longest wait for a message, so that a lane notices a
// stop, as the ZeroMQ sockets' receive timeout.
const brokerPoll = 100 * time.Millisecond

// waitedAfter: a message that took longer than this to come was waited
// for (the lane idled); a quicker one was already in the client.
const waitedAfter = 20 * time.Microsecond

func (s brokerSource) Recv(b *objfactory.Bucket) error {
	if s.ready != nil { // a message already there: the lane did not wait
		if msg, ok := s.ready.TryNext(); ok {
			if len(msg) > s.max {
				return objfactory.ErrOversized
			}
			b.Msg, b.Waited = msg, false
			return nil
		}
	}
	start := tsc.ReadFast() // per message: the TSC, not two clock calls
	msg, err := s.c.Next(brokerPoll)
	switch {
	case errors.Is(err, driver.ErrTimeout):
		return objfactory.ErrTimeout
	case errors.Is(err, driver.ErrNoPayload):
		return &objfactory.SourceError{Reason: objfactory.ReasonField, Err: err}
	case err != nil:
		return err
	case len(msg) > s.max:
		return objfactory.ErrOversized
	}
	b.Msg, b.Waited = msg, tsc.ReadFast()-start > s.waitTicks
	return nil
}

// openBroker connects lane l's consumer to the broker endpoint ep.
func (l *lane) openBroker(brokers driver.Registry, ep string) error {
	e, err := driver.Parse(ep)
	if err != nil {
		return err
	}
	if l.cons, err = brokers.NewConsumer(e); err != nil {
		return fmt.Errorf("lane %s: %w", ep, err)
	}
	return nil
}

// openSource connects lane l to its endpoint: a ZeroMQ socket, or a
// broker's consumer.
func (r *Receiver) openSource(l *lane, ep string) error {
	if driver.IsBroker(ep) {
		return l.openBroker(r.cfg.Brokers, ep)
	}
	var err error
	if l.sock, err = r.openSocket(ep); err != nil {
		return err
	}
	l.raw, err = zmqraw.Wrap(l.sock, r.cfg.Ring, r.cfg.MaxMessage)
	return err
}
