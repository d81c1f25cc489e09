package driver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
)

func TestRemade(t *testing.T) {
	for _, tc := range []struct {
		name        string
		before, now driver.GroupState
		want        string // in the reason; "": not remade
	}{
		{"same input, more added", driver.GroupState{Lag: 5, Added: 100, Identity: "a"}, driver.GroupState{Lag: 0, Added: 150, Identity: "a"}, ""},
		{"nothing added", driver.GroupState{Added: 100}, driver.GroupState{Added: 100}, ""},
		{"identity changed", driver.GroupState{Added: 100, Identity: "a"}, driver.GroupState{Added: 200, Identity: "b"}, "it was a, it is b now"},
		{"count went down", driver.GroupState{Added: 100}, driver.GroupState{Added: 3}, "100 messages added, it has had 3 now"},
		{"count went down, same identity", driver.GroupState{Added: 100, Identity: "a"}, driver.GroupState{Added: 3, Identity: "a"}, "it has had 3 now"},
	} {
		got := driver.Remade(tc.before, tc.now)
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestAnInputMadeAgainIsSeen: a job's input deleted and made again (by
// the job reconnecting, say) between two reads of its group is seen by
// comparing the two, on every broker, even when the group's lag reads
// the same (0) both times; an input that only grew is the same input.
func TestAnInputMadeAgainIsSeen(t *testing.T) {
	nats := realserver.EmbeddedNATS(t)
	redisAddr, _ := realserver.Redis(t)
	kafkaAddr := fakeKafka(t)
	for _, tc := range []struct {
		ep       string
		delete   func(driver.Endpoint) error
		identity bool // the broker names an input's incarnation
	}{
		{"jetstream://" + nats + "/remade.in?group=job", deleteJetStream, true},
		{"redis://" + redisAddr + "/remade.in?group=job", deleteRedis, false},
		{"kafka://" + kafkaAddr + "/remade.in?group=job", deleteKafka, true},
	} {
		e, err := driver.Parse(tc.ep)
		if err != nil {
			t.Fatal(err)
		}
		if err := brokers.Ensure(e); err != nil {
			t.Fatalf("%s: ensure: %v", tc.ep, err)
		}
		publish := func(n int) {
			p, err := brokers.NewProducer(e)
			if err != nil {
				t.Fatalf("%s: %v", tc.ep, err)
			}
			defer p.Close()
			msg := []byte("tuple")
			publishAll(t, p, n, func(int) []byte { return msg })
		}
		publish(20)
		readGroup(t, tc.ep, e, 20)
		waitLag(t, tc.ep, e, 0)
		before, err := brokers.Group(e)
		if err != nil || before.Added != 20 {
			t.Fatalf("%s: %+v %v, want 20 added", tc.ep, before, err)
		}
		publish(5)
		grown, err := brokers.Group(e)
		if err != nil || grown.Added != 25 {
			t.Fatalf("%s: %+v %v, want 25 added", tc.ep, grown, err)
		}
		if why := driver.Remade(before, grown); why != "" {
			t.Errorf("%s: an input that grew is taken for a new one: %s", tc.ep, why)
		}
		readGroup(t, tc.ep, e, 5)
		waitLag(t, tc.ep, e, 0)
		before, _ = brokers.Group(e)
		if err := tc.delete(e); err != nil {
			t.Fatalf("%s: delete: %v", tc.ep, err)
		}
		// JetStream removes a deleted stream's store after answering: made
		// again at once, it can refuse with "error creating store for
		// stream" (a loaded CI host); the input is made again within 5 s
		err = brokers.Ensure(e)
		for deadline := time.Now().Add(5 * time.Second); err != nil && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			err = brokers.Ensure(e)
		}
		if err != nil {
			t.Fatalf("%s: ensure again: %v", tc.ep, err)
		}
		publish(1)
		now, err := brokers.Group(e)
		if err != nil {
			t.Fatalf("%s: %v", tc.ep, err)
		}
		if why := driver.Remade(before, now); why == "" {
			t.Errorf("%s: made again, not seen: before %+v, now %+v", tc.ep, before, now)
		}
		if tc.identity && (before.Identity == "" || now.Identity == before.Identity) {
			t.Errorf("%s: identity %q before, %q now; want two", tc.ep, before.Identity, now.Identity)
		}
	}
}

func deleteJetStream(e driver.Endpoint) error { return realserver.DeleteJetStream(e.Server, e.Subject) }

func deleteRedis(e driver.Endpoint) error {
	c := redis.NewClient(&redis.Options{Addr: e.Server})
	defer c.Close()
	return c.Del(context.Background(), e.Subject).Err()
}

func deleteKafka(e driver.Endpoint) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.Server))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rs, err := kadm.NewClient(cl).DeleteTopics(ctx, e.Subject)
	if err != nil {
		return err
	}
	return rs.Error()
}

// TestPublishingIntoADeletedStreamSaysWhy: a JetStream input deleted
// under the senders fails their flush with the reason, not just a count,
// so the trial's error says what happened to the input.
func TestPublishingIntoADeletedStreamSaysWhy(t *testing.T) {
	e, err := driver.Parse("jetstream://" + realserver.EmbeddedNATS(t) + "/gone.in")
	if err != nil {
		t.Fatal(err)
	}
	if err := brokers.Ensure(e); err != nil {
		t.Fatal(err)
	}
	p, err := brokers.NewProducer(e)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := deleteJetStream(e); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if err := p.Publish([]byte("tuple")); err != nil {
			t.Fatalf("publish %d: %v (the failure is the acknowledgement's)", i, err)
		}
	}
	err = p.Flush(5 * time.Second)
	if err == nil || !strings.Contains(err.Error(), "10 publishes to gone.in failed") || !strings.Contains(err.Error(), "no stream takes the subject") {
		t.Errorf("flush: %v; want 10 failed, no stream", err)
	}
	t.Log(err)
}
