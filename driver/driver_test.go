package driver_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/driver/kafka"
	"github.com/cloudprofiler-go/cp/driver/nats"
	"github.com/cloudprofiler-go/cp/driver/redis"
	"github.com/cloudprofiler-go/cp/wire/jsonev"

	"github.com/cloudprofiler-go/cp/driver/embedded"
	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
)

// open parses ep and connects its consumer (first: it makes the stream,
// key or topic) and its producer, both closed when the test ends.
// brokers are every driver, as the programs register them.
var brokers = driver.NewRegistry(nats.Driver{}, redis.Driver{}, kafka.Driver{})

func open(t *testing.T, ep string) (driver.Consumer, driver.Producer) {
	t.Helper()
	e, err := driver.Parse(ep)
	if err != nil {
		t.Fatal(err)
	}
	c, err := brokers.NewConsumer(e)
	if err != nil {
		t.Fatalf("%s: %v", ep, err)
	}
	t.Cleanup(c.Close)
	p, err := brokers.NewProducer(e)
	if err != nil {
		t.Fatalf("%s: %v", ep, err)
	}
	t.Cleanup(p.Close)
	return c, p
}

// publishAll publishes n messages (msg(i) makes the i-th), waiting out a
// full window, and flushes.
func publishAll(t *testing.T, p driver.Producer, n int, msg func(i int) []byte) {
	t.Helper()
	for i := 0; i < n; i++ {
		for {
			err := p.Publish(msg(i))
			if err == nil {
				break
			}
			if !errors.Is(err, driver.ErrFull) {
				t.Fatalf("publish %d: %v", i, err)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	if err := p.Flush(10 * time.Second); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

// drain reads until 200 ms bring nothing and returns how many came.
func drain(t *testing.T, c driver.Consumer) int {
	t.Helper()
	got := 0
	for {
		_, err := c.Next(200 * time.Millisecond)
		if errors.Is(err, driver.ErrTimeout) {
			return got
		}
		if err != nil {
			t.Fatalf("after %d messages: %v", got, err)
		}
		got++
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		want    driver.Endpoint
	}{
		{in: "nats://127.0.0.1:4222/cp.0", want: driver.Endpoint{Driver: driver.NATS, Server: "nats://127.0.0.1:4222", Subject: "cp.0", Window: driver.DefaultCoreWindow, Storage: "file", Ack: "none", Format: jsonev.FormatBucket, Fields: jsonev.Defaults()}},
		{in: "jetstream://h:4222/cp.lane-1?storage=memory&ack=explicit&window=100", want: driver.Endpoint{Driver: driver.JetStream, Server: "nats://h:4222", Subject: "cp.lane-1", Window: 100, Storage: "memory", Ack: "explicit", Format: jsonev.FormatBucket, Fields: jsonev.Defaults()}},
		{in: "jetstream://h:4222/out?format=json&key=campaign_id&window_end=window_end&count=seen&id=eid", want: driver.Endpoint{Driver: driver.JetStream, Server: "nats://h:4222", Subject: "out", Window: driver.DefaultJSWindow, Storage: "file", Ack: "none",
			Format: jsonev.FormatJSON, Fields: jsonev.Fields{ID: "eid", Intended: jsonev.DefaultIntended, Key: "campaign_id", Window: "window_end", Count: "seen", Unit: jsonev.UnitMs}}},
		{in: "jetstream://h:4222/cp?format=xml", err: "format \"xml\": want bucket or json"},
		{in: "jetstream://h:4222/cp?id=x", err: "need format=json"},
		{in: "jetstream://h:4222/cp?format=json&key=k", err: "names key, window_end (or window_start) and count together"},
		{in: "redis://h:6379/cp?format=json&count=n&window_end=w&key=cp_id", err: "is both id and key"},
		{in: "nats://user:secret@h:4222/cp", err: "credentials in a URL are refused"},
		{in: "nats://h:4222/cp.*", err: "no wildcards"},
		{in: "nats://h:4222/", err: "subject"},
		{in: "nats://h/cp", err: "want nats://HOST:PORT/SUBJECT"},
		{in: "nats://h:4222/cp?storage=memory", err: "is not one of nats's"},
		{in: "jetstream://h:4222/cp?acks=all", err: "is not one of jetstream's"},
		{in: "jetstream://h:4222/cp?window=0", err: "window"},
		{in: "amqp://h:5672/cp", err: "not a driver"},
	} {
		got, err := driver.Parse(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Parse(%q) = %+v, %v; want an error with %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if tc.err != "" && err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the error echoes the password: %v", err)
		}
	}
	if !driver.IsBroker("jetstream://h:1/x") || driver.IsBroker("tcp://h:1") || driver.IsBroker("nats") {
		t.Error("IsBroker")
	}
}

// TestRoundTrip: every message published arrives once, in order, with its
// bytes, through core NATS and through JetStream (both storages, both
// acknowledgement modes); the consumer's lag is zero at the end.
func TestRoundTrip(t *testing.T) {
	addr := realserver.EmbeddedNATS(t)
	roundTrip(t, []string{"nats://" + addr + "/cp.core", "jetstream://" + addr + "/cp.js", "jetstream://" + addr + "/cp.mem?storage=memory&ack=explicit"})
}

// roundTrip publishes 5000 numbered messages through each endpoint and
// reads them back, in order, with their bytes.
func roundTrip(t *testing.T, endpoints []string) {
	t.Helper()
	for _, ep := range endpoints {
		c, p := open(t, ep)
		const n = 5000
		buf := make([]byte, 1000)
		publishAll(t, p, n, func(i int) []byte {
			binary.LittleEndian.PutUint64(buf, uint64(i))
			return buf
		})
		for i := uint64(0); i < n; i++ {
			b, err := c.Next(5 * time.Second)
			if err != nil {
				t.Fatalf("%s: message %d: %v", ep, i, err)
			}
			if got := binary.LittleEndian.Uint64(b); got != i || len(b) != len(buf) {
				t.Fatalf("%s: message %d is %d (%d bytes)", ep, i, got, len(b))
			}
		}
		if _, err := c.Next(50 * time.Millisecond); !errors.Is(err, driver.ErrTimeout) {
			t.Errorf("%s: after the last message: %v, want ErrTimeout", ep, err)
		}
		if lag, err := c.Lag(); err != nil || lag != 0 {
			t.Errorf("%s: lag %d, %v at the end", ep, lag, err)
		}
	}
}

// TestFullWindowIsBackpressure: with nobody acknowledging fast enough a
// small window fills and Publish says ErrFull at once instead of blocking.
func TestFullWindowIsBackpressure(t *testing.T) {
	_, p := open(t, "jetstream://"+realserver.EmbeddedNATS(t)+"/cp.full?window=4")
	full := 0
	start := time.Now()
	for i := 0; i < 10000 && full == 0; i++ {
		if err := p.Publish(make([]byte, 64<<10)); errors.Is(err, driver.ErrFull) {
			full++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if full == 0 {
		t.Fatal("10000 publishes of 64 KiB never filled a window of 4")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("filling the window took %v: Publish blocked", took)
	}
}

// TestServerGoneIsAnError: a producer whose server stops gets an error,
// not a silent drop (the trial is invalid, not a result).
func TestServerGoneIsAnError(t *testing.T) {
	s, err := embedded.Start()
	if err != nil {
		t.Fatal(err)
	}
	e, _ := driver.Parse("nats://" + s.Addr() + "/cp.gone")
	p, err := brokers.NewProducer(e)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s.Close()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := p.Publish([]byte("x")); err != nil && !errors.Is(err, driver.ErrFull) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("publishing to a stopped server gave no error for 5 s")
}

// TestSlowConsumerIsLossNotFailure: core NATS dropping messages for a
// consumer that fell behind is loss (counted by sequence downstream),
// not an error of the broker.
func TestSlowConsumerIsLossNotFailure(t *testing.T) {
	c, p := open(t, "nats://"+realserver.EmbeddedNATS(t)+"/cp.slow")
	const n = nats.CoreQueue + 5000 // more than the consumer's queue holds, while it does not read
	msg := make([]byte, 100)
	publishAll(t, p, n, func(int) []byte { return msg })
	// everything the server sent has reached the consumer's client
	for deadline := time.Now().Add(5 * time.Second); c.Dropped() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	got := drain(t, c) // a failure here would be a slow consumer's loss reported as the broker's
	if got == 0 || got >= n || c.Dropped() == 0 {
		t.Errorf("received %d of %d with %d dropped: want some dropped and the rest delivered", got, n, c.Dropped())
	}
}

// TestAJetStreamLagCountsTheClientsPrefetch: a JetStream consumer's
// client fetches up to 1,024 messages ahead of the lane; they are the
// lane's backlog as much as what the stream has not yet delivered, with
// acknowledgements or without.
func TestAJetStreamLagCountsTheClientsPrefetch(t *testing.T) {
	addr := realserver.EmbeddedNATS(t)
	for _, ep := range []string{"jetstream://" + addr + "/cp.prefetch", "jetstream://" + addr + "/cp.prefetchacked?ack=explicit"} {
		c, p := open(t, ep)
		publishAll(t, p, 500, func(int) []byte { return []byte("m") })
		for i := 0; i < 100; i++ {
			if _, err := c.Next(5 * time.Second); err != nil {
				t.Fatalf("%s: %v", ep, err)
			}
		}
		time.Sleep(200 * time.Millisecond) // the client has fetched the rest by now
		if lag, err := c.Lag(); err != nil || lag != 400 {
			t.Errorf("%s: lag %d (%v) with 400 of 500 not handed over; want 400", ep, lag, err)
		}
	}
}

// TestASharedGroupsLagIsNotOverCounted: receivers reading a job's output
// in one group share its durable consumer; what one has read is not in
// the other's lag (its delivered count is both of theirs).
func TestASharedGroupsLagIsNotOverCounted(t *testing.T) {
	addr := realserver.EmbeddedNATS(t)
	ep := "jetstream://" + addr + "/cp.shared?group=cp"
	a, p := open(t, ep)
	b, _ := open(t, ep)
	publishAll(t, p, 400, func(int) []byte { return []byte("m") })
	read := 0
	for _, c := range []driver.Consumer{a, b} {
		for {
			if _, err := c.Next(300 * time.Millisecond); err != nil {
				break
			}
			read++
		}
	}
	if read != 400 {
		t.Fatalf("the two read %d of 400", read)
	}
	for i, c := range []driver.Consumer{a, b} {
		if lag, err := c.Lag(); err != nil || lag != 0 {
			t.Errorf("consumer %d: lag %d (%v) with everything read; want 0", i, lag, err)
		}
	}
}
