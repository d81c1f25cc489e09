package driver_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudprofiler-go/cp/driver"

	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
)

func TestRedisRoundTrip(t *testing.T) {
	addr, _ := realserver.Redis(t)
	roundTrip(t, []string{"redis://" + addr + "/cp.plain", "redis://" + addr + "/cp.acked?ack=explicit&window=64"})
}

// TestRedisMaxLenIsLoss: a stream trimmed to maxlen while its consumer
// does not read loses the oldest entries: fewer arrive, none is an error.
func TestRedisMaxLenIsLoss(t *testing.T) {
	addr, _ := realserver.Redis(t)
	e, err := driver.Parse("redis://" + addr + "/cp.capped?maxlen=100")
	if err != nil || e.MaxLen != 100 {
		t.Fatalf("%+v %v", e, err)
	}
	c, p := open(t, "redis://"+addr+"/cp.capped?maxlen=100")
	entry := []byte("entry")
	publishAll(t, p, 2000, func(int) []byte { return entry })
	if lag, err := c.Lag(); err != nil || lag < 100 || lag >= 2000 {
		t.Errorf("lag %d (%v): want the ~100 kept entries", lag, err)
	}
	got := drain(t, c)
	if got < 100 || got >= 2000 {
		t.Errorf("read %d of 2000 entries from a stream capped near 100", got)
	}
}

func TestRedisServerGoneIsAFailure(t *testing.T) {
	addr, stop := realserver.Redis(t)
	e, _ := driver.Parse("redis://" + addr + "/cp.gone")
	p, err := brokers.NewProducer(e)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	stop()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		err := p.Publish([]byte("x"))
		if err != nil && !errors.Is(err, driver.ErrFull) {
			if !driver.IsFailure(err) {
				t.Errorf("%v is not marked as the broker's failure", err)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("publishing to a stopped Redis gave no error for 10 s")
}

// TestRedisEntryWithoutItsField: a job's entry without the payload's
// field is one malformed message (ErrNoPayload, not the broker's
// failure), and the entries after it are read; field= names a job's own
// field, for its producer too.
func TestRedisEntryWithoutItsField(t *testing.T) {
	addr, _ := realserver.Redis(t)
	url := "redis://" + addr + "/job.out?group=cp&field=payload"
	e, err := driver.Parse(url)
	if err != nil || e.Field != "payload" {
		t.Fatalf("%+v %v", e, err)
	}
	if d, _ := driver.Parse("redis://" + addr + "/x"); d.Field != driver.DefaultField {
		t.Errorf("the default field: %q", d.Field)
	}
	for _, bad := range []string{"nats://" + addr + "/x?field=p", "redis://" + addr + "/x?field=a%20b"} {
		if _, err := driver.Parse(bad); err == nil {
			t.Errorf("Parse(%s) accepted it", bad)
		}
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	for _, v := range [][]any{{"payload", "one"}, {"other", "no payload"}, {"payload", "two"}} {
		if err := c.XAdd(ctx, &redis.XAddArgs{Stream: "job.out", Values: v}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := brokers.NewConsumer(e)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	var missing int
	for len(got)+missing < 3 {
		m, err := cons.Next(time.Second)
		switch {
		case errors.Is(err, driver.ErrNoPayload):
			missing++
			if driver.IsFailure(err) || !strings.Contains(err.Error(), "has no field payload") {
				t.Errorf("the entry without its field: %v", err)
			}
		case err != nil:
			t.Fatalf("after %v: %v", got, err)
		default:
			got = append(got, string(m))
		}
	}
	if strings.Join(got, ",") != "one,two" || missing != 1 {
		t.Errorf("read %v, %d without the field", got, missing)
	}
	p, err := brokers.NewProducer(e)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Publish([]byte("three")); err != nil || p.Flush(5*time.Second) != nil {
		t.Fatal(err)
	}
	p.Close()
	if m, err := cons.Next(2 * time.Second); err != nil || string(m) != "three" {
		t.Errorf("the producer's entry under field=payload: %q %v", m, err)
	}
}
