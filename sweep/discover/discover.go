package discover

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Source is where agents are looked up: "dns:NAME[:PORT]" (the name's A
// and AAAA records, each an agent at PORT) or "srv:NAME" (the name's SRV
// records, each a target and its port, as a headless Service publishes
// them for a named port: _control._tcp.cp-sender.cp.svc.cluster.local).
type Source struct {
	Kind string // "dns" or "srv"
	Name string
	Port int // dns: the agents' control port
}

func (s Source) String() string {
	if s.Kind == "srv" {
		return "srv:" + s.Name
	}
	return "dns:" + net.JoinHostPort(s.Name, strconv.Itoa(s.Port))
}

// Parse reads a source; a dns: source without a port gets defaultPort.
func Parse(spec string, defaultPort int) (Source, error) {
	kind, rest, ok := strings.Cut(spec, ":")
	if !ok || rest == "" || (kind != "dns" && kind != "srv") {
		return Source{}, fmt.Errorf("agent source %q: want dns:NAME[:PORT] or srv:NAME", spec)
	}
	s := Source{Kind: kind, Name: rest, Port: defaultPort}
	if kind == "dns" {
		if host, port, err := net.SplitHostPort(rest); err == nil {
			p, perr := strconv.Atoi(port)
			if perr != nil || p < 1 || p > 65535 {
				return Source{}, fmt.Errorf("agent source %q: port %q is not 1..65535", spec, port)
			}
			s.Name, s.Port = host, p
		}
	}
	if err := checkName(s.Name); err != nil {
		return Source{}, fmt.Errorf("agent source %q: %w", spec, err)
	}
	return s, nil
}

// checkName refuses what no DNS name can be (a URL, a path, spaces), so a
// typo is an error before the wait rather than a timeout after it.
func checkName(name string) error {
	n := strings.TrimSuffix(name, ".")
	if n == "" || len(n) > 253 {
		return errors.New("the name is empty or longer than 253 characters")
	}
	for _, label := range strings.Split(n, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("label %q of the name is empty or longer than 63 characters", label)
		}
		for _, r := range label {
			if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return fmt.Errorf("the name has %q, which no DNS name has", r)
			}
		}
	}
	return nil
}

// Options bound the wait.
type Options struct {
	Want     int           // how many agents must answer
	Timeout  time.Duration // how long to wait for them
	Interval time.Duration // between lookups (default 1s)
	// Resolver looks the names up (nil: the system's); Server names it in
	// errors (a resolver that dials a server of its own would otherwise be
	// reported as the system's, whose address Go hands its dialer).
	Resolver *net.Resolver
	Server   string
	// Progress, when set, hears each lookup's count while it differs from Want.
	Progress func(found int)
}

// ShortError is a wait that ended without the agents asked for.
type ShortError struct {
	Source      Source
	Want, Found int
	Waited      time.Duration
	Last        error // the last lookup's error, if it failed
}

func (e *ShortError) Error() string {
	// The source is named by whoever reports the error (the sweep's
	// agent error), once.
	msg := fmt.Sprintf("%d agents answer, %d asked for, after waiting %v", e.Found, e.Want, e.Waited.Round(100*time.Millisecond))
	switch {
	case e.Found > e.Want:
		msg += " (more than asked: give the Service's replica count)"
	case e.Last != nil:
		msg += fmt.Sprintf(" (last lookup: %v)", e.Last)
	default:
		msg += " (are the agents' pods ready? kubectl get pods)"
	}
	return msg
}

func (e *ShortError) Unwrap() error { return e.Last }

// Agents waits until src names exactly opts.Want agents and returns their
// control addresses (host:port), sorted so that a sweep's agents keep their
// order from one run to the next. A headless Service lists only ready pods,
// so the count grows as they start.
func Agents(ctx context.Context, src Source, opts Options) ([]string, error) {
	if opts.Want < 1 {
		return nil, fmt.Errorf("%s: asked for %d agents, want at least 1", src, opts.Want)
	}
	r := opts.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	interval := opts.Interval
	if interval <= 0 {
		interval = time.Second
	}
	start := time.Now()
	deadline := start.Add(opts.Timeout)
	for {
		lookupCtx, cancel := context.WithTimeout(ctx, min(5*time.Second, max(time.Until(deadline), 100*time.Millisecond)))
		addrs, err := lookup(lookupCtx, r, src)
		cancel()
		nameServer(err, opts.Server)
		if err == nil && len(addrs) == opts.Want {
			return addrs, nil
		}
		if opts.Progress != nil {
			opts.Progress(len(addrs))
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, &ShortError{Source: src, Want: opts.Want, Found: len(addrs), Waited: time.Since(start), Last: err}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(interval, left)):
		}
	}
}

// lookup is one answer: the agents' addresses, deduplicated and sorted. A
// name that does not exist (yet) is no agents, not an error: a Service
// with no ready pod has no records.
func lookup(ctx context.Context, r *net.Resolver, src Source) ([]string, error) {
	var addrs []string
	switch src.Kind {
	case "srv":
		_, recs, err := r.LookupSRV(ctx, "", "", src.Name)
		if err != nil {
			return nil, notFoundIsEmpty(err)
		}
		for _, rec := range recs {
			ips, err := r.LookupHost(ctx, rec.Target)
			if err != nil {
				return nil, fmt.Errorf("SRV target %s: %w", rec.Target, err)
			}
			for _, ip := range ips {
				addrs = append(addrs, net.JoinHostPort(ip, strconv.Itoa(int(rec.Port))))
			}
		}
	default:
		ips, err := r.LookupHost(ctx, src.Name)
		if err != nil {
			return nil, notFoundIsEmpty(err)
		}
		for _, ip := range ips {
			addrs = append(addrs, net.JoinHostPort(ip, strconv.Itoa(src.Port)))
		}
	}
	slices.Sort(addrs)
	return slices.Compact(addrs), nil
}

// nameServer puts the server actually asked into a lookup's error.
func nameServer(err error, server string) {
	var dnsErr *net.DNSError
	if server != "" && errors.As(err, &dnsErr) {
		dnsErr.Server = server
	}
}

func notFoundIsEmpty(err error) error {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return nil
	}
	return err
}

// ResolverFor queries the DNS server at addr (host:port) instead of the
// system's, e.g. a cluster's DNS from outside it.
func ResolverFor(addr string) (*net.Resolver, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("DNS server %q: %w (want host:port, e.g. 10.96.0.10:53)", addr, err)
	}
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}, nil
}
