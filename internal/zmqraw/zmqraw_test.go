package zmqraw

import (
	"bytes"
	"testing"

	zmq "github.com/pebbe/zmq4"

	"github.com/cloudprofiler-go/cp/objfactory"
)

func pair(t testing.TB) (*Socket, *Socket) {
	t.Helper()
	ctx, err := zmq.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	pull, _ := ctx.NewSocket(zmq.PULL)
	push, _ := ctx.NewSocket(zmq.PUSH)
	if err := pull.Bind("inproc://t"); err != nil {
		t.Fatal(err)
	}
	_ = pull.SetRcvtimeo(50e6)
	if err := push.Connect("inproc://t"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { push.SetLinger(0); push.Close(); pull.Close(); ctx.Term() })
	rp, err := Wrap(push, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	rq, err := Wrap(pull, 2, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return rp, rq
}

func TestSendRecvSizes(t *testing.T) {
	push, pull := pair(t)
	b := &objfactory.Bucket{}
	for _, tc := range []struct {
		size int
		want error
	}{{0, nil}, {5, nil}, {16, nil}, {17, nil}, {999, nil}, {1001, objfactory.ErrOversized}} {
		msg := bytes.Repeat([]byte{byte(tc.size)}, tc.size)
		if err := push.Send(msg, false); err != nil {
			t.Fatal(err)
		}
		b.Slot = tc.size % 2
		err := pull.Recv(b)
		if err != tc.want {
			t.Fatalf("size %d: err %v want %v", tc.size, err, tc.want)
		}
		if err == nil && !bytes.Equal(b.Msg, msg) {
			t.Fatalf("size %d: got %d bytes back", tc.size, len(b.Msg))
		}
	}
	b.Slot = 5
	if err := pull.Recv(b); err == nil {
		t.Fatal("bucket slot beyond the socket's slots accepted")
	}
	b.Slot = 0
	if err := pull.Recv(b); err != objfactory.ErrTimeout {
		t.Fatalf("empty socket: err %v, want timeout", err)
	}
}

func TestSendDontWaitReportsAgain(t *testing.T) {
	ctx, _ := zmq.NewContext()
	defer ctx.Term()
	push, _ := ctx.NewSocket(zmq.PUSH) // no peer: nothing can be queued
	defer push.Close()
	_ = push.SetLinger(0)
	r, err := Wrap(push, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Send([]byte("x"), true); err != ErrAgain {
		t.Fatalf("err %v, want EAGAIN", err)
	}
}

func TestSendAndReceiveDoNotAllocate(t *testing.T) {
	push, pull := pair(t)
	msg := make([]byte, 100)
	b := &objfactory.Bucket{}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := push.Send(msg, false); err != nil {
			t.Fatal(err)
		}
		if err := pull.Recv(b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per send+receive, want 0", allocs)
	}
	if !bytes.Equal(b.Msg, msg) {
		t.Fatal("received message differs")
	}
}
