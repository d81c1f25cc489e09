package profiler

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/cloudprofiler-go/cp/tsc"
)

// The return-trip method (ReT, §2.2 and §6.4), as two handlers:
//
//   - ret-start, where tuples start (e.g. emit): logs (TSC, id) like the
//     buffered handler, and listens on Listen (UDP) for acknowledgements;
//     each arriving ack is logged as (TSC of arrival, id) to AckPath
//     (default Path + ".ack"). Start and ack share one TSC, so a tuple's
//     ReT duration is ack − start, and its error is the ack's return leg.
//   - ret-end, where tuples end (e.g. consumed): logs (TSC, id) and sends
//     an acknowledgement with the id to Peer (the start's Listen address)
//     right away, from the calling thread. X and Y (when Y > 0) acknowledge
//     only ids with id mod Y < X, as XoY samples, to spare the network.
//
// An acknowledgement is 16 bytes: "CPRA", version 1, three zero bytes, the
// id (little endian). Anything else arriving is counted and dropped.

// Handler names of the return-trip method.
const (
	HandlerReTStart = "ret-start"
	HandlerReTEnd   = "ret-end"
)

const retAckSize = 16

var retMagic = [4]byte{'C', 'P', 'R', 'A'}

func encodeAck(b []byte, id uint64) []byte {
	b = append(b[:0], retMagic[:]...)
	b = append(b, 1, 0, 0, 0)
	return binary.LittleEndian.AppendUint64(b, id)
}

// decodeAck accepts exactly what encodeAck writes: magic, version 1, three
// reserved zero bytes, the id.
func decodeAck(b []byte) (uint64, error) {
	if len(b) != retAckSize || [4]byte(b[:4]) != retMagic || b[4] != 1 || b[5] != 0 || b[6] != 0 || b[7] != 0 {
		return 0, errors.New("not a ReT acknowledgement")
	}
	return binary.LittleEndian.Uint64(b[8:]), nil
}

// retListener receives acknowledgements for every ret-start channel of a
// profiler that listens on its address, and logs them to one ack log.
type retListener struct {
	conn      *net.UDPConn
	acks      *buffered // written by the listener goroutine only
	received  atomic.Uint64
	malformed atomic.Uint64
	users     int
	done      chan struct{}
}

func newReTListener(addr string, open opener, ackCfg Config) (*retListener, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("ret-start listen address %q: %w", addr, err)
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("ret-start: %w", err)
	}
	acks, err := newBuffered(open, ackCfg)
	if err != nil {
		conn.Close()
		return nil, err
	}
	_ = conn.SetReadBuffer(4 << 20) // bursts of acks; the kernel caps it at rmem_max
	l := &retListener{conn: conn, acks: acks, done: make(chan struct{})}
	go l.serve()
	return l, nil
}

func (l *retListener) serve() {
	defer close(l.done)
	buf := make([]byte, 64)
	for {
		n, _, err := l.conn.ReadFromUDPAddrPort(buf)
		t := tsc.ReadFast()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		id, err := decodeAck(buf[:n])
		if err != nil {
			l.malformed.Add(1)
			continue
		}
		l.received.Add(1)
		l.acks.logAt(t, id)
	}
}

func (l *retListener) close() error {
	err := l.conn.Close()
	<-l.done
	if e := l.acks.close(); err == nil {
		err = e
	}
	return err
}

// retStart logs starts like the buffered handler; the listener is shared.
type retStart struct {
	*buffered
	p    *Profiler
	addr string
}

func (h *retStart) close() error {
	err := h.buffered.close()
	if e := h.p.releaseReT(h.addr); err == nil {
		err = e
	}
	return err
}

// retEnd logs ends and acknowledges them to the start.
type retEnd struct {
	*buffered
	conn   *net.UDPConn
	x, y   uint64
	pkt    []byte
	sent   uint64
	failed uint64
}

func newReTEnd(open opener, cfg Config) (*retEnd, error) {
	if cfg.Peer == "" {
		return nil, errors.New("ret-end needs peer: the ret-start channel's UDP address")
	}
	if cfg.Y > 0 && cfg.X > cfg.Y {
		return nil, fmt.Errorf("ret-end sampling needs x <= y, got x=%d y=%d", cfg.X, cfg.Y)
	}
	ua, err := net.ResolveUDPAddr("udp", cfg.Peer)
	if err != nil {
		return nil, fmt.Errorf("ret-end peer %q: %w", cfg.Peer, err)
	}
	conn, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		return nil, fmt.Errorf("ret-end: %w", err)
	}
	b, err := newBuffered(open, cfg)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &retEnd{buffered: b, conn: conn, x: cfg.X, y: cfg.Y, pkt: make([]byte, 0, retAckSize)}, nil
}

func (h *retEnd) log(id uint64) { h.logAt(tsc.ReadFast(), id) }

func (h *retEnd) logAt(t, id uint64) {
	h.buffered.logAt(t, id)
	if h.y > 0 && id%h.y >= h.x {
		return
	}
	h.pkt = encodeAck(h.pkt, id)
	if _, err := h.conn.Write(h.pkt); err != nil {
		h.failed++ // e.g. the start is gone: the end's own log still has it
	} else {
		h.sent++
	}
}

func (h *retEnd) close() error {
	err := h.buffered.close()
	if e := h.conn.Close(); err == nil {
		err = e
	}
	return err
}

// ReTStats are a profiler's return-trip counters.
type ReTStats struct {
	AcksReceived, AcksMalformed uint64
}

// ReT returns the acknowledgements received and refused by the ret-start
// listeners so far, and the bound address of the listener a ret-start
// channel named name uses ("" if none).
func (p *Profiler) ReT(name string) (ReTStats, string) {
	p.retMu.Lock()
	defer p.retMu.Unlock()
	var st ReTStats
	for _, l := range p.retListeners {
		st.AcksReceived += l.received.Load()
		st.AcksMalformed += l.malformed.Load()
	}
	addr := ""
	if c := p.channel(name); c != nil {
		if l := p.retListeners[c.Config().Listen]; l != nil {
			addr = l.conn.LocalAddr().String()
		}
	}
	return st, addr
}

func (p *Profiler) channel(name string) *Channel {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.channels[name]
}

func (p *Profiler) newReTStart(cfg Config) (*retStart, error) {
	if cfg.Listen == "" {
		return nil, errors.New("ret-start needs listen: the UDP address acknowledgements come to")
	}
	p.retMu.Lock()
	defer p.retMu.Unlock()
	l := p.retListeners[cfg.Listen]
	if l == nil {
		ack := cfg
		ack.Path = cfg.AckPath
		if ack.Path == "" {
			ack.Path = cfg.Path + ".ack"
		}
		var err error
		if l, err = newReTListener(cfg.Listen, p.openLog, ack); err != nil {
			return nil, err
		}
		if p.retListeners == nil {
			p.retListeners = map[string]*retListener{}
		}
		p.retListeners[cfg.Listen] = l
	}
	b, err := newBuffered(p.openLog, cfg)
	if err != nil {
		return nil, err
	}
	l.users++
	return &retStart{buffered: b, p: p, addr: cfg.Listen}, nil
}

// releaseReT closes a listener when its last ret-start channel closes.
func (p *Profiler) releaseReT(addr string) error {
	p.retMu.Lock()
	defer p.retMu.Unlock()
	l := p.retListeners[addr]
	if l == nil {
		return nil
	}
	if l.users--; l.users > 0 {
		return nil
	}
	delete(p.retListeners, addr)
	return l.close()
}
