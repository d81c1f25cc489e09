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

	"github.com/cloudprofiler-go/cp/objfactory"
)

func TestCeiling(t *testing.T) {
	if os.Getenv("CEIL") == "" {
		t.Skip()
	}
	batch, _ := strconv.Atoi(os.Getenv("BATCH"))
	for _, sz := range strings.Split(os.Getenv("CEIL"), ",") {
		size, _ := strconv.Atoi(sz)
		rctx, _ := zmq.NewContext()
		sctx, _ := zmq.NewContext()
		pull, _ := rctx.NewSocket(zmq.PULL)
		pull.SetRcvtimeo(100 * time.Millisecond)
		push, _ := sctx.NewSocket(zmq.PUSH)
		rp, _ := Wrap(pull, 1, 1<<20)
		sp, _ := Wrap(push, 0, 0)
		if batch > 0 {
			t.Log("in batch", rp.SetInt(101, batch), "out batch", sp.SetInt(102, batch))
		}
		pull.Bind("tcp://127.0.0.1:*")
		ep, _ := pull.GetLastEndpoint()
		push.Connect(ep)
		var got atomic.Uint64
		var stop atomic.Bool
		go func() {
			runtime.LockOSThread()
			b := &objfactory.Bucket{}
			for !stop.Load() {
				if err := rp.Recv(b); err == nil {
					got.Add(1)
				}
			}
		}()
		msg := make([]byte, size)
		n := 300_000_000 / (size + 200)
		runtime.LockOSThread()
		start := time.Now()
		for i := 0; i < n; i++ {
			sp.Send(msg, false)
		}
		for got.Load() < uint64(n) {
			time.Sleep(time.Millisecond)
		}
		el2 := time.Since(start)
		t.Logf("size %6d: %.3f M msg/s  %.0f MB/s", size, float64(n)/el2.Seconds()/1e6, float64(n)*float64(size)/el2.Seconds()/1e6)
		stop.Store(true)
		time.Sleep(200 * time.Millisecond)
		push.Close()
		pull.Close()
		sctx.Term()
		rctx.Term()
		runtime.UnlockOSThread()
	}
}
