package tsc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync/atomic"
	"time"
)

// The probe protocol (UDP, one 48-byte datagram each way, little-endian):
//
//	offset size field
//	0      4    magic "CPTP"
//	4      1    version (1)
//	5      1    kind: 1 request (prober -> responder), 2 reply
//	6      2    reserved (0)
//	8      8    session nonce (chosen by the prober per run)
//	16     8    sequence number within the session
//	24     8    prober's TSC at send (echoed in the reply)
//	32     8    responder's TSC when the request arrived (reply only)
//	40     8    responder's TSC when the reply left (reply only)
const (
	packetSize   = 48
	kindRequest  = 1
	kindReply    = 2
	probeVersion = 1
)

var probeMagic = [4]byte{'C', 'P', 'T', 'P'}

type packet struct {
	kind       byte
	nonce, seq uint64
	t1, t2, t3 uint64
}

// Errors of the probe decoder.
var (
	ErrProbeSize    = errors.New("probe packet is not 48 bytes")
	ErrProbeMagic   = errors.New("not a probe packet")
	ErrProbeVersion = errors.New("unsupported probe version")
	ErrProbeKind    = errors.New("unknown probe packet kind")
)

func (p packet) encode(b []byte) []byte {
	b = b[:packetSize]
	copy(b, probeMagic[:])
	b[4], b[5], b[6], b[7] = probeVersion, p.kind, 0, 0
	binary.LittleEndian.PutUint64(b[8:], p.nonce)
	binary.LittleEndian.PutUint64(b[16:], p.seq)
	binary.LittleEndian.PutUint64(b[24:], p.t1)
	binary.LittleEndian.PutUint64(b[32:], p.t2)
	binary.LittleEndian.PutUint64(b[40:], p.t3)
	return b
}

func decodePacket(b []byte) (packet, error) {
	if len(b) != packetSize {
		return packet{}, ErrProbeSize
	}
	if [4]byte(b[:4]) != probeMagic {
		return packet{}, ErrProbeMagic
	}
	if b[4] != probeVersion {
		return packet{}, ErrProbeVersion
	}
	p := packet{kind: b[5], nonce: binary.LittleEndian.Uint64(b[8:]), seq: binary.LittleEndian.Uint64(b[16:]),
		t1: binary.LittleEndian.Uint64(b[24:]), t2: binary.LittleEndian.Uint64(b[32:]), t3: binary.LittleEndian.Uint64(b[40:])}
	if p.kind != kindRequest && p.kind != kindReply {
		return packet{}, ErrProbeKind
	}
	return p, nil
}

// Responder answers probe requests on a UDP socket with its TSC stamps
// (a TSC client, in the paper's terms). It counts what it could not parse.
type Responder struct {
	now       func() uint64 // the clock it stamps with (Read, or a simulated node's)
	delay     func() (out, in time.Duration)
	conn      *net.UDPConn
	Answered  atomic.Uint64
	Malformed atomic.Uint64
	done      chan struct{}
}

// NewResponder listens on addr (e.g. ":9200", or "127.0.0.1:0") and
// stamps with the TSC.
func NewResponder(addr string) (*Responder, error) { return NewResponderOpts(addr, Stamping{}) }

// Stamping is how a node stamps probe packets: with which clock, and with
// which injected delays.
type Stamping struct {
	// Now is the clock to stamp with (nil: the TSC); tests give simulated
	// nodes' clocks.
	Now func() uint64
	// Delay, when set, injects one-way delays in user space on this node's
	// side of every path (tests use it where the kernel has no netem):
	// out is spent after a packet is stamped and before it leaves, in after
	// it arrives and before it is stamped. With every node doing so, the
	// path from X to Y takes X's out plus Y's in, in both the prober's and
	// the responder's packets. It is called once per round trip.
	Delay func() (out, in time.Duration)
}

func (s Stamping) delays() (out, in time.Duration) {
	if s.Delay == nil {
		return 0, 0
	}
	return s.Delay()
}

// NewResponderOpts listens on addr and stamps as o says.
func NewResponderOpts(addr string, o Stamping) (*Responder, error) {
	if o.Now == nil {
		o.Now = Read
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("probe responder address %q: %w", addr, err)
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("probe responder: %w", err)
	}
	r := &Responder{now: o.Now, delay: o.Delay, conn: conn, done: make(chan struct{})}
	go r.serve()
	return r, nil
}

// Addr is the responder's bound address.
func (r *Responder) Addr() string { return r.conn.LocalAddr().String() }

// Close stops the responder.
func (r *Responder) Close() error {
	err := r.conn.Close()
	<-r.done
	return err
}

func (r *Responder) serve() {
	defer close(r.done)
	// One OS thread stamps receive and reply, so both stamps come from the
	// same core's view of the TSC as far as the scheduler allows.
	runtime.LockOSThread()
	buf := make([]byte, 2048)
	out := make([]byte, packetSize)
	for {
		n, from, err := r.conn.ReadFromUDPAddrPort(buf)
		var outDelay time.Duration
		if r.delay != nil && err == nil {
			var inDelay time.Duration
			outDelay, inDelay = r.delay()
			waitFor(inDelay)
		}
		t2 := r.now()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p, err := decodePacket(buf[:n])
		if err != nil || p.kind != kindRequest {
			r.Malformed.Add(1)
			continue
		}
		p.kind, p.t2 = kindReply, t2
		p.t3 = r.now()
		waitFor(outDelay)
		if _, err := r.conn.WriteToUDPAddrPort(p.encode(out), from); err == nil {
			r.Answered.Add(1)
		}
	}
}

// waitFor spins for d: injected delays are tens to hundreds of
// microseconds, shorter than the scheduler's sleep granularity.
func waitFor(d time.Duration) {
	if d <= 0 {
		return
	}
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// ProbeStats counts what a probing run saw besides good replies.
type ProbeStats struct {
	Sent       int `json:"sent"`
	Good       int `json:"good"`
	Lost       int `json:"lost"`       // no reply within the timeout
	Late       int `json:"late"`       // a reply after its probe was given up
	Duplicates int `json:"duplicates"` // a second reply to the same probe
	Foreign    int `json:"foreign"`    // another session's nonce, or not a reply
	Malformed  int `json:"malformed"`  // not a probe packet at all
	Invalid    int `json:"invalid"`    // stamps out of order
}

// ProbePeerOpts runs count round trips to the responder at peer, one at
// a time (so a probe's reply is never confused with another's), each
// given up after timeout, stamping as o says. It returns the good probes
// (this node is A, the peer B). It ends early, with ctx's error and the
// probes so far, when ctx is done: a probe in flight waits no longer than
// ctx's deadline, and a cancelled ctx is seen within one probe's timeout.
func ProbePeerOpts(ctx context.Context, peer string, count int, gap, timeout time.Duration, nonce uint64, o Stamping) ([]Probe, ProbeStats, error) {
	now := o.Now
	if now == nil {
		now = Read
	}
	var st ProbeStats
	ua, err := net.ResolveUDPAddr("udp", peer)
	if err != nil {
		return nil, st, fmt.Errorf("probe peer %q: %w", peer, err)
	}
	conn, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		return nil, st, fmt.Errorf("probe peer %s: %w", peer, err)
	}
	defer conn.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	out, buf := make([]byte, packetSize), make([]byte, 2048)
	r := &round{nonce: nonce, st: &st, answered: map[uint64]bool{}, probes: make([]Probe, 0, count)}
	ctxDeadline, hasDeadline := ctx.Deadline()
	// A cancelled ctx ends a read in flight at once, not after its timeout.
	unblock := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Now()) })
	defer unblock()
	for seq := uint64(1); seq <= uint64(count); seq++ {
		if err := ctx.Err(); err != nil {
			return r.probes, st, fmt.Errorf("probe %s: stopped after %d of %d probes: %w", peer, st.Sent, count, err)
		}
		t1 := now()
		outDelay, inDelay := o.delays()
		waitFor(outDelay)
		if _, err := conn.Write(packet{kind: kindRequest, nonce: nonce, seq: seq, t1: t1}.encode(out)); err != nil {
			return r.probes, st, fmt.Errorf("probe %s: %w", peer, err)
		}
		st.Sent++
		deadline := time.Now().Add(timeout)
		if hasDeadline && ctxDeadline.Before(deadline) {
			deadline = ctxDeadline
		}
		got := false
		for !got {
			_ = conn.SetReadDeadline(deadline)
			n, err := conn.Read(buf)
			waitFor(inDelay)
			t4 := now()
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					if ctx.Err() != nil {
						return r.probes, st, fmt.Errorf("probe %s: stopped after %d of %d probes: %w", peer, st.Sent, count, ctx.Err())
					}
					st.Lost++
					break
				}
				continue // e.g. ICMP port unreachable: keep waiting until the deadline
			}
			got = r.reply(buf[:n], seq, t1, t4)
		}
		if gap > 0 {
			select {
			case <-time.After(gap):
			case <-ctx.Done():
			}
		}
	}
	return r.probes, st, nil
}

// round is one probing round's bookkeeping.
type round struct {
	nonce    uint64
	st       *ProbeStats
	answered map[uint64]bool // sequence numbers that got a good reply
	probes   []Probe
}

// reply classifies a datagram that arrived while probe seq (sent at t1,
// received at t4) waits; true when it answered that probe.
func (r *round) reply(b []byte, seq, t1, t4 uint64) bool {
	p, err := decodePacket(b)
	switch {
	case err != nil:
		r.st.Malformed++
	case p.kind != kindReply || p.nonce != r.nonce:
		r.st.Foreign++
	case p.seq == seq && p.t1 == t1:
		pr := Probe{ASend: t1, BRecv: p.t2, BReply: p.t3, ABack: t4}
		if !pr.Valid() {
			r.st.Invalid++
			return true
		}
		r.probes = append(r.probes, pr)
		r.answered[seq] = true
		r.st.Good++
		return true
	case r.answered[p.seq]:
		r.st.Duplicates++
	case p.seq < seq:
		r.st.Late++
	default:
		r.st.Foreign++ // a sequence number never sent
	}
	return false
}
