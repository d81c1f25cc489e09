package driver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"
)

// redisServer starts Debian's redis-server on a free loopback port, with
// no persistence; stop kills it (the test's end does too).
func redisServer(t *testing.T) (addr string, stop func()) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CP_REQUIRE_ALL") != "" {
			t.Fatal("CP_REQUIRE_ALL is set but redis-server is not installed")
		}
		t.Skip("redis-server is not installed (apt-get install redis-server): the Redis driver's tests need it")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop = func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	t.Cleanup(stop)
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr, stop
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not listen on %s", addr)
		}
	}
}

func TestRedisRoundTrip(t *testing.T) {
	addr, _ := redisServer(t)
	roundTrip(t, []string{"redis://" + addr + "/cp.plain", "redis://" + addr + "/cp.acked?ack=explicit&window=64"})
}

// TestRedisMaxLenIsLoss: a stream trimmed to maxlen while its consumer
// does not read loses the oldest entries: fewer arrive, none is an error.
func TestRedisMaxLenIsLoss(t *testing.T) {
	addr, _ := redisServer(t)
	e, err := Parse("redis://" + addr + "/cp.capped?maxlen=100")
	if err != nil || e.MaxLen != 100 {
		t.Fatalf("%+v %v", e, err)
	}
	c, err := NewConsumer(e)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := NewProducer(e)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < 2000; i++ {
		for p.Publish([]byte("entry")) != nil {
			time.Sleep(time.Millisecond)
		}
	}
	if err := p.Flush(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if lag, err := c.Lag(); err != nil || lag < 100 || lag >= 2000 {
		t.Errorf("lag %d (%v): want the ~100 kept entries", lag, err)
	}
	got := 0
	for {
		_, err := c.Next(200 * time.Millisecond)
		if errors.Is(err, ErrTimeout) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got++
	}
	if got < 100 || got >= 2000 {
		t.Errorf("read %d of 2000 entries from a stream capped near 100", got)
	}
}

func TestRedisServerGoneIsAFailure(t *testing.T) {
	addr, stop := redisServer(t)
	e, _ := Parse("redis://" + addr + "/cp.gone")
	p, err := NewProducer(e)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	stop()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		err := p.Publish([]byte("x"))
		if err != nil && !errors.Is(err, ErrFull) {
			if !IsFailure(err) {
				t.Errorf("%v is not marked as the broker's failure", err)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("publishing to a stopped Redis gave no error for 10 s")
}
