package nats

import (
	"bytes"
	"fmt"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
)

// The client protocol as the wire consumer reads it: operations cut out of
// the read buffer in place (MSG and HMSG into the lane's batch, PING
// answered, -ERR the end), each size bounded before it is trusted.

// pending is the size of the first unparsed operation when it is a
// message whose line is complete (0: unknown).
func (c *wireConsumer) pending() int {
	rest := c.buf[c.start:c.end]
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 {
		return 0
	}
	line := bytes.TrimSuffix(rest[:nl], []byte("\r"))
	if !isMsg(line) {
		return 0
	}
	size, ok := msgSize(line)
	if !ok {
		return 0
	}
	return nl + 1 + size + 2
}

// parse cuts out every complete operation of the buffer: messages into a
// batch, PINGs answered, PONGs signalled, a server's -ERR the end.
func (c *wireConsumer) parse() (*wireBatch, error) {
	var b *wireBatch
	for {
		rest := c.buf[c.start:c.end]
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			if len(rest) > maxWireLine {
				return b, fmt.Errorf("protocol: a line of over %d bytes", maxWireLine)
			}
			return b, nil
		}
		line := rest[:nl]
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if isMsg(line) {
			size, ok := msgSize(line)
			hdr, hok := headerSize(line)
			// max_payload bounds headers and payload together, as the
			// server does (a 3 MB message passed under a 1 MiB limit when
			// only the payload was held to it)
			if !ok || !hok || size > c.maxPayload || hdr > size {
				return b, fmt.Errorf("protocol: bad message line %.80q", line)
			}
			if nl+1+size+2 > len(rest) {
				return b, nil // the payload is still coming
			}
			if b == nil {
				b = c.batch()
			}
			payload := rest[nl+1+hdr : nl+1+size : nl+1+size]
			if hdr > len(payload) && hdr > wireMinRead {
				// a payload kept as a slice keeps its whole chunk alive,
				// headers included: one-tuple buckets in 1 MiB headers
				// held a MiB each in the lane's ring. Such a payload is
				// copied, and the chunk goes.
				payload = bytes.Clone(payload)
			}
			b.msgs, b.sizes = append(b.msgs, payload), append(b.sizes, int32(size))
			// the headers count: the payload keeps them alive in its chunk
			// (1 MiB headers around one-tuple payloads grew dgrecv to
			// 1.5 GiB when only payloads counted toward CoreQueueBytes)
			b.bytes += int64(size)
			c.start += nl + 1 + size + 2
			continue
		}
		c.start += nl + 1
		if err := c.control(line); err != nil {
			return b, err
		}
	}
}

// control acts on a line that is not a message.
func (c *wireConsumer) control(line []byte) error {
	switch {
	case bytes.Equal(line, []byte("PING")):
		_ = c.conn.SetWriteDeadline(time.Now().Add(driver.ConnectTimeout)) // a failure fails the write
		_, err := c.conn.Write([]byte("PONG\r\n"))
		return err
	case bytes.Equal(line, []byte("PONG")):
		select {
		case c.pongs <- struct{}{}:
		default:
		}
	case bytes.HasPrefix(line, []byte("-ERR")):
		// the server's words, but no escape of theirs reaches a terminal
		return fmt.Errorf("the server: %s", termsafe.Escape(string(bytes.TrimSpace(line[4:]))))
	case bytes.HasPrefix(line, []byte("INFO ")), bytes.Equal(line, []byte("+OK")), len(line) == 0:
	default:
		return fmt.Errorf("protocol: unknown operation %.40q", line)
	}
	return nil
}

// isMsg says whether a line announces a message (MSG, or HMSG with
// headers).
func isMsg(line []byte) bool {
	return bytes.HasPrefix(line, []byte("MSG ")) || bytes.HasPrefix(line, []byte("HMSG "))
}

// msgSize is a message line's last field: the bytes that follow it (HMSG:
// headers and payload together).
func msgSize(line []byte) (int, bool) {
	sp := bytes.LastIndexByte(line, ' ')
	return parseSize(line[sp+1:])
}

// headerSize is an HMSG line's header bytes (MSG: 0), the field before the
// last.
func headerSize(line []byte) (int, bool) {
	if line[0] == 'M' {
		return 0, true
	}
	sp := bytes.LastIndexByte(line, ' ')
	prev := bytes.LastIndexByte(line[:max(sp, 0)], ' ')
	if sp < 0 || prev < 0 {
		return 0, false
	}
	return parseSize(line[prev+1 : sp])
}

// parseSize reads a decimal size of at most maxWireMsg.
func parseSize(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, d := range b {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + int(d-'0')
	}
	return n, n <= maxWireMsg
}
