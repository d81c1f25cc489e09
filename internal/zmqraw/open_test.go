package zmqraw

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"
)

func TestEndpointsWithControlCharactersAreRefused(t *testing.T) {
	for _, tc := range []struct {
		ep   string
		want string
	}{
		{"tcp://127.0.0.1:5555", ""},
		{"tcp://127.0.0.1:5555\x00evil", "control character at byte 20"},
		{"tcp://host\n:5555", "control character"},
		{"tcp://host\x7f:1", "control character"},
		{"no-scheme", "not a ZeroMQ endpoint"},
	} {
		got := strings.Join(Sockets{Endpoints: []string{tc.ep}, MaxEndpoints: 1}.Problems(), "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.ep, got, tc.want)
		}
	}
}

// TestMaxMessageIsEnforcedByTheSocket: a message above the socket's limit
// never reaches the receiver (libzmq drops the connection before it builds
// the message), and the socket goes on taking others.
func TestMaxMessageIsEnforcedByTheSocket(t *testing.T) {
	ctx, err := NewContext(1)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Term()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := fmt.Sprintf("tcp://%s", ln.Addr())
	ln.Close()
	pull, err := Open{Kind: zmq.PULL, HWM: 10, Timeout: 300 * time.Millisecond, Bind: true, MaxMessage: 4096}.Socket(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	defer pull.Close()
	send := func(size int) {
		push, err := Open{Kind: zmq.PUSH, HWM: 10, Timeout: time.Second, Linger: time.Second}.Socket(ctx, ep)
		if err != nil {
			t.Fatal(err)
		}
		defer push.Close()
		if _, err := push.SendBytes(make([]byte, size), 0); err != nil {
			t.Fatal(err)
		}
	}
	send(1 << 20)
	if msg, err := pull.RecvBytes(0); err == nil {
		t.Fatalf("a %d-byte message above the 4096-byte limit was received", len(msg))
	}
	send(100)
	msg, err := pull.RecvBytes(0)
	if err != nil || len(msg) != 100 {
		t.Fatalf("a message within the limit: %d bytes, %v", len(msg), err)
	}
}
