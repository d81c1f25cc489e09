package driver_test

import (
	"errors"
	"testing"
	"time"

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
