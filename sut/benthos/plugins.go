package benthos

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/cloudprofiler-go/cp/dataflow"
	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/wire"
)

// Connected is told when a cp_input or cp_output has connected (plugin
// "cp_input" or "cp_output", and the endpoint without credentials): a job
// says it is reading only once it is, not when the engine was built.
type Connected func(plugin, where string)

// Register adds cp_input and cp_output, and the plain input and output
// cp_broker (plain.go), to env, connecting through the drivers of reg;
// connected (nil: none) is told of each connection. With operators (nil:
// none), each input is an operator of the job: waiting for a bucket,
// busy decoding it, blocked while the job's processors work on its
// tuples (they take no more until then).
func Register(env *service.Environment, reg driver.Registry, connected Connected, operators *dataflow.Job) error {
	if connected == nil {
		connected = func(string, string) {}
	}
	return errors.Join(
		env.RegisterBatchInput("cp_input", inputSpec(), func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchInput, error) {
			in, err := newInput(conf, mgr, reg)
			if err != nil {
				return nil, err
			}
			in.connected = connected
			if in.op, err = operators.Declare(stage.InputOperator, nil); err != nil {
				return nil, err
			}
			operators.Reads(in.e.Topic())
			return in, nil
		}),
		env.RegisterBatchOutput("cp_output", outputSpec(), func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
			out, err := newOutput(conf, mgr, reg)
			if err != nil {
				return nil, service.BatchPolicy{}, 1, err
			}
			out.connected = connected
			operators.Writes(out.e.Topic())
			// the messages of a bucket: the engine's batches, or as the
			// batching field groups them (it was declared and never read)
			policy, err := conf.FieldBatchPolicy("batching")
			// one batch in flight: a stream's buckets leave in their order
			return out, policy, 1, err
		}),
		registerPlain(env, reg, connected, operators),
	)
}

func inputSpec() *service.ConfigSpec {
	return service.NewConfigSpec().
		Summary("Reads the harness's buckets from a broker (docs/sut.md): one message per tuple, its identity in the metadata.").
		Field(service.NewStringField("url").Description("a broker endpoint with the job's group: jetstream://HOST:PORT/SUBJECT?group=NAME, redis://HOST:PORT/KEY?group=NAME or kafka://HOST:PORT/TOPIC?group=NAME (docs/brokers.md)")).
		Field(service.NewStringEnumField("schema", scenarios.SchemaAdEvent, scenarios.SchemaSynthetic, scenarios.SchemaRaw).Default(scenarios.SchemaAdEvent)).
		Field(inFlightField("tuples"))
}

func outputSpec() *service.ConfigSpec {
	return service.NewConfigSpec().
		Summary("Writes tuples, or windows' counts, to a broker as the harness's buckets (docs/sut.md), one bucket per batch.").
		Field(service.NewStringField("url").Description("a broker endpoint: the job's output")).
		Field(service.NewStringEnumField("schema", scenarios.SchemaAdEvent, scenarios.SchemaSynthetic, scenarios.SchemaRaw, scenarios.SchemaWindow).Default(scenarios.SchemaAdEvent)).
		Field(service.NewIntField("stream").Description("the output's stream id (0..65535); give each output of a job its own").Default(0xff00)).
		Field(service.NewBatchPolicyField("batching"))
}

type input struct {
	consumerConn
	schema    string
	decode    scenarios.Decoder
	malformed *service.MetricCounter
	cur       bucketCursor // the rest of a large bucket (ReadBatch's own)
}

func newInput(conf *service.ParsedConfig, mgr *service.Resources, reg driver.Registry) (*input, error) {
	e, schema, err := endpointAndSchema(conf)
	if err != nil {
		return nil, err
	}
	if e.Group == "" && e.Driver != driver.NATS {
		return nil, fmt.Errorf("cp_input %s: give the job's group (?group=NAME): without one the harness's consumer makes the stream anew, which a job must never do", e.Where())
	}
	flight, err := inFlight(conf, "cp_input")
	if err != nil {
		return nil, err
	}
	decode, _ := scenarios.DecoderFor(schema)
	return &input{consumerConn: consumerConn{reg: reg, e: e, plugin: "cp_input", name: "cp_input", unit: "tuple", log: mgr.Logger(),
		nacked: mgr.Metrics().NewCounter("cp_input_nacked_batches"), inflight: flight},
		schema: schema, decode: decode, malformed: mgr.Metrics().NewCounter("cp_input_malformed_buckets")}, nil
}

// endpointAndSchema reads the url and schema fields of cp_input and cp_output.
func endpointAndSchema(conf *service.ParsedConfig) (driver.Endpoint, string, error) {
	url, err := conf.FieldString("url")
	if err != nil {
		return driver.Endpoint{}, "", err
	}
	e, err := driver.Parse(url)
	if err != nil {
		return driver.Endpoint{}, "", err
	}
	schema, err := conf.FieldString("schema")
	return e, schema, err
}

// ReadBatch returns the next bucket's tuples, or the next
// MaxBatchTuples of a larger one, once the engine holds fewer than
// max_in_flight unacknowledged. A malformed bucket is counted, logged
// and skipped; end markers are skipped. A consumer that fails is closed:
// Connect makes the next.
func (in *input) ReadBatch(ctx context.Context) (service.MessageBatch, service.AckFunc, error) {
	c := in.consumer()
	if c == nil {
		return nil, nil, service.ErrNotConnected
	}
	in.op.Waiting() // the processors are done with the last batch
	if in.waiting != nil {
		return in.hand(ctx, in.waiting, in.wBuckets)
	}
	for ctx.Err() == nil {
		if in.cur.left > 0 { // the rest of a large bucket
			batch, err := in.cur.next(MaxBatchTuples, in.schema, in.decode, in.op)
			if err != nil {
				in.skip(err)
				continue
			}
			bucket := uint64(0)
			if in.cur.left == 0 {
				bucket = 1
			}
			return in.hand(ctx, batch, bucket)
		}
		msg, err := c.Next(100 * time.Millisecond)
		if errors.Is(err, driver.ErrTimeout) {
			continue
		}
		in.op.Busy()
		if err != nil {
			in.drop(c, err)
			return nil, nil, service.ErrNotConnected
		}
		if h, err := wire.ParseHeader(msg); err == nil && h.Kind == wire.KindData && h.Count > MaxBatchTuples {
			if err := in.cur.start(msg, in.decode); err != nil {
				in.skip(err)
			}
			continue
		}
		batch, err := decodeBucket(msg, in.schema, in.decode, in.op)
		if err != nil {
			in.skip(err)
			continue
		}
		if len(batch) > 0 {
			return in.hand(ctx, batch, 1)
		}
		in.op.Waiting()
	}
	return nil, nil, ctx.Err()
}

// skip counts and logs a malformed bucket.
func (in *input) skip(err error) {
	in.malformed.Incr(1)
	in.log.Warnf("cp_input %s: a malformed bucket skipped: %v", in.e.Where(), err)
	in.op.Waiting()
}

type output struct {
	producerConn
	schema string
	stream uint32
	// the stream's counts: WriteBatch runs one at a time (max in flight 1)
	seq, tuples uint64
	buf         []byte
}

func newOutput(conf *service.ParsedConfig, _ *service.Resources, reg driver.Registry) (*output, error) {
	e, schema, err := endpointAndSchema(conf)
	if err != nil {
		return nil, err
	}
	stream, err := conf.FieldInt("stream")
	if err != nil {
		return nil, err
	}
	if stream < 0 || stream > 0xffff {
		return nil, fmt.Errorf("cp_output stream %d: want 0..65535", stream)
	}
	return &output{producerConn: producerConn{reg: reg, e: e, plugin: "cp_output"}, schema: schema, stream: uint32(stream)}, nil
}

// WriteBatch publishes the batch as one bucket, waiting out a full window
// (the broker's backpressure reaches the job).
func (o *output) WriteBatch(ctx context.Context, batch service.MessageBatch) error {
	if o.p == nil {
		return service.ErrNotConnected
	}
	b := append(o.buf[:0], make([]byte, wire.HeaderSize)...)
	var err error
	for _, m := range batch {
		if b, err = appendTuple(b, m, o.schema); err != nil {
			return fmt.Errorf("cp_output %s: %w", o.e.Where(), err)
		}
	}
	wire.PutHeader(b, wire.Header{Kind: wire.KindData, Stream: o.stream, Seq: o.seq, Count: uint32(len(batch)), BodyLen: uint32(len(b) - wire.HeaderSize)})
	o.buf = b
	if err := publish(ctx, o.p, b); err != nil {
		return err
	}
	o.seq++
	o.tuples += uint64(len(batch))
	return nil
}

// publish publishes b, waiting out a full window (the broker's
// backpressure reaches the job).
func publish(ctx context.Context, p driver.Producer, b []byte) error {
	for {
		err := p.Publish(b)
		if !errors.Is(err, driver.ErrFull) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Microsecond):
		}
	}
}

// Close ends the stream: its end marker gives the counts, so a receiver
// tells loss between the job and itself from what the job did not send.
func (o *output) Close(ctx context.Context) error {
	if o.p == nil {
		return nil
	}
	defer o.p.Close()
	end, err := wire.AppendEnd(nil, o.stream, wire.End{Tuples: o.tuples, Buckets: o.seq, Reason: "completed"})
	if err == nil {
		err = publish(ctx, o.p, end)
	}
	if err == nil {
		err = o.p.Flush(5 * time.Second)
	}
	o.p = nil
	return err
}
