// Package zmqraw is the hot-path I/O on ZeroMQ sockets created and
// configured with github.com/pebbe/zmq4: a send that is one cgo call with no
// allocation, and a receive into a caller-owned, reused buffer. pebbe's
// RecvBytes costs four cgo calls and an allocation per message (~400-500 ns
// here), too much at millions of messages per second; everything that is not
// per-message (context, options, bind, connect, close) stays with pebbe.
package zmqraw

/*
#cgo pkg-config: libzmq
#include <zmq.h>
#include <stdlib.h>
#include <string.h>

static int cp_send(void *s, void *buf, size_t len, int flags) {
	int rc = zmq_send(s, buf, len, flags);
	return rc < 0 ? -zmq_errno() : rc;
}

// cp_recv receives one message into *m. If it fits in buf it is copied and
// released; otherwise it stays in *m for cp_take or cp_drop. Returns the
// message size or -errno.
static long cp_recv(void *s, zmq_msg_t *m, void *buf, size_t cap, int flags) {
	if (zmq_msg_init(m) != 0) return -zmq_errno();
	if (zmq_msg_recv(m, s, flags) < 0) {
		int e = zmq_errno();
		zmq_msg_close(m);
		return -e;
	}
	size_t n = zmq_msg_size(m);
	if (n <= cap) {
		if (n > 0) memcpy(buf, zmq_msg_data(m), n);
		zmq_msg_close(m);
	}
	return (long)n;
}

static void cp_take(zmq_msg_t *m, void *buf) {
	memcpy(buf, zmq_msg_data(m), zmq_msg_size(m));
	zmq_msg_close(m);
}

static void cp_drop(zmq_msg_t *m) { zmq_msg_close(m); }

static zmq_msg_t *cp_msg_new(void) { return (zmq_msg_t *)malloc(sizeof(zmq_msg_t)); }
*/
import "C"

import (
	"errors"
	"fmt"
	"reflect"
	"syscall"
	"unsafe"

	zmq "github.com/pebbe/zmq4"

	"github.com/cloudprofiler-go/cp/objfactory"
)

// ErrAgain is returned by Send with dontWait when the socket is at its
// high-water mark (the message was not sent).
var ErrAgain = zmq.Errno(syscall.EAGAIN)

// errInterrupted is EINTR: a signal arrived during a blocking call.
var errInterrupted = zmq.Errno(syscall.EINTR)

// Socket wraps a pebbe socket for hot-path I/O. Like the underlying libzmq
// socket it must be used by one goroutine at a time (locked to its thread).
type Socket struct {
	sock    *zmq.Socket
	handle  unsafe.Pointer
	msg     *C.zmq_msg_t // C memory: the receive path keeps a large message here between calls
	maxSize int
}

// handleOf returns libzmq's socket pointer held by a pebbe socket. pebbe does
// not export it, so the field is read through its known layout, which is
// checked first: if a future pebbe version changes the struct, this fails
// cleanly instead of handing libzmq a wrong pointer.
func handleOf(s *zmq.Socket) (unsafe.Pointer, error) {
	t := reflect.TypeOf(*s)
	if t.NumField() == 0 || t.Field(0).Name != "soc" || t.Field(0).Type != reflect.TypeOf(unsafe.Pointer(nil)) || t.Field(0).Offset != 0 {
		return nil, errors.New("pebbe/zmq4 Socket layout changed: cannot reach the libzmq socket (update internal/zmqraw)")
	}
	h := *(*unsafe.Pointer)(unsafe.Pointer(s))
	if h == nil {
		return nil, errors.New("socket is closed")
	}
	return h, nil
}

// Wrap prepares s for hot-path I/O; received messages above maxSize bytes
// are discarded and reported as objfactory.ErrOversized.
func Wrap(s *zmq.Socket, maxSize int) (*Socket, error) {
	h, err := handleOf(s)
	if err != nil {
		return nil, err
	}
	// Cross-check the pointer with libzmq itself before trusting it.
	typ, err := s.GetType()
	if err != nil {
		return nil, fmt.Errorf("query socket type: %w", err)
	}
	var raw C.int
	size := C.size_t(unsafe.Sizeof(raw))
	if rc := C.zmq_getsockopt(h, C.ZMQ_TYPE, unsafe.Pointer(&raw), &size); rc != 0 || zmq.Type(raw) != typ {
		return nil, errors.New("libzmq does not recognise the socket handle taken from pebbe/zmq4")
	}
	return &Socket{sock: s, handle: h, msg: C.cp_msg_new(), maxSize: maxSize}, nil
}

// Close releases the wrapper's C memory (not the pebbe socket).
func (s *Socket) Close() {
	if s.msg != nil {
		C.free(unsafe.Pointer(s.msg))
		s.msg = nil
	}
}

// Send sends b as one message. With dontWait it returns ErrAgain instead of
// blocking at the high-water mark. It does not allocate.
func (s *Socket) Send(b []byte, dontWait bool) error {
	flags := C.int(0)
	if dontWait {
		flags = C.ZMQ_DONTWAIT
	}
	for {
		rc := C.cp_send(s.handle, unsafe.Pointer(unsafe.SliceData(b)), C.size_t(len(b)), flags)
		if rc >= 0 {
			return nil
		}
		e := zmq.Errno(-rc)
		if e == errInterrupted {
			continue
		}
		if e == ErrAgain {
			return ErrAgain
		}
		return e
	}
}

// RecvInto receives one message into buf, growing it (up to the size limit)
// when the message is larger, and returns the message. It returns
// objfactory.ErrTimeout when the socket's receive timeout expires.
func (s *Socket) RecvInto(buf []byte) ([]byte, error) {
	buf = buf[:cap(buf)]
	for {
		n := C.cp_recv(s.handle, s.msg, unsafe.Pointer(unsafe.SliceData(buf)), C.size_t(len(buf)), 0)
		if n < 0 {
			e := zmq.Errno(-n)
			switch e {
			case errInterrupted:
				continue
			case ErrAgain:
				return nil, objfactory.ErrTimeout
			}
			return nil, fmt.Errorf("receive: %w", e)
		}
		size := int(n)
		if size <= len(buf) {
			return buf[:size], nil
		}
		if size > s.maxSize {
			C.cp_drop(s.msg)
			return nil, objfactory.ErrOversized
		}
		buf = make([]byte, size, size+size/4)
		C.cp_take(s.msg, unsafe.Pointer(unsafe.SliceData(buf)))
		return buf, nil
	}
}
