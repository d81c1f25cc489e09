package zmqraw

/*
#cgo pkg-config: libzmq
#include <zmq.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <stdint.h>

// Buffers and the socket arrive as integers (uintptr_t), not pointers: cgo
// then skips its per-call pointer checks (~6% of an unbatched send+receive
// for the buffer, 2.6% of the sending thread for the socket). The Go side
// keeps each buffer alive across the call; Go's heap objects do not move,
// and the socket is libzmq's memory.
static int cp_send(uintptr_t s, uintptr_t buf, size_t len, int flags) {
	int rc = zmq_send((void *)s, (void *)buf, len, flags);
	return rc < 0 ? -zmq_errno() : rc;
}

// cp_recv closes the message previously held in *m (if any), receives the
// next one into *m without copying it, and returns its size times four,
// plus 2 if it had to wait for it (flags 0: the socket is asked without
// waiting first), plus 1 if more parts follow (a multipart message), or
// -errno. The data stays valid until the next cp_recv or cp_close on *m.
// Its pointers are integers too (the socket and the slots are C memory).
static long cp_recv(uintptr_t sock, uintptr_t msg, uintptr_t heldp, int flags) {
	void *s = (void *)sock;
	zmq_msg_t *m = (zmq_msg_t *)msg;
	int *held = (int *)heldp;
	if (*held) {
		zmq_msg_close(m);
		*held = 0;
	}
	if (zmq_msg_init(m) != 0) return -zmq_errno();
	long waited = 0;
	int rc = zmq_msg_recv(m, s, flags | ZMQ_DONTWAIT);
	if (rc < 0 && zmq_errno() == EAGAIN && !(flags & ZMQ_DONTWAIT)) {
		waited = 2;
		rc = zmq_msg_recv(m, s, flags);
	}
	if (rc < 0) {
		int e = zmq_errno();
		zmq_msg_close(m);
		return -e;
	}
	*held = 1;
	return (long)zmq_msg_size(m) * 4 + waited + (zmq_msg_more(m) ? 1 : 0);
}

// One message of a batch (BatchItem on the Go side: the same layout).
typedef struct {
	uintptr_t buf;
	uint64_t len;
	uint64_t due;   // TSC: send no earlier (0: at once)
	uint64_t ready; // out: TSC when its turn came, before any wait
	uint64_t at;    // out: TSC just before zmq_send
	int64_t err;    // out: errno of the send that stopped the batch
} cp_item;

#if defined(__x86_64__)
#include <x86intrin.h>
#define CP_STAMPS 1
static inline uint64_t cp_ticks(void) { return __rdtsc(); }
static inline void cp_relax(void) { _mm_pause(); }
#else
#define CP_STAMPS 0
static inline uint64_t cp_ticks(void) { return 0; }
static inline void cp_relax(void) {}
#endif

// cp_send_batch sends n messages in one call, so that the cgo transition
// (~40 ns) is paid once per batch instead of once per message. Each item
// is sent once the TSC reaches its due time (a busy-wait: the caller keeps
// a batch within a few microseconds), never waiting on the socket. It
// stops at the first failed send (EAGAIN at the high-water mark, or an
// error), which it leaves for the caller with its errno, and returns the
// number of items sent.
static long cp_send_batch(uintptr_t s, uintptr_t items, long n) {
	cp_item *it = (cp_item *)items;
	for (long i = 0; i < n; i++) {
		uint64_t now = cp_ticks();
		it[i].ready = now;
		while (CP_STAMPS && now < it[i].due) { // no TSC here: Due is ignored
			cp_relax();
			now = cp_ticks();
		}
		it[i].at = now;
		int rc;
		do {
			rc = zmq_send((void *)s, (void *)it[i].buf, it[i].len, ZMQ_DONTWAIT);
		} while (rc < 0 && zmq_errno() == EINTR);
		if (rc < 0) {
			it[i].err = zmq_errno();
			return i;
		}
	}
	return n;
}

static void *cp_data(zmq_msg_t *m) { return zmq_msg_data(m); }

static void cp_close(zmq_msg_t *m, int *held) {
	if (*held) {
		zmq_msg_close(m);
		*held = 0;
	}
}

static zmq_msg_t *cp_msgs_new(int n) { return (zmq_msg_t *)calloc(n, sizeof(zmq_msg_t)); }
static int *cp_held_new(int n) { return (int *)calloc(n, sizeof(int)); }
static zmq_msg_t *cp_msg_at(zmq_msg_t *m, int i) { return m + i; }
*/
import "C"

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"syscall"
	"unsafe"

	zmq "github.com/pebbe/zmq4"
)

// ErrAgain is returned by Send with dontWait when the socket is at its
// high-water mark (the message was not sent).
var ErrAgain = zmq.Errno(syscall.EAGAIN)

// errInterrupted is EINTR: a signal arrived during a blocking call.
var errInterrupted = zmq.Errno(syscall.EINTR)

// Errors of Recv.
var (
	// ErrTimeout: no message arrived within the socket's receive timeout.
	ErrTimeout = errors.New("no message within the receive timeout")
	// ErrOversized: the message was above the receive limit (skipped).
	ErrOversized = errors.New("message larger than the receive limit")
	// ErrMultipart: the message is a part of a multipart message (every
	// part is refused: the wire format is single-part).
	ErrMultipart = errors.New("part of a multipart message")
)

// Socket wraps a pebbe socket for hot-path I/O. Like the underlying libzmq
// socket it must be used by one goroutine at a time (locked to its thread).
type Socket struct {
	sock    *zmq.Socket
	handle  unsafe.Pointer
	msgs    *C.zmq_msg_t // C memory: one held message per bucket slot (receive side)
	held    *C.int       // whether each slot holds a message
	slots   int
	maxSize int
	// inMultipart: the last part received said more parts follow, so the
	// next one belongs to the same multipart message.
	inMultipart bool
	waited      bool // the last Recv found the socket empty and waited
}

// Waited reports whether the last successful Recv had to wait for its
// message (the socket was empty when asked).
func (s *Socket) Waited() bool { return s.waited }

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

// addr passes a Go buffer's address to C as an integer (see cp_send); the
// caller keeps the buffer alive with runtime.KeepAlive until C returns.
func addr(b []byte) C.uintptr_t { return C.uintptr_t(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// Wrap prepares s for sending, or for receiving into up to slots held
// messages (slots 0 for a send-only socket). Received messages above
// maxSize bytes are skipped and reported as ErrOversized.
func Wrap(s *zmq.Socket, slots, maxSize int) (*Socket, error) {
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
	if !batchLayoutOK {
		return nil, errors.New("zmqraw: BatchItem does not match the C layout (update internal/zmqraw)")
	}
	w := &Socket{sock: s, handle: h, slots: slots, maxSize: maxSize}
	if slots > 0 {
		w.msgs, w.held = C.cp_msgs_new(C.int(slots)), C.cp_held_new(C.int(slots))
		if w.msgs == nil || w.held == nil {
			w.Close()
			return nil, errors.New("allocate receive slots: out of memory")
		}
	}
	return w, nil
}

// Close releases every held message and the wrapper's C memory (not the
// pebbe socket). No bucket of this socket may be used afterwards.
func (s *Socket) Close() {
	if s.msgs != nil {
		for i := 0; i < s.slots; i++ {
			C.cp_close(C.cp_msg_at(s.msgs, C.int(i)), s.heldAt(i))
		}
		C.free(unsafe.Pointer(s.msgs))
		C.free(unsafe.Pointer(s.held))
		s.msgs, s.held = nil, nil
	}
}

func (s *Socket) heldAt(i int) *C.int {
	return (*C.int)(unsafe.Add(unsafe.Pointer(s.held), uintptr(i)*unsafe.Sizeof(C.int(0))))
}

// Send sends b as one message. With dontWait it returns ErrAgain instead of
// blocking at the high-water mark. It does not allocate.
func (s *Socket) Send(b []byte, dontWait bool) error {
	flags := C.int(0)
	if dontWait {
		flags = C.ZMQ_DONTWAIT
	}
	for {
		rc := C.cp_send(C.uintptr_t(uintptr(s.handle)), addr(b), C.size_t(len(b)), flags)
		runtime.KeepAlive(b)
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

// Recv receives one message into slot without copying it: the bytes
// returned are libzmq's memory, valid until the next Recv into the same
// slot (which releases them). It returns ErrTimeout when the socket's
// receive timeout expires, ErrOversized for a message above the limit and
// ErrMultipart for any part of a multipart message.
func (s *Socket) Recv(slot int) ([]byte, error) {
	if slot < 0 || slot >= s.slots {
		return nil, fmt.Errorf("slot %d outside the socket's %d slots", slot, s.slots)
	}
	m := C.cp_msg_at(s.msgs, C.int(slot))
	held := s.heldAt(slot)
	for {
		n := C.cp_recv(C.uintptr_t(uintptr(s.handle)), C.uintptr_t(uintptr(unsafe.Pointer(m))), C.uintptr_t(uintptr(unsafe.Pointer(held))), 0)
		if n < 0 {
			e := zmq.Errno(-n)
			switch e {
			case errInterrupted:
				continue
			case ErrAgain:
				return nil, ErrTimeout
			}
			return nil, fmt.Errorf("receive: %w", e)
		}
		more := n&1 == 1
		s.waited = n&2 == 2
		n >>= 2
		if more || s.inMultipart { // the format is single-part: every part is refused
			s.inMultipart = more
			return nil, ErrMultipart
		}
		if int(n) > s.maxSize {
			return nil, ErrOversized
		}
		if n == 0 {
			return []byte{}, nil
		}
		return unsafe.Slice((*byte)(C.cp_data(m)), int(n)), nil
	}
}

// BatchItem is one message of SendBatch. Buf is the address of a Go byte
// slice's first byte (an integer, so that cgo skips its pointer checks):
// the caller keeps the slice alive, and Go's heap objects do not move.
type BatchItem struct {
	Buf uintptr
	Len uint64
	// Due is the TSC reading before which the message is not sent (0: at
	// once). SendBatch busy-waits for it.
	Due uint64
	// Filled in by SendBatch for every item it reached: Ready, the TSC when
	// the item's turn came (before any wait for Due), and At, the TSC just
	// before its send; Err, for the item that stopped the batch, its error.
	Ready, At uint64
	Err       int64
}

// StampsTSC says whether SendBatch reads the TSC (x86-64). Elsewhere its
// Ready and At are 0 and Due is ignored: callers send one item per batch
// and stamp it themselves.
const StampsTSC = C.CP_STAMPS == 1

// batchLayoutOK: BatchItem must match C's cp_item field for field (Wrap
// refuses to work otherwise).
var batchLayoutOK = unsafe.Sizeof(BatchItem{}) == C.sizeof_cp_item &&
	unsafe.Offsetof(BatchItem{}.Err) == unsafe.Offsetof(C.cp_item{}.err)

// SendBatch sends items in order within one call into C, each once the
// TSC reaches its Due, without waiting on a full socket. It returns how
// many were sent; when that is fewer than len(items), err is the failure
// of items[sent] (ErrAgain at the high-water mark), which was not sent.
// It does not allocate.
func (s *Socket) SendBatch(items []BatchItem) (sent int, err error) {
	if len(items) == 0 {
		return 0, nil
	}
	n := int(C.cp_send_batch(C.uintptr_t(uintptr(s.handle)), C.uintptr_t(uintptr(unsafe.Pointer(unsafe.SliceData(items)))), C.long(len(items))))
	runtime.KeepAlive(items)
	if n == len(items) {
		return n, nil
	}
	return n, zmq.Errno(items[n].Err)
}
