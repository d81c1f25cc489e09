package sender

import (
	"fmt"
	"runtime"
	"sort"
	"sync/atomic"
	"time"

	zmq "github.com/pebbe/zmq4"
	"golang.org/x/sys/unix"

	"github.com/cloudprofiler-go/cp/internal/osthread"
	"github.com/cloudprofiler-go/cp/internal/zmqraw"
)

// sendCostBytes bounds each batch of the send-cost measurement.
const sendCostBytes = 16 << 20

// RateError is a rate refused because its per-thread budget is below the
// measured cost of one send: the sender could not keep the schedule.
type RateError struct {
	Rate       float64
	Budget     time.Duration // per thread and send
	SendCost   time.Duration
	BucketSize int
	Threads    int
	Most       float64 // about the highest rate these threads can send
}

func (e *RateError) Error() string {
	return fmt.Sprintf("rate %.0f tuples/s needs a send every %v per thread, but one send of a %d-tuple bucket costs %v here: "+
		"the most %d thread(s) can do is about %.0f tuples/s; use more threads or larger buckets (--bucket), or --no-rate-check to try anyway",
		e.Rate, e.Budget, e.BucketSize, e.SendCost, e.Threads, e.Most)
}

// measureSendCost times zmq_send of msg into a loopback PUSH socket that a
// goroutine drains (so the queue's memory is recycled, as in a real run)
// and returns the median per-send CPU cost of five batches: the floor below
// which a slot budget cannot be met.
//
// The batches are bounded in bytes (sendCostBytes each), not only in
// messages, so a 64 MiB bucket pushes a few hundred MiB through loopback,
// not 75 GiB; cancel ends the measurement between sends.
func measureSendCost(ctx *zmq.Context, msg []byte, cancel <-chan struct{}) (time.Duration, error) {
	pull, err := ctx.NewSocket(zmq.PULL)
	if err != nil {
		return 0, fmt.Errorf("measure send cost: %w", err)
	}
	defer pull.Close()
	_ = pull.SetLinger(0)
	_ = pull.SetRcvtimeo(50 * time.Millisecond)
	if err := pull.Bind("tcp://127.0.0.1:*"); err != nil {
		return 0, fmt.Errorf("measure send cost: bind loopback: %w", err)
	}
	ep, _ := pull.GetLastEndpoint()
	push, err := ctx.NewSocket(zmq.PUSH)
	if err != nil {
		return 0, fmt.Errorf("measure send cost: %w", err)
	}
	defer push.Close()
	_ = push.SetLinger(0)
	if err := push.Connect(ep); err != nil {
		return 0, fmt.Errorf("measure send cost: connect %s: %w", ep, err)
	}
	in, err := zmqraw.Wrap(pull, 1, len(msg))
	if err != nil {
		return 0, err
	}
	out, err := zmqraw.Wrap(push, 0, 0)
	if err != nil {
		in.Close()
		return 0, err
	}
	defer out.Close()
	var stop atomic.Bool
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		defer in.Close()
		osthread.LockWithTightTimers()
		for !stop.Load() {
			_, _ = in.Recv(0)
		}
	}()
	defer func() { stop.Store(true); <-drained }()
	// CPU time of this thread, not wall time: on a small machine the drain
	// and the I/O threads take the CPU away, and that is contention (which
	// the run reports as lateness), not the cost of a send.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n := max(1, min(sendCostBytes/(len(msg)+64), 20000))
	costs := make([]time.Duration, 0, 5)
	for batch := 0; batch < 6; batch++ {
		start, err := threadCPUTime()
		if err != nil {
			return 0, err
		}
		for i := 0; i < n; i++ {
			if err := out.Send(msg, false); err != nil && err != zmqraw.ErrAgain {
				return 0, fmt.Errorf("measure send cost: %w", err)
			}
			if i&63 == 63 || len(msg) > 1<<20 {
				select {
				case <-cancel:
					return 0, ErrCancelled
				default:
				}
			}
		}
		end, err := threadCPUTime()
		if err != nil {
			return 0, err
		}
		if batch > 0 { // the first batch warms up the connection
			costs = append(costs, (end-start)/time.Duration(n))
		}
	}
	sort.Slice(costs, func(i, j int) bool { return costs[i] < costs[j] })
	return costs[len(costs)/2], nil
}

func threadCPUTime() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, fmt.Errorf("read thread CPU time: %w", err)
	}
	return time.Duration(ts.Nano()), nil
}
