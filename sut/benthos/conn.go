package benthos

import (
	"context"
	"errors"
	"sync"

	"github.com/cloudprofiler-go/cp/dataflow"
	"github.com/cloudprofiler-go/cp/driver"
	"github.com/redpanda-data/benthos/v4/public/service"
	"golang.org/x/sync/semaphore"
)

// consumerConn is an input's consumer and what cp_input and cp_broker
// share around it: Connect puts a consumer in, a read that fails drops it
// (the engine's next Connect makes another), Close closes it, and hand
// gives the engine a batch once it fits in flight. The engine calls
// Connect and Close against ReadBatch.
type consumerConn struct {
	reg       driver.Registry
	e         driver.Endpoint
	plugin    string // named to connected
	name      string // in the log: "cp_input", "cp_broker input"
	unit      string // what a batch holds: "tuple", "message"
	connected Connected
	log       *service.Logger
	op        *dataflow.Operator                  // nil: not accounted
	inflight  *semaphore.Weighted                 // items handed over and not acknowledged
	nacked    interface{ Incr(int64, ...string) } // batches the engine failed (a *service.MetricCounter)
	// ReadBatch's own (the engine reads a batch input from one goroutine)
	waiting  service.MessageBatch // read, waiting for room in flight (a ReadBatch's context ended first)
	wBuckets uint64

	mu sync.Mutex
	c  driver.Consumer
}

// Connect makes the consumer.
func (in *consumerConn) Connect(context.Context) error {
	c, err := in.reg.NewConsumer(in.e)
	if err != nil {
		return err
	}
	in.mu.Lock()
	in.c = c
	in.mu.Unlock()
	in.connected(in.plugin, in.e.Where())
	return nil
}

func (in *consumerConn) consumer() driver.Consumer {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.c
}

// drop logs a read that failed and closes its consumer, unless Close or
// Connect replaced it already (each reconnect leaked one while it was
// left open).
func (in *consumerConn) drop(c driver.Consumer, err error) {
	in.log.Errorf("%s %s: %v", in.name, in.e.Where(), err)
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.c == c {
		in.c = nil
		c.Close()
	}
}

// Close closes the consumer.
func (in *consumerConn) Close(context.Context) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.c != nil {
		in.c.Close()
		in.c = nil
	}
	return nil
}

// hand gives the engine a batch (buckets: the buckets it finishes) once
// its items fit in flight; its acknowledgement frees them. The driver's
// consumer acknowledged on receipt (docs/sut.md): a nack is counted and
// logged, and the items are not read again.
func (in *consumerConn) hand(ctx context.Context, batch service.MessageBatch, buckets uint64) (service.MessageBatch, service.AckFunc, error) {
	n := int64(len(batch))
	in.op.Blocked() // until the processors have taken the batch
	if err := in.inflight.Acquire(ctx, n); err != nil {
		in.waiting, in.wBuckets = batch, buckets // the next call hands it over
		return nil, nil, err
	}
	in.waiting = nil
	in.op.Processed(buckets, uint64(n))
	var once sync.Once
	return batch, func(_ context.Context, err error) error {
		once.Do(func() {
			in.inflight.Release(n)
			if err != nil {
				in.nacked.Incr(1)
				in.log.Warnf("%s %s: the engine failed a batch of %d %s(s): %v (not read again: the broker acknowledged them on receipt)", in.name, in.e.Where(), n, in.unit, err)
			}
		})
		return nil
	}, nil
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
