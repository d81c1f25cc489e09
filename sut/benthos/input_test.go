package benthos

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"golang.org/x/sync/semaphore"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/wire"
)

// fakeConsumer hands out msgs, then fails with err (closed counts Close).
type fakeConsumer struct {
	msgs   [][]byte
	err    error
	closed int
}

func (f *fakeConsumer) Next(time.Duration) ([]byte, error) {
	if len(f.msgs) == 0 {
		return nil, f.err
	}
	m := f.msgs[0]
	f.msgs = f.msgs[1:]
	return m, nil
}
func (f *fakeConsumer) Lag() (int64, error) { return 0, nil }
func (f *fakeConsumer) Dropped() uint64     { return 0 }
func (f *fakeConsumer) Close()              { f.closed++ }

func testInput(c driver.Consumer, schema string) *input {
	decode, _ := scenarios.DecoderFor(schema)
	res := service.MockResources()
	return &input{consumerConn: consumerConn{name: "cp_input", unit: "tuple", log: res.Logger(), c: c, connected: func(string, string) {},
		nacked: res.Metrics().NewCounter("n"), inflight: semaphore.NewWeighted(DefaultInFlight)},
		schema: schema, decode: decode, malformed: res.Metrics().NewCounter("m")}
}

// rawBucket is one bucket of n raw tuples [id, intended] of 19 bytes.
func rawBucket(n int) []byte {
	b := make([]byte, wire.HeaderSize)
	for i := range n {
		b = wire.AppendArrayLen(b, 2)
		b = wire.AppendUint64Fixed(b, wire.TupleID(1, uint64(i)))
		b = wire.AppendInt64Fixed(b, int64(i))
	}
	wire.PutHeader(b, wire.Header{Kind: wire.KindData, Stream: 1, Count: uint32(n), BodyLen: uint32(len(b) - wire.HeaderSize)})
	return b
}

// TestInputBoundsWhatItDecodes: a bucket of 56,000 small tuples (1 MiB)
// is handed over in batches of MaxBatchTuples, every tuple once and in
// order; beyond DefaultInFlight unacknowledged ReadBatch waits (here:
// until its context ends) and an acknowledgement lets it go on; the heap
// stays within the documented bound however many such buckets come.
func TestInputBoundsWhatItDecodes(t *testing.T) {
	const n = 56_000
	bucket := rawBucket(n)
	if len(bucket) < 1<<20 {
		t.Fatalf("a bucket of %d bytes, want 1 MiB", len(bucket))
	}
	fc := &fakeConsumer{err: driver.ErrTimeout}
	for range 20 {
		fc.msgs = append(fc.msgs, bucket)
	}
	in := testInput(fc, scenarios.SchemaRaw)
	var acks []service.AckFunc // not yet acknowledged, oldest first
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	peak, next, waited := uint64(0), uint64(0), false
	for next < 20*n {
		if len(acks) == DefaultInFlight/MaxBatchTuples { // full
			if !waited { // ReadBatch waits for an acknowledgement
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				_, _, err := in.ReadBatch(ctx)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("with %d tuples in flight: %v, want a wait", DefaultInFlight, err)
				}
				waited = true
			}
			_ = acks[0](context.Background(), nil)
			acks = acks[1:]
		}
		batch, ack, err := in.ReadBatch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) > MaxBatchTuples {
			t.Fatalf("a batch of %d tuples", len(batch))
		}
		for _, m := range batch {
			id, _, err := identity(m)
			if err != nil || id != wire.TupleID(1, next%n) {
				t.Fatalf("tuple %d: id %x, %v", next, id, err)
			}
			next++
		}
		acks = append(acks, ack)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
	}
	if next != 20*n {
		t.Errorf("%d tuples handed over, want %d", next, 20*n)
	}
	grew := float64(peak-min(peak, before.HeapAlloc)) / (1 << 20)
	t.Logf("20 buckets of 56,000 tuples: the heap grew by %.0f MiB at the most", grew)
	if grew > 64 {
		t.Errorf("the heap grew by %.0f MiB with at most %d tuples in flight", grew, DefaultInFlight)
	}
}

// TestInputClosesAFailedConsumer: a consumer whose Next fails is closed
// and forgotten (Connect makes the next one), not leaked.
func TestInputClosesAFailedConsumer(t *testing.T) {
	fc := &fakeConsumer{err: errors.New("connection reset")}
	in := testInput(fc, scenarios.SchemaRaw)
	if _, _, err := in.ReadBatch(context.Background()); !errors.Is(err, service.ErrNotConnected) {
		t.Fatalf("%v, want ErrNotConnected", err)
	}
	if fc.closed != 1 || in.consumer() != nil {
		t.Errorf("closed %d times, consumer kept %v", fc.closed, in.consumer() != nil)
	}
}

// counter counts what a metric counter would.
type counter struct{ n int64 }

func (c *counter) Incr(n int64, _ ...string) { c.n += n }

// TestNackIsCountedAndFreesItsTuples: a batch the engine fails is counted
// (cp_input_nacked_batches) and its tuples leave the in-flight bound, once
// however often the engine acknowledges it.
func TestNackIsCountedAndFreesItsTuples(t *testing.T) {
	fc := &fakeConsumer{msgs: [][]byte{rawBucket(10)}, err: driver.ErrTimeout}
	in := testInput(fc, scenarios.SchemaRaw)
	nacks := &counter{}
	in.nacked, in.inflight = nacks, semaphore.NewWeighted(10)
	batch, ack, err := in.ReadBatch(context.Background())
	if err != nil || len(batch) != 10 {
		t.Fatalf("%d tuples, %v", len(batch), err)
	}
	if in.inflight.TryAcquire(1) {
		t.Fatal("the batch's tuples are not in flight")
	}
	for range 2 {
		if err := ack(context.Background(), errors.New("processor failed")); err != nil {
			t.Fatal(err)
		}
	}
	if nacks.n != 1 || !in.inflight.TryAcquire(10) {
		t.Errorf("%d nacks counted (want 1), in flight freed: %v", nacks.n, nacks.n == 1)
	}
}

// TestInFlightBoundIsTheConfigured: max_in_flight sets how many tuples
// cp_input and cp_broker leave unacknowledged in the engine (a window
// buffer holds a window's: 32,768 made YSB on 1 s windows fail at 33.6 k/s);
// a bound below one batch, or above MaxInFlight, is refused by name.
func TestInFlightBoundIsTheConfigured(t *testing.T) {
	env := service.NewEnvironment()
	for _, c := range []struct {
		yaml string
		want int64 // 0: refused
	}{
		{"url: jetstream://127.0.0.1:4222/in?group=g", DefaultInFlight},
		{"url: jetstream://127.0.0.1:4222/in?group=g\nmax_in_flight: 8192", 8192},
		{"url: jetstream://127.0.0.1:4222/in?group=g\nmax_in_flight: 100", 0},
		{"url: jetstream://127.0.0.1:4222/in?group=g\nmax_in_flight: 33554432", 0},
	} {
		for _, plugin := range []string{"cp_input", "cp_broker input"} {
			spec := inputSpec()
			if plugin != "cp_input" {
				spec = plainInputSpec()
			}
			conf, err := spec.ParseYAML(c.yaml, env)
			if err != nil {
				t.Fatal(err)
			}
			sem, err := inFlight(conf, plugin)
			if c.want == 0 {
				if err == nil || !strings.Contains(err.Error(), plugin+": max_in_flight") {
					t.Errorf("%s %q: %v, want refused by name", plugin, c.yaml, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s %q: %v", plugin, c.yaml, err)
			}
			if !sem.TryAcquire(c.want) || sem.TryAcquire(1) {
				t.Errorf("%s %q: the bound is not %d", plugin, c.yaml, c.want)
			}
		}
	}
}
