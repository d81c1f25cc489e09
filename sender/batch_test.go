package sender_test

import (
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"

	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sender"
	"github.com/cloudprofiler-go/cp/sender/tally"
	"github.com/cloudprofiler-go/cp/trialcfg"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/wire"
)

// received is what a raw PULL socket saw of one stream: every data
// bucket's sequence number, first tuple id and intended time, and the end
// marker's counts.
type received struct {
	seqs, ids []uint64
	intended  []int64
	msgs      [][]byte
	end       wire.End
}

// sendInto runs a sender with cfg into a raw PULL socket (which waits
// pause before reading) and returns what arrived and the sender's result.
func sendInto(t *testing.T, cfg sender.Config, pause time.Duration) (received, *tally.Result) {
	t.Helper()
	ctx, err := zmq.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Term()
	pull, err := ctx.NewSocket(zmq.PULL)
	if err != nil {
		t.Fatal(err)
	}
	defer pull.Close()
	_ = pull.SetLinger(0)
	_ = pull.SetRcvhwm(100)
	_ = pull.SetRcvtimeo(5 * time.Second)
	if err := pull.Bind("tcp://127.0.0.1:*"); err != nil {
		t.Fatal(err)
	}
	ep, _ := pull.GetLastEndpoint()
	cfg.Endpoints = []string{ep}
	if cfg.Clock == nil {
		clock, err := tsc.NewClock(20 * time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Clock = clock
	}
	s, err := sender.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	type outcome struct {
		res *tally.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() { r, err := s.Run(); done <- outcome{r, err} }()
	time.Sleep(pause)
	var got received
	for {
		msg, err := pull.RecvBytes(0)
		if err != nil {
			t.Fatalf("receive after %d buckets: %v", len(got.seqs), err)
		}
		h, err := wire.ParseHeader(msg)
		if err != nil {
			t.Fatal(err)
		}
		if h.Kind == wire.KindEnd {
			if got.end, err = wire.ParseEnd(msg); err != nil {
				t.Fatal(err)
			}
			break
		}
		_, off, err := wire.ReadArrayLen(msg, wire.HeaderSize)
		if err != nil {
			t.Fatal(err)
		}
		id, off, err := wire.ReadUint(msg, off)
		if err != nil {
			t.Fatal(err)
		}
		at, _, err := wire.ReadInt(msg, off)
		if err != nil {
			t.Fatal(err)
		}
		got.seqs, got.ids, got.intended = append(got.seqs, h.Seq), append(got.ids, id), append(got.intended, at)
		got.msgs = append(got.msgs, msg)
	}
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	return got, o.res
}

func config(t *testing.T, rate float64, count uint64, batch int) sender.Config {
	sc, err := scenarios.Load("synthetic-100")
	if err != nil {
		t.Fatal(err)
	}
	return sender.Config{
		Sender:        trialcfg.Sender{Threads: 1, BucketSize: 1, Overflow: trialcfg.Block, Idle: trialcfg.Sleep},
		Rate:          rate,
		Count:         count,
		Scenario:      sc,
		HWM:           1000,
		IOThreads:     1,
		LateThreshold: 10 * time.Microsecond,
		SkipRateCheck: true,
		EndTimeout:    5 * time.Second,
		SendBatch:     batch,
	}
}

// Batches change how buckets reach libzmq, not what is sent: the same
// contiguous sequence numbers and ids, and, paced, every bucket stamped
// with its own slot of the schedule (1 µs apart at 1 M/s, so that a batch
// of up to 4 µs holds several).
func TestBatchesKeepTheStreamAndTheSchedule(t *testing.T) {
	for _, batch := range []int{1, 16} {
		const n = 20000
		got, res := sendInto(t, config(t, 1e6, n, batch), 0)
		want := batch
		if !tsc.Native {
			want = 1
		}
		if res.SendBatch != want {
			t.Errorf("batch %d: result says send_batch %d", batch, res.SendBatch)
		}
		if len(got.seqs) != n || got.end.Buckets != n {
			t.Fatalf("batch %d: %d buckets arrived, end marker says %d, want %d", batch, len(got.seqs), got.end.Buckets, n)
		}
		for i := range got.seqs {
			if got.seqs[i] != uint64(i) || got.ids[i] != wire.TupleID(0, uint64(i)) {
				t.Fatalf("batch %d: bucket %d has seq %d and id %#x", batch, i, got.seqs[i], got.ids[i])
			}
			// The schedule's slots, rounded to whole ticks and then to ns.
			if d := got.intended[i] - got.intended[0] - int64(i)*1000; d < -2 || d > 2 {
				t.Fatalf("batch %d: bucket %d intended %d ns after the first, want %d", batch, i, got.intended[i]-got.intended[0], i*1000)
			}
		}
	}
}

// A full socket in drop mode drops the bucket that met it, wherever it was
// in its batch, and the buckets after it keep contiguous numbers (a
// dropped bucket uses none).
func TestBatchesDropInTheMiddleOfABatch(t *testing.T) {
	cfg := config(t, 0, 300000, 16)
	cfg.Overflow, cfg.HWM = trialcfg.Drop, 10
	got, res := sendInto(t, cfg, 300*time.Millisecond)
	if res.DroppedBkts == 0 {
		t.Fatal("nothing was dropped: the test did not fill the socket")
	}
	if uint64(len(got.seqs))+res.DroppedBkts != 300000 {
		t.Fatalf("%d arrived + %d dropped, want 300000", len(got.seqs), res.DroppedBkts)
	}
	for i := range got.seqs {
		if got.seqs[i] != uint64(i) || got.ids[i] != wire.TupleID(0, uint64(i)) {
			t.Fatalf("bucket %d has seq %d and id %#x", i, got.seqs[i], got.ids[i])
		}
	}
	for i := 1; i < len(got.intended); i++ {
		if got.intended[i] < got.intended[i-1] {
			t.Fatalf("bucket %d stamped %d ns before the one before it", i, got.intended[i-1]-got.intended[i])
		}
	}
}

// Injected send work (a sender slower than its network) runs once per
// bucket, in the sending state, with one bucket per call into C: 2000
// buckets at 50 µs take at least 100 ms, nearly all of it sending, and
// the stream is unchanged.
func TestSendWorkMakesASlowSender(t *testing.T) {
	cfg := config(t, 0, 2000, 0)
	cfg.SendWork, cfg.StagePeriod = 50*time.Microsecond, 10*time.Millisecond
	got, res := sendInto(t, cfg, 0)
	if len(got.seqs) != 2000 || res.SendBatch != 1 || res.Injected.SendWork != cfg.SendWork {
		t.Fatalf("%d buckets, send_batch %d, injected %+v", len(got.seqs), res.SendBatch, res.Injected)
	}
	if len(res.Stages) != 1 {
		t.Fatalf("stages %+v", res.Stages)
	}
	sending := res.Stages[0].Seconds["sending"]
	if sending < 0.1 || sending < 0.8*(res.Stages[0].Seconds["blocked"]+sending+res.Stages[0].Seconds["pacing"]) {
		t.Fatalf("sending %.3f s of %+v: want at least 2000 × 50 µs, nearly all of the run", sending, res.Stages[0].Seconds)
	}
	for i := range got.seqs {
		if got.seqs[i] != uint64(i) {
			t.Fatalf("bucket %d has seq %d", i, got.seqs[i])
		}
	}
}
