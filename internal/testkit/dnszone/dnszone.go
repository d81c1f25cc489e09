package dnszone

import (
	"context"
	"net"
	"strings"
	"sync"

	"golang.org/x/net/dns/dnsmessage"
)

// Zone is a DNS server of a test's own, on loopback UDP: the records a
// headless Service would publish, changed while a lookup waits.
type Zone struct {
	mu   sync.Mutex
	a    map[string][]string // name -> IPv4 addresses
	srv  map[string][]dnsmessage.SRVResource
	conn net.PacketConn
}

// Serve starts a zone with no records on a free loopback port; Close
// stops it.
func Serve() (*Zone, error) {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	z := &Zone{a: map[string][]string{}, srv: map[string][]dnsmessage.SRVResource{}, conn: conn}
	go z.serve()
	return z, nil
}

// Addr is the zone's UDP address.
func (z *Zone) Addr() string { return z.conn.LocalAddr().String() }

// Close stops the server.
func (z *Zone) Close() error { return z.conn.Close() }

// Set makes name answer these IPv4 addresses (none: the name exists, empty).
func (z *Zone) Set(name string, ips ...string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.a[dnsName(name)] = ips
}

// SetSRV makes name answer these SRV records.
func (z *Zone) SetSRV(name string, recs ...dnsmessage.SRVResource) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.srv[dnsName(name)] = recs
}

func dnsName(n string) string { return strings.ToLower(strings.TrimSuffix(n, ".")) + "." }

// Resolver sends every query to the zone.
func (z *Zone) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", z.conn.LocalAddr().String())
	}}
}

func (z *Zone) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := z.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		if out, err := z.answer(h, q); err == nil {
			z.conn.WriteTo(out, from)
		}
	}
}

func (z *Zone) answer(h dnsmessage.Header, q dnsmessage.Question) ([]byte, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	name := strings.ToLower(q.Name.String())
	ips, isA := z.a[name]
	recs, isSRV := z.srv[name]
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true}
	if !isA && !isSRV {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	res := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 5}
	switch q.Type {
	case dnsmessage.TypeA:
		for _, ip := range ips {
			var a dnsmessage.AResource
			copy(a.A[:], net.ParseIP(ip).To4())
			if err := b.AResource(res, a); err != nil {
				return nil, err
			}
		}
	case dnsmessage.TypeSRV:
		for _, r := range recs {
			if err := b.SRVResource(res, r); err != nil {
				return nil, err
			}
		}
	}
	return b.Finish()
}
