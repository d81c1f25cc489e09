package benthos

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/cloudprofiler-go/cp/dataflow"
	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/stage"
)

// The plain input and output, cp_broker, carry a broker's messages as they
// are: a job written as any Benthos user writes one, whose messages are
// its own events (one JSON event each: format=json, docs/brokers.md),
// reads and writes them through the same drivers as cp_input and
// cp_output, without the harness's buckets or metadata. The identity is
// a field of the event, which the job carries like any other.

// registerPlain adds the input and output cp_broker to env.
func registerPlain(env *service.Environment, reg driver.Registry, connected Connected, operators *dataflow.Job) error {
	return errors.Join(
		env.RegisterBatchInput("cp_broker", plainInputSpec(), func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchInput, error) {
			e, err := plainEndpoint(conf)
			if err != nil {
				return nil, err
			}
			if e.Group == "" && e.Driver != driver.NATS {
				return nil, fmt.Errorf("cp_broker input %s: give the job's group (?group=NAME): without one the consumer makes the stream anew, which a job must never do", e.Where())
			}
			flight, err := inFlight(conf, "cp_broker input")
			if err != nil {
				return nil, err
			}
			in := &plainInput{consumerConn{reg: reg, e: e, plugin: "cp_broker", name: "cp_broker input", unit: "message", log: mgr.Logger(),
				connected: connected, inflight: flight, nacked: mgr.Metrics().NewCounter("cp_broker_nacked_batches")}}
			if in.op, err = operators.Declare(stage.InputOperator, nil); err != nil {
				return nil, err
			}
			operators.Reads(e.Topic())
			return in, nil
		}),
		env.RegisterBatchOutput("cp_broker", plainOutputSpec(), func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
			e, err := plainEndpoint(conf)
			if err != nil {
				return nil, service.BatchPolicy{}, 1, err
			}
			operators.Writes(e.Topic())
			policy, err := conf.FieldBatchPolicy("batching")
			return &plainOutput{producerConn{reg: reg, e: e, plugin: "cp_broker", connected: connected}}, policy, 1, err
		}),
	)
}

func plainInputSpec() *service.ConfigSpec {
	return service.NewConfigSpec().
		Summary("Reads a broker's messages as they are, one message each (a JSON event: format=json, docs/brokers.md).").
		Field(service.NewStringField("url").Description("a broker endpoint with the job's group: jetstream://HOST:PORT/SUBJECT?group=NAME&format=json, redis://... or kafka://... (docs/brokers.md)")).
		Field(inFlightField("messages"))
}

func plainOutputSpec() *service.ConfigSpec {
	return service.NewConfigSpec().
		Summary("Writes each message to a broker as it is (a JSON event: format=json, docs/brokers.md).").
		Field(service.NewStringField("url").Description("a broker endpoint: the job's output")).
		Field(service.NewBatchPolicyField("batching"))
}

// plainEndpoint reads the url field; the messages are the job's own, so
// only the JSON format is theirs (buckets are cp_input's and cp_output's).
func plainEndpoint(conf *service.ParsedConfig) (driver.Endpoint, error) {
	url, err := conf.FieldString("url")
	if err != nil {
		return driver.Endpoint{}, err
	}
	e, err := driver.Parse(url)
	if err != nil {
		return driver.Endpoint{}, err
	}
	if !e.JSON() {
		return driver.Endpoint{}, fmt.Errorf("cp_broker %s: its messages are the job's own events: add format=json to the url (the harness's buckets are cp_input's and cp_output's)", e.Where())
	}
	return e, nil
}

type plainInput struct{ consumerConn }

// plainBatch is the most messages one ReadBatch hands over: what the
// client already holds after the first, so that a busy job reads in
// batches and an idle one without waiting.
const plainBatch = 256

// ReadBatch returns the next message, and those the client holds behind
// it, once they fit in flight.
func (in *plainInput) ReadBatch(ctx context.Context) (service.MessageBatch, service.AckFunc, error) {
	c := in.consumer()
	if c == nil {
		return nil, nil, service.ErrNotConnected
	}
	in.op.Waiting()
	if in.waiting != nil {
		return in.hand(ctx, in.waiting, in.wBuckets)
	}
	for ctx.Err() == nil {
		msg, err := c.Next(100 * time.Millisecond)
		if errors.Is(err, driver.ErrTimeout) {
			continue
		}
		in.op.Busy()
		if err != nil {
			in.drop(c, err)
			return nil, nil, service.ErrNotConnected
		}
		batch := service.MessageBatch{service.NewMessage(msg)}
		ready, _ := c.(driver.Ready)
		for ready != nil && len(batch) < plainBatch {
			next, ok := ready.TryNext()
			if !ok {
				break
			}
			batch = append(batch, service.NewMessage(next))
		}
		return in.hand(ctx, batch, uint64(len(batch))) // a message is a bucket
	}
	return nil, nil, ctx.Err()
}

type plainOutput struct{ producerConn }

// WriteBatch publishes each message as it is, in order, waiting out a
// full window (the broker's backpressure reaches the job).
func (o *plainOutput) WriteBatch(ctx context.Context, batch service.MessageBatch) error {
	if o.p == nil {
		return service.ErrNotConnected
	}
	for _, m := range batch {
		b, err := m.AsBytes()
		if err != nil {
			return fmt.Errorf("cp_broker output %s: %w", o.e.Where(), err)
		}
		if err := publish(ctx, o.p, b); err != nil {
			return err
		}
	}
	return nil
}

func (o *plainOutput) Close(context.Context) error {
	if o.p == nil {
		return nil
	}
	err := o.p.Flush(5 * time.Second)
	o.p.Close()
	o.p = nil
	return err
}
