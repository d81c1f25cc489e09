package tsc

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"
)

func TestPacketRoundTripAndErrors(t *testing.T) {
	p := packet{kind: kindReply, nonce: 7, seq: 9, t1: 1 << 60, t2: 3, t3: 4}
	got, err := decodePacket(p.encode(make([]byte, packetSize)))
	if err != nil || got != p {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	good := p.encode(make([]byte, packetSize))
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"short", good[:47], ErrProbeSize},
		{"long", append(append([]byte{}, good...), 0), ErrProbeSize},
		{"magic", append([]byte("XXXX"), good[4:]...), ErrProbeMagic},
		{"version", func() []byte { b := append([]byte{}, good...); b[4] = 9; return b }(), ErrProbeVersion},
		{"kind", func() []byte { b := append([]byte{}, good...); b[5] = 7; return b }(), ErrProbeKind},
	} {
		if _, err := decodePacket(tc.b); err != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func FuzzDecodePacket(f *testing.F) {
	f.Add(packet{kind: kindRequest, nonce: 1, seq: 2, t1: 3}.encode(make([]byte, packetSize)))
	f.Add([]byte("CPTP"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePacket(b)
		if err == nil {
			again, err := decodePacket(p.encode(make([]byte, packetSize)))
			if err != nil || again != p {
				t.Fatalf("accepted packet does not round-trip: %+v", p)
			}
		}
	})
}

// TestProbeLoopback: on one host A and B share the TSC, so every probe
// must satisfy a_send <= b_recv <= b_reply <= a_back exactly, and the
// relation built from them must contain the identity.
func TestProbeLoopback(t *testing.T) {
	r, err := NewResponder("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	probes, st, err := ProbePeerOpts(context.Background(), r.Addr(), 200, 0, 200*time.Millisecond, 42, Stamping{})
	if err != nil || st.Good < 190 || len(probes) != st.Good {
		t.Fatalf("probes %d, stats %+v, err %v", len(probes), st, err)
	}
	for _, p := range probes {
		if !(p.ASend <= p.BRecv && p.BRecv <= p.BReply && p.BReply <= p.ABack) {
			t.Fatalf("same-host probe out of order: %+v", p)
		}
	}
	rel, err := NewLinearRelationBoth(probes, nil)
	if err != nil {
		t.Fatal(err)
	}
	mid := probes[len(probes)/2].BRecv
	got, err := rel.Translate(mid)
	if err != nil || !got.Contains(float64(mid)) {
		t.Fatalf("identity not inside %+v (%v)", got, err)
	}
	best, _ := MinRTT(probes)
	t.Logf("loopback: MinRTT %d ticks; tighter half-width at mid-window %.0f ticks", best.RTT(), got.Err)
}

// mischief is a UDP relay between prober and responder that drops,
// duplicates, delays (asymmetrically), reorders replies, and injects
// foreign and malformed packets.
type mischief struct {
	conn   *net.UDPConn
	target *net.UDPAddr
	rng    *rand.Rand
	mu     sync.Mutex
	client *net.UDPAddr
}

func newMischief(t *testing.T, target string) *mischief {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ta, _ := net.ResolveUDPAddr("udp", target)
	m := &mischief{conn: conn, target: ta, rng: rand.New(rand.NewPCG(5, 6))}
	go m.run()
	t.Cleanup(func() { conn.Close() })
	return m
}

func (m *mischief) run() {
	buf := make([]byte, 2048)
	for {
		n, from, err := m.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		pkt := append([]byte(nil), buf[:n]...)
		m.mu.Lock()
		toTarget := !from.IP.Equal(m.target.IP) || from.Port != m.target.Port
		if toTarget {
			m.client = from
		}
		dst, roll := m.target, m.rng.Float64()
		if !toTarget {
			dst = m.client
		}
		fwd := time.Duration(50+m.rng.IntN(200)) * time.Microsecond
		if !toTarget {
			fwd = time.Duration(200+m.rng.IntN(800)) * time.Microsecond // asymmetric
		}
		m.mu.Unlock()
		send := func(b []byte, d time.Duration) {
			time.AfterFunc(d, func() { _, _ = m.conn.WriteToUDP(b, dst) })
		}
		switch {
		case roll < 0.10: // drop
		case roll < 0.20: // duplicate
			send(pkt, fwd)
			send(pkt, fwd+300*time.Microsecond)
		case roll < 0.25 && !toTarget: // foreign session and garbage to the prober
			foreign := append([]byte(nil), pkt...)
			foreign[8] ^= 0xff
			send(foreign, fwd/2)
			send([]byte("not a probe at all"), fwd/2)
			send(pkt, fwd)
		case roll < 0.30 && !toTarget: // very late: well after the prober gave up
			send(pkt, 4*mischiefTimeout)
		default:
			send(pkt, fwd)
		}
	}
}

// mischiefTimeout is the prober's wait for a reply: far above the
// mischief's largest delay (1 ms) plus a busy machine's timer lateness, so
// only what the mischief drops or holds back is lost.
const mischiefTimeout = 40 * time.Millisecond

func TestProbeProtocolSurvivesMischief(t *testing.T) {
	r, err := NewResponder("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m := newMischief(t, r.Addr())
	probes, st, err := ProbePeerOpts(context.Background(), m.conn.LocalAddr().String(), 300, 0, mischiefTimeout, 99, Stamping{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", st)
	if st.Lost == 0 || st.Duplicates+st.Late == 0 || st.Foreign == 0 || st.Malformed == 0 || st.Good < 150 {
		t.Fatalf("mischief not seen or too much lost: %+v", st)
	}
	if st.Sent != st.Good+st.Lost+st.Invalid {
		t.Fatalf("every probe is good, lost or invalid: %+v", st)
	}
	for _, p := range probes {
		if !(p.ASend <= p.BRecv && p.BRecv <= p.BReply && p.BReply <= p.ABack) {
			t.Fatalf("a mismatched reply was accepted: %+v", p)
		}
	}
	rel, err := NewLinearRelationBoth(probes, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := probes[len(probes)/2].BRecv
	if got, err := rel.Translate(b); err != nil || !got.Contains(float64(b)) {
		t.Fatalf("identity outside %+v (%v)", got, err)
	}
	if r.Malformed.Load() != 0 {
		t.Fatalf("responder saw %d malformed packets (none were sent to it)", r.Malformed.Load())
	}
}

// TestProbePeerEndsWithItsContext: a round against a peer that never
// answers ends when its context is cancelled, not after count × timeout.
func TestProbePeerEndsWithItsContext(t *testing.T) {
	hole, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, st, err := ProbePeerOpts(ctx, hole.LocalAddr().String(), 1000, 0, 5*time.Second, 1, Stamping{})
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("a cancelled round took %v (1000 probes of 5 s each would take 83 min)", took)
	}
	if !errors.Is(err, context.Canceled) || st.Sent != 1 {
		t.Fatalf("cancelled round: %v, %+v", err, st)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer dcancel()
	start = time.Now()
	if _, _, err := ProbePeerOpts(dctx, hole.LocalAddr().String(), 1000, 0, 5*time.Second, 1, Stamping{}); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("a round past its deadline: %v after %v", err, time.Since(start))
	}
}
