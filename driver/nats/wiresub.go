package nats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/osthread"
)

// The core NATS consumer speaks the client protocol itself
// (https://docs.nats.io/reference/reference-protocols/nats-protocol)
// instead of through nats.go: the client allocates a message and its
// payload copy for every MSG and hands each to the lane through a channel
// of its own, which at a million 124-byte messages a second was more CPU
// than the server's own subscriber takes for the whole message, on a host
// whose CPUs the server and the senders share (BENCHMARKS.md,
// twenty-eighth session). Here one goroutine reads the socket into large
// chunks, cuts the messages out of them in place (a payload is a slice of
// its chunk, never reused, so the caller keeps it), and hands the lane a
// batch of them per read. It keeps nats.go's semantics: the socket is
// always drained, and beyond CoreQueue messages or CoreQueueBytes held for
// the lane the client drops (a slow consumer's loss, counted). A server
// that requires TLS gets nats.go (errNeedsTLS).

// Bounds of what the server may send.
const (
	wireChunk   = 256 << 10 // one read buffer; a larger message gets a chunk of its size
	wireMinRead = 16 << 10  // below this much room, the next read starts a new chunk
	maxWireLine = 64 << 10  // a control line (INFO can carry a cluster's URLs)
	maxWireMsg  = 64 << 20  // the largest max_payload a NATS server accepts
)

// wireBatches bounds the batches held for the lane: a lane behind by this
// many reads is behind by far more than a queue's worth of messages.
const wireBatches = 8192

var errNeedsTLS = errors.New("the server requires TLS")

// wireBatch is the messages of one read, for the lane in order.
type wireBatch struct {
	msgs  [][]byte
	sizes []int32 // each message's headers and payload: what it holds of its chunk
	bytes int64
}

// wireConsumer is a core NATS subscription on a connection of its own.
type wireConsumer struct {
	conn    net.Conn // after the handshake, only the reader writes (its PONGs)
	subject string

	// reader → lane
	batches chan *wireBatch
	free    chan *wireBatch
	held    atomic.Int64 // messages read and not yet handed over (whole batches)
	heldB   atomic.Int64 // their bytes
	dropped atomic.Uint64
	pongs   chan struct{}
	done    chan struct{} // the reader ended; err says why
	err     error         // written before done is closed
	closing atomic.Bool

	// lane only
	cur *wireBatch
	i   int

	// reader only
	buf        []byte
	start, end int // unparsed bytes: buf[start:end]
	maxPayload int
}

// serverInfo is what the consumer reads of the server's INFO.
type serverInfo struct {
	MaxPayload  int  `json:"max_payload"`
	TLSRequired bool `json:"tls_required"`
}

// dialWire subscribes to e.Subject with the wire protocol: INFO, CONNECT,
// SUB, and a PING whose PONG says the subscription is in place before any
// sender starts.
func dialWire(e driver.Endpoint) (*wireConsumer, error) {
	if e.Subject == "" || strings.ContainsAny(e.Subject, " \t\r\n") { // driver.Parse refuses them too
		return nil, fmt.Errorf("subscribe: subject %q is not one NATS token list", e.Subject)
	}
	conn, maxPayload, err := hello(e)
	if err != nil {
		return nil, err
	}
	c := &wireConsumer{conn: conn, subject: e.Subject, buf: make([]byte, wireChunk), maxPayload: maxPayload,
		batches: make(chan *wireBatch, wireBatches), free: make(chan *wireBatch, 64),
		pongs: make(chan struct{}, 2), done: make(chan struct{})}
	go c.read()
	timeout := time.NewTimer(driver.ConnectTimeout)
	defer timeout.Stop()
	for range 2 { // CONNECT's PING, then SUB's
		select { // a PONG first: an error may follow it at once
		case <-c.pongs:
			continue
		default:
		}
		select {
		case <-c.pongs:
		case <-c.done:
			conn.Close()
			return nil, fmt.Errorf("subscribe to %s on %s: %w", e.Subject, e.Server, c.err)
		case <-timeout.C:
			c.Close()
			return nil, fmt.Errorf("subscribe to %s on %s: no answer within %v", e.Subject, e.Server, driver.ConnectTimeout)
		}
	}
	return c, nil
}

// hello connects to e's server, reads its INFO and sends CONNECT, a PING,
// the SUB and a PING: what the server answers is the reader's to read.
// The server sends nothing after its INFO before it has the CONNECT, so
// nothing is read past it.
func hello(e driver.Endpoint) (net.Conn, int, error) {
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(e.Server, "nats://"), driver.ConnectTimeout)
	if err != nil {
		return nil, 0, fmt.Errorf("connect to %s (%s): %w", e.Server, e.Driver, err)
	}
	_ = conn.SetDeadline(time.Now().Add(driver.ConnectTimeout))
	maxPayload, err := greet(conn, e)
	_ = conn.SetDeadline(time.Time{})
	if err != nil {
		conn.Close()
		return nil, 0, err
	}
	return conn, maxPayload, nil
}

func greet(conn net.Conn, e driver.Endpoint) (int, error) {
	line, err := infoLine(conn)
	if err != nil {
		return 0, fmt.Errorf("connect to %s: %w", e.Server, err)
	}
	var info serverInfo
	js, ok := bytes.CutPrefix(line, []byte("INFO "))
	if !ok || json.Unmarshal(js, &info) != nil {
		return 0, fmt.Errorf("connect to %s: not a NATS server (it said %.40q)", e.Server, line)
	}
	if info.TLSRequired {
		return 0, errNeedsTLS
	}
	maxPayload := maxWireMsg
	if info.MaxPayload > 0 && info.MaxPayload < maxWireMsg {
		maxPayload = info.MaxPayload
	}
	opts := map[string]any{"verbose": false, "pedantic": false, "name": "cp-receiver", "lang": "go",
		"version": "cp", "protocol": 1, "headers": true, "no_responders": false}
	if e.Auth.User != "" || e.Auth.Password != "" {
		opts["user"], opts["pass"] = e.Auth.User, e.Auth.Password
	}
	connect, _ := json.Marshal(opts)
	if _, err := conn.Write(fmt.Appendf(nil, "CONNECT %s\r\nPING\r\nSUB %s 1\r\nPING\r\n", connect, e.Subject)); err != nil {
		return 0, fmt.Errorf("connect to %s: %w", e.Server, err)
	}
	return maxPayload, nil
}

// infoLine reads the server's first line, its INFO (nothing follows it
// before the CONNECT).
func infoLine(conn net.Conn) ([]byte, error) {
	buf := make([]byte, 0, maxWireLine)
	for {
		if nl := bytes.IndexByte(buf, '\n'); nl >= 0 {
			if nl != len(buf)-1 {
				return nil, errors.New("protocol: the server sent more than its INFO before the CONNECT")
			}
			return bytes.TrimRight(buf[:nl], "\r"), nil
		}
		if len(buf) == maxWireLine {
			return nil, errors.New("the server's first line is longer than 64 KiB")
		}
		n, err := conn.Read(buf[len(buf):maxWireLine])
		if err != nil {
			return nil, err
		}
		buf = buf[:len(buf)+n]
	}
}

// read is the reader goroutine: it reads, cuts messages out and hands
// them over until the connection ends.
func (c *wireConsumer) read() {
	var err error
	defer func() {
		if c.closing.Load() {
			err = net.ErrClosed
		}
		// a failed connection is closed now, not at the consumer's Close:
		// the server then drops the subscription, and its descriptor goes
		_ = c.conn.Close()
		c.err = err
		close(c.done)
	}()
	for {
		var b *wireBatch
		b, err = c.parse()
		c.deliver(b) // what came before an error is the lane's
		if err != nil {
			return
		}
		if err = c.fill(); err != nil {
			return
		}
	}
}

// fill reads once into the buffer, first moving what is unparsed into a
// new chunk when too little room is left: payloads already handed over
// stay in the old chunk, the lane's to keep.
func (c *wireConsumer) fill() error {
	if need := c.pending(); len(c.buf)-c.end < wireMinRead || c.start+need > len(c.buf) {
		nb := make([]byte, max(wireChunk, need+wireMinRead))
		c.end = copy(nb, c.buf[c.start:c.end])
		c.buf, c.start = nb, 0
	}
	if c.end == len(c.buf) { // cannot happen: a new chunk leaves room
		return errors.New("no room in the read buffer")
	}
	n, err := c.conn.Read(c.buf[c.end:])
	c.end += n
	if n > 0 {
		return nil
	}
	return err
}

// batch is a recycled batch, or a new one.
func (c *wireConsumer) batch() *wireBatch {
	select {
	case b := <-c.free:
		return b
	default:
		return &wireBatch{msgs: make([][]byte, 0, 256), sizes: make([]int32, 0, 256)}
	}
}

// deliver queues a batch for the lane, dropping what is beyond CoreQueue
// messages or CoreQueueBytes held, as nats.go drops for a slow consumer.
func (c *wireConsumer) deliver(b *wireBatch) {
	if b == nil {
		return
	}
	room, roomB := CoreQueue-c.held.Load(), CoreQueueBytes-c.heldB.Load()
	keep, bytes := len(b.msgs), b.bytes
	if int64(keep) > room || bytes > roomB { // behind: keep what fits
		keep, bytes = 0, 0
		for _, n := range b.sizes {
			if int64(keep) >= room || bytes+int64(n) > roomB {
				break
			}
			keep, bytes = keep+1, bytes+int64(n)
		}
	}
	if keep == 0 || len(c.batches) == cap(c.batches) {
		keep, bytes = 0, 0
	}
	if keep < len(b.msgs) {
		c.dropped.Add(uint64(len(b.msgs) - keep))
		clear(b.msgs[keep:])
		b.msgs, b.sizes = b.msgs[:keep], b.sizes[:keep]
	}
	if keep == 0 {
		c.recycle(b)
		return
	}
	b.bytes = bytes
	c.held.Add(int64(keep))
	c.heldB.Add(bytes)
	c.batches <- b // never blocks: the reader alone sends, and there was room
}

func (c *wireConsumer) recycle(b *wireBatch) {
	clear(b.msgs) // the chunks are the lane's, not the batch's
	b.msgs, b.sizes, b.bytes = b.msgs[:0], b.sizes[:0], 0
	select {
	case c.free <- b:
	default:
	}
}

// take hands over the current batch's next message; the last one's
// handing over ends the batch (held then counts what the lane has not
// taken, exactly, whenever it waits).
func (c *wireConsumer) take() []byte {
	m := c.cur.msgs[c.i]
	if c.i++; c.i == len(c.cur.msgs) {
		c.held.Add(-int64(len(c.cur.msgs)))
		c.heldB.Add(-c.cur.bytes)
		c.recycle(c.cur)
		c.cur = nil
	}
	return m
}

// TryNext implements driver.Ready.
func (c *wireConsumer) TryNext() ([]byte, bool) {
	if c.cur != nil {
		return c.take(), true
	}
	select {
	case c.cur = <-c.batches:
		c.i = 0
		return c.take(), true
	default:
		return nil, false
	}
}

// Next implements driver.Consumer: a message already held, or one within
// coreSpin of polling (yielding the CPU between polls), or the wait.
func (c *wireConsumer) Next(wait time.Duration) ([]byte, error) {
	if m, ok := c.TryNext(); ok {
		return m, nil
	}
	for deadline := time.Now().Add(coreSpin); time.Now().Before(deadline); {
		if m, ok := c.TryNext(); ok {
			return m, nil
		}
		osthread.Yield()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case c.cur = <-c.batches:
	case <-c.done:
		select { // what was read before the end is still the lane's
		case c.cur = <-c.batches:
		default:
			return nil, fmt.Errorf("receive on %s: %w", c.subject, c.err)
		}
	case <-t.C:
		return nil, driver.ErrTimeout
	}
	c.i = 0
	return c.take(), nil
}

// Lag implements driver.Consumer: the messages the client holds for the
// lane (the batch it is taking from counts whole until its last message).
func (c *wireConsumer) Lag() (int64, error) { return c.held.Load(), nil }

// Dropped implements driver.Consumer.
func (c *wireConsumer) Dropped() uint64 { return c.dropped.Load() }

// Close implements driver.Consumer.
func (c *wireConsumer) Close() {
	if c.closing.Swap(true) {
		return
	}
	c.conn.Close() // the server ends the subscription with the connection
	<-c.done
}
