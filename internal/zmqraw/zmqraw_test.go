package zmqraw

import (
	"bytes"
	"testing"

	zmq "github.com/pebbe/zmq4"
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
	for _, tc := range []struct {
		size int
		want error
	}{{0, nil}, {5, nil}, {16, nil}, {17, nil}, {999, nil}, {1001, ErrOversized}} {
		msg := bytes.Repeat([]byte{byte(tc.size)}, tc.size)
		if err := push.Send(msg, false); err != nil {
			t.Fatal(err)
		}
		got, err := pull.Recv(tc.size % 2)
		if err != tc.want {
			t.Fatalf("size %d: err %v want %v", tc.size, err, tc.want)
		}
		if err == nil && !bytes.Equal(got, msg) {
			t.Fatalf("size %d: got %d bytes back", tc.size, len(got))
		}
	}
	if _, err := pull.Recv(5); err == nil {
		t.Fatal("slot beyond the socket's slots accepted")
	}
	if _, err := pull.Recv(0); err != ErrTimeout {
		t.Fatalf("empty socket: err %v, want timeout", err)
	}
}

// peerless returns a PUSH socket without a peer: nothing can be queued.
func peerless(t *testing.T) *Socket {
	t.Helper()
	ctx, err := zmq.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	push, err := ctx.NewSocket(zmq.PUSH)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { push.SetLinger(0); push.Close(); ctx.Term() })
	r, err := Wrap(push, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSendDontWaitReportsAgain(t *testing.T) {
	r := peerless(t)
	if err := r.Send([]byte("x"), true); err != ErrAgain {
		t.Fatalf("err %v, want EAGAIN", err)
	}
}

func TestSendAndReceiveDoNotAllocate(t *testing.T) {
	push, pull := pair(t)
	msg := make([]byte, 100)
	var got []byte
	allocs := testing.AllocsPerRun(1000, func() {
		if err := push.Send(msg, false); err != nil {
			t.Fatal(err)
		}
		var err error
		if got, err = pull.Recv(0); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per send+receive, want 0", allocs)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("received message differs")
	}
}
