package zmqraw

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"
)

// TestRawCeiling measures this package's own path: one thread sending
// unpaced over tcp loopback to a thread that receives and discards, both
// through cgo (one call per message, no Go-side work). It is not the
// yardstick (the plain C sender and receiver of internal/testkit/cref are: make
// bench prints dgsend ÷ C); next to the C figure it shows what the cgo
// path costs. CP_RAW_CEILING lists message sizes, e.g. "124,10024".
func TestRawCeiling(t *testing.T) {
	sizes := os.Getenv("CP_RAW_CEILING")
	if sizes == "" {
		t.Skip("set CP_RAW_CEILING=124,10024 (make bench) to measure the cgo path")
	}
	for _, sz := range strings.Split(sizes, ",") {
		size, err := strconv.Atoi(sz)
		if err != nil || size < 1 {
			t.Fatalf("CP_RAW_CEILING: %q is not a message size", sz)
		}
		t.Logf("CGO PATH size %6d: %.3f M msg/s (Go and cgo on both ends, same process)", size, rawCeiling(t, size)/1e6)
	}
}

// rawCeiling returns messages per second of one unpaced sender thread to
// one discarding receiver thread, each with its own context.
func rawCeiling(t *testing.T, size int) float64 {
	rctx, err := zmq.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	defer rctx.Term()
	sctx, err := zmq.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	defer sctx.Term()
	pull, _ := rctx.NewSocket(zmq.PULL)
	defer pull.Close()
	push, _ := sctx.NewSocket(zmq.PUSH)
	defer push.Close()
	if err := pull.SetRcvtimeo(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := pull.Bind("tcp://127.0.0.1:*"); err != nil {
		t.Fatal(err)
	}
	ep, _ := pull.GetLastEndpoint()
	if err := push.Connect(ep); err != nil {
		t.Fatal(err)
	}
	in, err := Wrap(pull, 1, 1<<24)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Wrap(push, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 300_000_000 / (size + 200) // ~1-2 s of traffic
	var got atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		for got.Load() < uint64(n) {
			if _, err := in.Recv(0); err == nil {
				got.Add(1)
			}
		}
		in.Close()
	}()
	msg := make([]byte, size)
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := out.Send(msg, false); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	return float64(n) / time.Since(start).Seconds()
}
