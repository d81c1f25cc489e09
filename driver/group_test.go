package driver_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
)

// TestGroupsAreJoinedNeverDeleted: a job's stream, key or topic (an
// endpoint with ?group=) is made where missing by Ensure, read by a
// consumer that joins the group where it left off, and never emptied:
// a second consumer of the group reads only what came after the first,
// and the group's lag, read by the sweep, counts what it has not read.
func TestGroupsAreJoinedNeverDeleted(t *testing.T) {
	nats := realserver.EmbeddedNATS(t)
	redisAddr, _ := realserver.Redis(t)
	kafkaAddr := fakeKafka(t)
	for _, ep := range []string{
		"jetstream://" + nats + "/job.in?group=job",
		"jetstream://" + nats + "/job.acked?group=job&ack=explicit",
		"redis://" + redisAddr + "/job.in?group=job",
		"kafka://" + kafkaAddr + "/job.in?group=job",
	} {
		e, err := driver.Parse(ep)
		if err != nil || e.Group != "job" {
			t.Fatalf("%s: %+v %v", ep, e, err)
		}
		if err := brokers.Ensure(e); err != nil {
			t.Fatalf("%s: ensure: %v", ep, err)
		}
		p, err := brokers.NewProducer(e)
		if err != nil {
			t.Fatalf("%s: %v", ep, err)
		}
		msg := []byte("tuple")
		publishAll(t, p, 300, func(int) []byte { return msg })
		waitLag(t, ep, e, 300)
		readGroup(t, ep, e, 300)
		waitLag(t, ep, e, 0)
		if err := brokers.Ensure(e); err != nil {
			t.Fatalf("%s: ensure again: %v", ep, err)
		}
		publishAll(t, p, 50, func(int) []byte { return msg })
		waitLag(t, ep, e, 50)
		readGroup(t, ep, e, 50)
		p.Close()
	}
}

// readGroup reads with a new consumer of e's group: want messages, no more.
func readGroup(t *testing.T, ep string, e driver.Endpoint, want int) {
	t.Helper()
	c, err := brokers.NewConsumer(e)
	if err != nil {
		t.Fatalf("%s: %v", ep, err)
	}
	defer c.Close()
	got := 0
	for deadline := time.Now().Add(10 * time.Second); got < want && time.Now().Before(deadline); {
		if _, err := c.Next(200 * time.Millisecond); err == nil {
			got++
		} else if !errors.Is(err, driver.ErrTimeout) {
			t.Fatalf("%s: after %d: %v", ep, got, err)
		}
	}
	if more := drain(t, c); got != want || more != 0 {
		t.Errorf("%s: a consumer of the group read %d then %d more, want %d: the group was not joined where it left off", ep, got, more, want)
	}
}

// waitLag waits up to 5 s for the group's lag to be want (Kafka's
// committed offsets trail the reads by the commit interval).
func waitLag(t *testing.T, ep string, e driver.Endpoint, want int64) {
	t.Helper()
	var lag int64
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if lag, err = brokers.GroupLag(e); err == nil && lag == want {
			return
		}
	}
	t.Errorf("%s: the group's lag is %d (%v), want %d", ep, lag, err, want)
}

// TestCoreNATSHasNoGroup: core NATS keeps nothing to prepare or read a
// backlog from; a group on it is refused, and Ensure says why.
func TestCoreNATSHasNoGroup(t *testing.T) {
	if _, err := driver.Parse("nats://127.0.0.1:4222/in?group=job"); err == nil {
		t.Error("a group on core NATS was accepted")
	}
	e, err := driver.Parse("nats://127.0.0.1:4222/in")
	if err != nil {
		t.Fatal(err)
	}
	if err := brokers.Ensure(e); !errors.Is(err, driver.ErrNoAdmin) {
		t.Errorf("ensure on core NATS: %v, want ErrNoAdmin", err)
	}
	for _, bad := range []string{"jetstream://h:1/s?group=", "kafka://h:1/t?group=a.b", "redis://h:1/k?group=" + strings.Repeat("g", 65)} {
		if _, err := driver.Parse(bad); err == nil || !strings.Contains(err.Error(), "group") {
			t.Errorf("%s: %v, want the group refused", bad, err)
		}
	}
}
