package httpapi

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudprofiler-go/cp/internal/fdlimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Route is one pattern of a server (http.ServeMux syntax, e.g.
// "GET /v1/info" or "/v1/" for a fallback) and its handler.
type Route struct {
	Pattern string
	Handler http.Handler
}

// Limits of every server: a client that opens connections and leaves them
// idle, sends headers slowly or never reads a reply cannot hold the
// process's descriptors or goroutines.
const (
	// DefaultMaxConns is the most connections a server holds at once.
	DefaultMaxConns = 64
	// A connection is a stranger's until a request on it has passed
	// authentication. Strangers hold at most a quarter of the slots
	// (untrustedShare), each at most UntrustedTimeout from its accept, and
	// a new connection evicts the oldest of them first: seventy silent or
	// slow connections reopened as soon as they closed once left an
	// agent's controller 0-1 answers in 80. An authenticated client
	// keeps its connections (keep-alive), which strangers cannot evict.
	UntrustedTimeout    = 2 * time.Second
	untrustedShare      = 4
	ReadHeaderTimeout   = 5 * time.Second
	ReadTimeout         = 30 * time.Second // a whole request, body included (at most a few MiB)
	DefaultWriteTimeout = 2 * time.Minute  // a handler that streams longer extends its own deadline
	IdleTimeout         = 30 * time.Second
	MaxHeaderBytes      = 64 << 10
)

// ServerConfig describes a server. Token, when set, is required on every
// route, /metrics included; without one the server may only listen on
// loopback, unless it serves nothing but /metrics (OpenMetrics).
type ServerConfig struct {
	Name     string       // what the server is, for messages ("agent", "configuration server")
	Addr     string       // where to listen, unless Listener is set
	Listener net.Listener // a listener the caller bound (to learn its port first)
	Token    string
	Routes   []Route
	// Metrics, when set, is served at GET /metrics beside the Go and
	// process collectors, which every server has.
	Metrics prometheus.Collector
	// OpenMetrics allows a metrics-only server (no Routes) off loopback
	// without a token: a plain dgsend/dgrecv run that Prometheus scrapes.
	OpenMetrics  bool
	MaxConns     int           // DefaultMaxConns when 0
	WriteTimeout time.Duration // DefaultWriteTimeout when 0
}

// Server is an HTTP server built by Serve: authenticated, bounded, with
// timeouts. It is the only way the project serves HTTP.
type Server struct {
	name    string
	addr    string
	routes  []string
	handler http.Handler
	srv     *http.Server
	limit   *connLimiter
}

// Serve checks cfg (a token off loopback, valid patterns), listens and
// serves it in the background. Authentication wraps the whole mux, so no
// route, and no path that matches none, is reachable without the token.
func Serve(cfg ServerConfig) (*Server, error) {
	if cfg.Name == "" {
		cfg.Name = "server"
	}
	if err := CheckToken(cfg.Token); err != nil {
		return nil, err
	}
	addr := cfg.Addr
	if cfg.Listener != nil {
		addr = cfg.Listener.Addr().String()
	}
	if !(cfg.OpenMetrics && len(cfg.Routes) == 0) {
		if err := CheckBind(addr, cfg.Token); err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Name, err)
		}
	}
	mux, routes, err := buildMux(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Name, err)
	}
	ln := cfg.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.Addr); err != nil {
			return nil, fmt.Errorf("%s: listen on %s: %w", cfg.Name, cfg.Addr, err)
		}
	}
	maxConns := cfg.MaxConns
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
		// Connections may take at most a quarter of the descriptors free
		// at start: the rest are for the trials' sockets and files.
		if free, ok := fdlimit.Free(); ok && free/4 < maxConns {
			maxConns = max(free/4, 4)
		}
	}
	wt := cfg.WriteTimeout
	if wt <= 0 {
		wt = DefaultWriteTimeout
	}
	s := &Server{name: cfg.Name, addr: ln.Addr().String(), routes: routes, limit: newConnLimiter(maxConns)}
	s.handler = authenticate(cfg.Token, s.limit.trusting(mux))
	s.srv = &http.Server{
		Handler:           s.handler,
		ConnContext:       withConn,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      wt,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ConnState:         s.limit.track,
		ErrorLog:          nil,
	}
	go func() {
		if err := s.srv.Serve(s.limit.wrap(ln)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "%s: %v\n", cfg.Name, err)
		}
	}()
	return s, nil
}

func buildMux(cfg ServerConfig) (*http.ServeMux, []string, error) {
	mux := http.NewServeMux()
	var routes []string
	add := func(pattern string, h http.Handler) (err error) {
		defer func() { // ServeMux panics on a bad or duplicate pattern: a programming error, said as one
			if r := recover(); r != nil {
				err = fmt.Errorf("route %q: %v", pattern, r)
			}
		}()
		mux.Handle(pattern, h)
		routes = append(routes, pattern)
		return nil
	}
	reg := prometheus.NewRegistry()
	if cfg.Metrics != nil {
		if err := reg.Register(cfg.Metrics); err != nil {
			return nil, nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := add("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{})); err != nil {
		return nil, nil, err
	}
	for _, r := range cfg.Routes {
		if r.Handler == nil {
			return nil, nil, fmt.Errorf("route %q has no handler", r.Pattern)
		}
		if err := add(r.Pattern, r.Handler); err != nil {
			return nil, nil, err
		}
	}
	sort.Strings(routes)
	return mux, routes, nil
}

// Addr is the bound address (useful with port 0).
func (s *Server) Addr() string { return s.addr }

// URL is "http://" and the bound address.
func (s *Server) URL() string { return "http://" + s.addr }

// Routes lists every pattern the server answers, sorted.
func (s *Server) Routes() []string { return append([]string(nil), s.routes...) }

// Handler is the whole served handler, authentication included (tests).
func (s *Server) Handler() http.Handler { return s.handler }

// Refused counts connections closed at once because the server was full
// of busy trusted connections.
func (s *Server) Refused() int64 { return s.limit.refused.Load() }

// Evicted counts connections closed to make room for a new one.
func (s *Server) Evicted() int64 { return s.limit.evicted.Load() }

// Close stops the server and closes every connection.
func (s *Server) Close() { _ = s.srv.Close() }

// authenticate refuses every request without the token (401, a JSON
// error), whatever its path. It takes "Authorization: Bearer TOKEN" (the
// controller, curl, Prometheus' authorization) or HTTP Basic with the
// token as the password (a browser's own prompt, for cpsweep watch's page).
// The comparisons take constant time.
func authenticate(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	bearer := []byte("Bearer " + token)
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		ok := subtle.ConstantTimeCompare(got, bearer) == 1
		if !ok {
			if _, pass, basic := r.BasicAuth(); basic {
				ok = subtle.ConstantTimeCompare([]byte(pass), want) == 1
			}
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="cloudprofiler (any user name; the token as password)"`)
			ReplyError(w, http.StatusUnauthorized, ErrUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// connLimiter holds at most max connections, of which at most a quarter
// are strangers' (no request on them has passed authentication yet). A new
// connection evicts the oldest stranger when strangers hold their share
// (one that has sent nothing first), else, at the limit, the longest-idle
// trusted connection, else the oldest stranger; with none of those it is
// closed at once.
type connLimiter struct {
	max, maxUntrusted int
	mu                sync.Mutex
	conns             map[*limitedConn]connInfo
	untrusted         int
	refused           atomic.Int64
	evicted           atomic.Int64
}

type connInfo struct {
	state    http.ConnState
	since    time.Time // in this state
	admitted time.Time
}

func newConnLimiter(most int) *connLimiter {
	return &connLimiter{max: most, maxUntrusted: max(most/untrustedShare, 2), conns: map[*limitedConn]connInfo{}}
}

func (l *connLimiter) wrap(ln net.Listener) net.Listener { return &limitedListener{Listener: ln, l: l} }

// track follows each connection's state (http.Server's ConnState hook).
func (l *connLimiter) track(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	info, ok := l.conns[c]
	if !ok {
		return
	}
	if st == http.StateClosed || st == http.StateHijacked {
		l.forget(c, info)
		return
	}
	info.state, info.since = st, time.Now()
	l.conns[c] = info
}

// forget drops c (l.mu held).
func (l *connLimiter) forget(c *limitedConn, info connInfo) {
	delete(l.conns, c)
	if !c.trusted.Load() {
		l.untrusted--
	}
}

// admit takes c, evicting as the type says; false means c must be
// closed.
func (l *connLimiter) admit(c *limitedConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.untrusted >= l.maxUntrusted || len(l.conns) >= l.max {
		// a silent stranger first: a client sends its request as soon as
		// it connects, so the newest connection that has spoken is the
		// likeliest to be one
		victim := l.oldest(false, http.StateNew, admittedAt)
		if victim == nil {
			victim = l.oldest(false, -1, admittedAt)
		}
		if l.untrusted < l.maxUntrusted {
			if idle := l.oldest(true, http.StateIdle, inStateAt); idle != nil {
				victim = idle
			}
		}
		if victim == nil {
			l.refused.Add(1)
			return false
		}
		l.evicted.Add(1)
		_ = victim.Conn.Close()
		l.forget(victim, l.conns[victim])
	}
	now := time.Now()
	c.until = now.Add(UntrustedTimeout)
	_ = c.Conn.SetDeadline(c.until)
	l.conns[c] = connInfo{state: http.StateNew, since: now, admitted: now}
	l.untrusted++
	return true
}

// oldest is the trusted (or stranger's) connection in state (-1: any)
// with the earliest time by when (l.mu held).
func (l *connLimiter) oldest(trusted bool, state http.ConnState, when func(connInfo) time.Time) *limitedConn {
	var found *limitedConn
	var at time.Time
	for c, info := range l.conns {
		if c.trusted.Load() == trusted && (state < 0 || info.state == state) && (found == nil || when(info).Before(at)) {
			found, at = c, when(info)
		}
	}
	return found
}

// A stranger's age is from its accept (a slow one changes state late);
// an idle connection's from when it fell idle.
func admittedAt(i connInfo) time.Time { return i.admitted }
func inStateAt(i connInfo) time.Time  { return i.since }

// trust makes c a trusted connection: its deadlines are the server's own
// from now on.
func (l *connLimiter) trust(c *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.conns[c]; !ok || c.trusted.Load() {
		return
	}
	l.untrusted--
	c.trusted.Store(true)                                   // under l.mu: the count and the flag change together
	_ = c.Conn.SetReadDeadline(time.Now().Add(ReadTimeout)) // the body of the request that earned it
}

// trusting marks the connection of every request that reaches next (past
// authentication) as trusted.
func (l *connLimiter) trusting(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(*limitedConn); ok && !c.trusted.Load() {
			l.trust(c)
		}
		next.ServeHTTP(w, r)
	})
}

type connKey struct{}

// withConn puts a request's connection in its context (http.Server's
// ConnContext hook), for trusting.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// limitedConn is an admitted connection. Until it is trusted no deadline
// the server sets goes past until: a stranger's connection ends
// UntrustedTimeout after its accept, however slowly it sends.
type limitedConn struct {
	net.Conn
	until   time.Time // set before the server sees the connection
	trusted atomic.Bool
}

func (c *limitedConn) capped(t time.Time) time.Time {
	if c.trusted.Load() || !t.IsZero() && t.Before(c.until) {
		return t
	}
	return c.until
}

func (c *limitedConn) SetDeadline(t time.Time) error     { return c.Conn.SetDeadline(c.capped(t)) }
func (c *limitedConn) SetReadDeadline(t time.Time) error { return c.Conn.SetReadDeadline(c.capped(t)) }

type limitedListener struct {
	net.Listener
	l *connLimiter
}

func (ll *limitedListener) Accept() (net.Conn, error) {
	for {
		nc, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c := &limitedConn{Conn: nc}
		if ll.l.admit(c) {
			return c, nil
		}
		_ = nc.Close()
	}
}

// ServeMetrics serves /metrics for the collector on addr ("" disables),
// openly (a plain run's read-only metrics), and returns the bound address
// and a shutdown function.
func ServeMetrics(addr string, c prometheus.Collector) (string, func(), error) {
	if addr == "" {
		return "", func() {}, nil
	}
	s, err := Serve(ServerConfig{Name: "metrics server", Addr: addr, Metrics: c, OpenMetrics: true})
	if err != nil {
		return "", nil, fmt.Errorf("%w (use --metrics-addr to pick another, or \"\" to disable)", err)
	}
	return s.Addr(), s.Close, nil
}
