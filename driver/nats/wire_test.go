package nats

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/driver/embedded"
)

// recordConn is a connection whose writes are kept (the consumer's
// PONGs); nothing else of it is used by parse.
type recordConn struct {
	net.Conn
	out bytes.Buffer
}

func (r *recordConn) Write(b []byte) (int, error)      { return r.out.Write(b) }
func (r *recordConn) SetWriteDeadline(time.Time) error { return nil }

// parseChunks feeds the chunks to a consumer's parser as reads would
// bring them and returns the messages it handed over, what it wrote back,
// and the parser's error.
func parseChunks(chunks ...string) ([]string, string, error) {
	conn := &recordConn{}
	c := &wireConsumer{conn: conn, buf: make([]byte, wireChunk), maxPayload: 64,
		batches: make(chan *wireBatch, wireBatches), free: make(chan *wireBatch, 64), pongs: make(chan struct{}, 2)}
	var got []string
	for _, chunk := range chunks {
		c.end += copy(c.buf[c.end:], chunk)
		b, err := c.parse()
		c.deliver(b)
		for {
			m, ok := c.TryNext()
			if !ok {
				break
			}
			got = append(got, string(m))
		}
		if err != nil {
			return got, conn.out.String(), err
		}
	}
	return got, conn.out.String(), nil
}

func TestWireParse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		want   []string
		err    string // a part of the error; "" none
		wrote  string
	}{
		{"one message", []string{"MSG s 1 5\r\nhello\r\n"}, []string{"hello"}, "", ""},
		{"a reply subject", []string{"MSG s 1 r.x 2\r\nhi\r\n"}, []string{"hi"}, "", ""},
		{"an empty payload", []string{"MSG s 1 0\r\n\r\n"}, []string{""}, "", ""},
		{"headers are not the payload", []string{"HMSG s 1 12 14\r\nNATS/1.0\r\n\r\nhi\r\n"}, []string{"hi"}, "", ""},
		{"split across reads", []string{"MS", "G s 1 5\r\nhe", "llo\r", "\nMSG s 1 1\r\nx\r\n"}, []string{"hello", "x"}, "", ""},
		{"a PING is answered", []string{"PING\r\nMSG s 1 1\r\na\r\n"}, []string{"a"}, "", "PONG\r\n"},
		{"INFO and +OK are skipped", []string{"INFO {}\r\n+OK\r\nMSG s 1 1\r\nb\r\n"}, []string{"b"}, "", ""},
		{"the server's error ends it", []string{"MSG s 1 1\r\nc\r\n-ERR 'Stale Connection'\r\n"}, []string{"c"}, "Stale Connection", ""},
		{"the server's error cannot drive a terminal", []string{"-ERR 'a\x1b]0;x\x07\u009b31m'\r\n"}, nil, `'a\x1b]0;x\x07\u009b31m'`, ""},
		{"over max_payload", []string{"MSG s 1 65\r\n"}, nil, "bad message line", ""},
		{"a size that is not a number", []string{"MSG s 1 5x\r\n"}, nil, "bad message line", ""},
		{"headers longer than the whole", []string{"HMSG s 1 9 4\r\n"}, nil, "bad message line", ""},
		{"headers and payload over max_payload together", []string{"HMSG s 1 40 65\r\n"}, nil, "bad message line", ""},
		{"headers and payload at max_payload", []string{"HMSG s 1 12 64\r\nNATS/1.0\r\n\r\n" + strings.Repeat("p", 52) + "\r\n"}, []string{strings.Repeat("p", 52)}, "", ""},
		{"an unknown operation", []string{"HELLO\r\n"}, nil, "unknown operation", ""},
		{"an endless line", []string{strings.Repeat("x", maxWireLine+1)}, nil, "a line of over", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, wrote, err := parseChunks(tc.chunks...)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("messages %q, want %q", got, tc.want)
			}
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v, want one with %q", err, tc.err)
			}
			if wrote != tc.wrote {
				t.Errorf("wrote %q, want %q", wrote, tc.wrote)
			}
		})
	}
}

// TestWireHeadersCountTowardTheBound: a message's headers count toward
// the bytes held for the lane (its payload keeps them alive in the
// chunk), so that large headers around small payloads are dropped as a
// slow consumer's once CoreQueueBytes is held, as large payloads are.
func TestWireHeadersCountTowardTheBound(t *testing.T) {
	c := &wireConsumer{conn: &recordConn{}, buf: make([]byte, 0), maxPayload: maxWireMsg,
		batches: make(chan *wireBatch, wireBatches), free: make(chan *wireBatch, 64), pongs: make(chan struct{}, 2)}
	hdr := "NATS/1.0\r\nX: " + strings.Repeat("h", 1<<20) + "\r\n\r\n"
	msg := fmt.Sprintf("HMSG s 1 %d %d\r\n%s%s\r\n", len(hdr), len(hdr)+3, hdr, "abc")
	held := 0
	for range 2 * CoreQueueBytes / len(hdr) {
		c.buf, c.start, c.end = []byte(msg), 0, len(msg)
		b, err := c.parse()
		if err != nil {
			t.Fatal(err)
		}
		c.deliver(b)
	}
	held = int(c.heldB.Load())
	if held > CoreQueueBytes || c.dropped.Load() == 0 {
		t.Errorf("held %d bytes (bound %d), dropped %d: the headers were not counted", held, CoreQueueBytes, c.dropped.Load())
	}
	if got := c.held.Load(); got < int64(CoreQueueBytes/len(msg))-1 || got > int64(CoreQueueBytes/len(hdr)) {
		t.Errorf("held %d messages of %d bytes under a bound of %d bytes", got, len(msg), CoreQueueBytes)
	}
}

// FuzzWireParse: whatever a server sends, the parser neither panics nor
// hands over more than max_payload, and what it hands over is whole.
func FuzzWireParse(f *testing.F) {
	f.Add([]byte("MSG s 1 5\r\nhello\r\nPING\r\n"), 7)
	f.Add([]byte("HMSG s 1 r 12 14\r\nNATS/1.0\r\n\r\nhi\r\n"), 3)
	f.Add([]byte("MSG s 1 999999999\r\n"), 0)
	f.Fuzz(func(t *testing.T, data []byte, cut int) {
		if len(data) > wireChunk {
			return
		}
		cut = min(max(cut, 0), len(data))
		got, _, _ := parseChunks(string(data[:cut]), string(data[cut:]))
		for _, m := range got {
			if len(m) > 64 {
				t.Fatalf("a message of %d bytes over a max_payload of 64", len(m))
			}
		}
	})
}

// TestWireParseAllocates: cutting messages out of a read allocates only
// the batch, once per read, not per message.
func TestWireParseAllocates(t *testing.T) {
	var stream []byte
	for i := 0; i < 1000; i++ {
		stream = append(stream, "MSG cp.s 1 24\r\n0123456789abcdefghijklmn\r\n"...)
	}
	c := &wireConsumer{conn: &recordConn{}, buf: make([]byte, wireChunk), maxPayload: 1 << 20,
		batches: make(chan *wireBatch, wireBatches), free: make(chan *wireBatch, 64), pongs: make(chan struct{}, 2)}
	per := testing.AllocsPerRun(20, func() {
		c.start, c.end = 0, copy(c.buf, stream)
		b, err := c.parse()
		if err != nil || len(b.msgs) != 1000 {
			t.Fatalf("parsed %d messages: %v", len(b.msgs), err)
		}
		c.deliver(b)
		for n := 0; n < 1000; n++ {
			if _, ok := c.TryNext(); !ok {
				t.Fatalf("message %d not handed over", n)
			}
		}
	}) / 1000
	if per > 0.01 {
		t.Errorf("%.3f allocations a message, want none but the batch's", per)
	}
}

// TestWireRoundTripKeepsEveryPayload: through a real server, every
// message arrives once, in order, whole, and stays whole after later reads
// (the caller keeps each one: a chunk is never reused), from empty to
// larger than a read buffer.
func TestWireRoundTripKeepsEveryPayload(t *testing.T) {
	srv, err := embedded.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	e := driver.Endpoint{Driver: driver.NATS, Server: "nats://" + srv.Addr(), Subject: "cp.wire", Window: driver.DefaultCoreWindow}
	c, err := dialWire(e)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := newNATSProducer(e)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sizes := func(i int) int {
		if i%997 == 996 {
			return wireChunk + 1000 + i // larger than a chunk
		}
		return (i * 37) % 3000
	}
	const n = 20000
	published, stop := make(chan struct{}), make(chan struct{})
	defer func() { close(stop); <-published }() // the publisher ends before the producer is closed
	go func() {
		defer close(published)
		for i := 0; i < n; i++ {
			msg := make([]byte, max(sizes(i), 8))[:sizes(i)]
			if len(msg) >= 4 {
				binary.LittleEndian.PutUint32(msg, uint32(i))
			}
			for err := p.Publish(msg); err != nil; err = p.Publish(msg) {
				if !errors.Is(err, driver.ErrFull) {
					t.Error(err)
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}
		if err := p.Flush(5 * time.Second); err != nil {
			t.Error(err)
		}
	}()
	kept := make([][]byte, 0, n)
	for len(kept) < n {
		m, err := c.Next(5 * time.Second)
		if err != nil {
			t.Fatalf("after %d messages: %v", len(kept), err)
		}
		kept = append(kept, m)
	}
	for i, m := range kept {
		if len(m) != sizes(i) || len(m) >= 4 && binary.LittleEndian.Uint32(m) != uint32(i) {
			t.Fatalf("message %d: %d bytes, want %d, and its index", i, len(m), sizes(i))
		}
	}
	if lag, _ := c.Lag(); lag != 0 || c.Dropped() != 0 {
		t.Errorf("lag %d, dropped %d after everything was read; want 0 and 0", lag, c.Dropped())
	}
}

// fakeServer accepts one consumer, greets it with INFO, answers the two
// PINGs of its handshake and then sends script; it returns the address
// and the lines the client sent after that.
func fakeServer(t *testing.T, script string) (string, <-chan string) {
	t.Helper()
	lines := make(chan string, 16)
	addr := serveOne(t, func(conn net.Conn) {
		fmt.Fprintf(conn, "INFO {\"max_payload\":1024}\r\n")
		r := bufio.NewReader(conn)
		for pings := 0; ; {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			switch line = strings.TrimSpace(line); {
			case line == "PING" && pings < 2: // CONNECT's, then SUB's
				fmt.Fprint(conn, "PONG\r\n")
				if pings++; pings == 2 {
					fmt.Fprint(conn, script)
				}
			case strings.HasPrefix(line, "CONNECT"), strings.HasPrefix(line, "SUB"):
			default:
				select { // a test that reads none: discarded
				case lines <- line:
				default:
				}
			}
		}
	})
	return addr, lines
}

// serveOne serves the first connection to the address it returns with
// serve, and closes it after.
func serveOne(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		serve(conn)
	}()
	return ln.Addr().String()
}

// TestWireAnswersTheServersPing: a server's PING gets a PONG from a
// consumer (a server closes a client that does not answer two).
func TestWireAnswersTheServersPing(t *testing.T) {
	addr, lines := fakeServer(t, "PING\r\n")
	c, err := dialWire(driver.Endpoint{Driver: driver.NATS, Server: "nats://" + addr, Subject: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if l := waitLine(t, lines); l != "PONG" {
		t.Errorf("the consumer answered a PING with %q", l)
	}
}

func waitLine(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case l := <-lines:
		return l
	case <-time.After(5 * time.Second):
		t.Fatal("nothing came back within 5 s")
		return ""
	}
}

// TestWireServerErrorIsAnError: a server's -ERR ends the consumer, with
// the server's words, once what came before it is handed over.
func TestWireServerErrorIsAnError(t *testing.T) {
	addr, _ := fakeServer(t, "MSG s 1 2\r\nok\r\n-ERR 'Permissions Violation'\r\n")
	c, err := dialWire(driver.Endpoint{Driver: driver.NATS, Server: "nats://" + addr, Subject: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if m, err := c.Next(5 * time.Second); err != nil || string(m) != "ok" {
		t.Fatalf("first %q, %v; want the message before the error", m, err)
	}
	if _, err := c.Next(5 * time.Second); err == nil || !strings.Contains(err.Error(), "Permissions Violation") {
		t.Errorf("after the server's error: %v", err)
	}
}

// TestWireLeavesTLSToNATSGo: a server that requires TLS is left to
// nats.go's client (errNeedsTLS), before anything is sent to it.
func TestWireLeavesTLSToNATSGo(t *testing.T) {
	got := make(chan int, 1)
	addr := serveOne(t, func(conn net.Conn) {
		fmt.Fprint(conn, "INFO {\"tls_required\":true}\r\n")
		n, _ := io.Copy(io.Discard, conn)
		got <- int(n)
	})
	_, err := dialWire(driver.Endpoint{Driver: driver.NATS, Server: "nats://" + addr, Subject: "s"})
	if !errors.Is(err, errNeedsTLS) {
		t.Fatalf("dial: %v, want errNeedsTLS", err)
	}
	if n := <-got; n != 0 {
		t.Errorf("the client sent %d bytes to a server that requires TLS", n)
	}
}

// TestWireClosesAFailedConnection: a consumer whose connection failed (an
// operation it does not know) closes it at once, before its own Close: the
// server sees the end of the connection.
func TestWireClosesAFailedConnection(t *testing.T) {
	ended := make(chan error, 1)
	addr := serveOne(t, func(conn net.Conn) {
		fmt.Fprint(conn, "INFO {\"max_payload\":1024}\r\n")
		r := bufio.NewReader(conn)
		for pings := 0; pings < 2; {
			line, err := r.ReadString('\n')
			if err != nil {
				ended <- err
				return
			}
			if strings.TrimSpace(line) == "PING" {
				fmt.Fprint(conn, "PONG\r\n")
				pings++
			}
		}
		fmt.Fprint(conn, "HELLO\r\n")
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := io.Copy(io.Discard, r)
		ended <- err
	})
	c, err := dialWire(driver.Endpoint{Driver: driver.NATS, Server: "nats://" + addr, Subject: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := <-ended; err != nil {
		t.Errorf("the server saw %v, want the connection closed by the consumer (EOF)", err)
	}
	if _, err := c.Next(time.Second); err == nil || !strings.Contains(err.Error(), "unknown operation") {
		t.Errorf("Next after the failure: %v", err)
	}
}
