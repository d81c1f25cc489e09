package zmqraw

import (
	"fmt"

	"time"

	"github.com/cloudprofiler-go/cp/internal/fdlimit"

	zmq "github.com/pebbe/zmq4"
)

// Descriptors a ZeroMQ object needs beyond what it holds when made: a
// context's reaper and I/O threads each take a mailbox and a poller, a
// socket its mailbox, its listener or connection, and room for the peers
// that connect to it. When libzmq cannot make a mailbox it aborts the whole
// process ("Too many open files"), so these are checked before, with
// margin.
const (
	ContextDescriptors = 16 // plus 2 per I/O thread
	SocketDescriptors  = 16
)

// NewContext creates a ZeroMQ context with ioThreads I/O threads. Create
// it before any thread is pinned: C threads inherit the creator's
// affinity mask.
func NewContext(ioThreads int) (*zmq.Context, error) {
	// libzmq aborts the process when it cannot make a descriptor for a
	// thread's mailbox: refuse first, while refusing is still possible.
	if err := fdlimit.Check(ContextDescriptors + 2*ioThreads); err != nil {
		return nil, fmt.Errorf("create ZeroMQ context: %w", err)
	}
	ctx, err := zmq.NewContext()
	if err != nil {
		return nil, fmt.Errorf("create ZeroMQ context: %w", err)
	}
	if err := ctx.SetIoThreads(ioThreads); err != nil {
		_ = ctx.Term()
		return nil, fmt.Errorf("set ZeroMQ I/O threads: %w", err)
	}
	return ctx, nil
}

// Open is one socket's set-up, the same for senders and receivers.
type Open struct {
	Kind zmq.Type // zmq.PUSH or zmq.PULL
	// HWM is the high-water mark in messages (send side for PUSH, receive
	// side for PULL).
	HWM int
	// Timeout bounds a blocking send or receive, so that the thread using
	// the socket notices a stop; Linger is how long Close may wait to
	// deliver what is queued.
	Timeout, Linger time.Duration
	Bind            bool // bind the endpoint instead of connecting to it
	// MaxMessage, when above 0, is the largest message the socket takes
	// (ZMQ_MAXMSGSIZE): libzmq drops a connection that sends a larger one
	// before it allocates the message.
	MaxMessage int64
	// Attach, if set, runs after the options and before the bind or
	// connect (a socket monitor, so that no event is missed).
	Attach func(*zmq.Socket) error
}

// Socket creates the socket, sets its options, and binds or connects it
// to endpoint; on any error the socket is closed and the error says which
// step failed, on which endpoint.
func (o Open) Socket(ctx *zmq.Context, endpoint string) (*zmq.Socket, error) {
	if err := fdlimit.Check(SocketDescriptors); err != nil {
		return nil, fmt.Errorf("create %v socket for %s: %w", o.Kind, endpoint, err)
	}
	sock, err := ctx.NewSocket(o.Kind)
	if err != nil {
		return nil, fmt.Errorf("create %v socket: %w", o.Kind, err)
	}
	hwm := sock.SetSndhwm
	timeout := sock.SetSndtimeo
	if o.Kind == zmq.PULL {
		hwm, timeout = sock.SetRcvhwm, sock.SetRcvtimeo
	}
	for _, opt := range []struct {
		what string
		err  error
	}{
		{"high-water mark", hwm(o.HWM)},
		{"timeout", timeout(o.Timeout)},
		{"linger", sock.SetLinger(o.Linger)},
		{"maximum message size", setMaxMessage(sock, o.MaxMessage)},
	} {
		if opt.err != nil {
			sock.Close()
			return nil, fmt.Errorf("set the %s on %s: %w", opt.what, endpoint, opt.err)
		}
	}
	if o.Attach != nil {
		if err := o.Attach(sock); err != nil {
			sock.Close()
			return nil, err
		}
	}
	if o.Bind {
		err = sock.Bind(endpoint)
	} else {
		err = sock.Connect(endpoint)
	}
	if err != nil {
		sock.Close()
		if o.Bind {
			return nil, fmt.Errorf("bind %s: %w (is another process bound to it?)", endpoint, err)
		}
		return nil, fmt.Errorf("connect to %s: %w", endpoint, err)
	}
	return sock, nil
}

func setMaxMessage(sock *zmq.Socket, n int64) error {
	if n <= 0 {
		return nil
	}
	return sock.SetMaxmsgsize(n)
}
