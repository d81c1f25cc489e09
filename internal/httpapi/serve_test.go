package httpapi

import (
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const testToken = "0123456789abcdef-serve"

func teapot() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
}

func TestServeMetrics(t *testing.T) {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"})
	c.Add(3)
	addr, stop, err := ServeMetrics("127.0.0.1:0", c)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "x_total 3") {
		t.Fatalf("metric missing:\n%s", body)
	}
	if _, _, err := ServeMetrics(addr, c); err == nil {
		t.Fatal("second listener on the same address succeeded")
	}
}

// TestServeAuthenticatesEveryPath: with a token, every route, /metrics and
// paths that match no route answer 401 without it; Bearer and Basic (the
// token as password) are let in, nothing else is.
func TestServeAuthenticatesEveryPath(t *testing.T) {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "y_total", Help: "y"})
	s, err := Serve(ServerConfig{Addr: "127.0.0.1:0", Token: testToken, Metrics: c,
		Routes: []Route{{"GET /v1/a", teapot()}, {"PUT /v1/b", teapot()}, {"/v1/", teapot()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := strings.Join(s.Routes(), ","); got != "/v1/,GET /metrics,GET /v1/a,PUT /v1/b" {
		t.Fatalf("routes: %s", got)
	}
	basic := func(pass string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte("anyone:"+pass)) }
	for _, tc := range []struct {
		method, path, auth string
		want               int
	}{
		{"GET", "/v1/a", "", 401},
		{"PUT", "/v1/b", "", 401},
		{"GET", "/metrics", "", 401},
		{"GET", "/nothing/here", "", 401},
		{"GET", "/v1/a", "Bearer " + testToken[:len(testToken)-1], 401},
		{"GET", "/v1/a", testToken, 401},
		{"GET", "/v1/a", basic("wrong"), 401},
		{"GET", "/v1/a", "Bearer " + testToken, http.StatusTeapot},
		{"GET", "/v1/a", basic(testToken), http.StatusTeapot},
		{"GET", "/metrics", "Bearer " + testToken, 200},
		{"GET", "/nothing/here", "Bearer " + testToken, 404},
	} {
		req, _ := http.NewRequest(tc.method, s.URL()+tc.path, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s with %q: %d, want %d", tc.method, tc.path, tc.auth, resp.StatusCode, tc.want)
		}
		if tc.want == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
			t.Errorf("%s %s: 401 without a WWW-Authenticate challenge", tc.method, tc.path)
		}
	}
}

func TestServeRefusesUnsafeConfigurations(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ServerConfig
		want string
	}{
		{"public without a token", ServerConfig{Addr: "0.0.0.0:0", Routes: []Route{{"GET /x", teapot()}}}, "--token-file"},
		{"public metrics and a route", ServerConfig{Addr: "0.0.0.0:0", OpenMetrics: true, Metrics: prometheus.NewCounter(prometheus.CounterOpts{Name: "z", Help: "z"}), Routes: []Route{{"GET /x", teapot()}}}, "--token-file"},
		{"a short token", ServerConfig{Addr: "127.0.0.1:0", Token: "short"}, "at least 16"},
		{"a duplicate route", ServerConfig{Addr: "127.0.0.1:0", Routes: []Route{{"GET /x", teapot()}, {"GET /x", teapot()}}}, "route"},
		{"a route without a handler", ServerConfig{Addr: "127.0.0.1:0", Routes: []Route{{"GET /x", nil}}}, "no handler"},
	} {
		s, err := Serve(tc.cfg)
		if err == nil {
			s.Close()
			t.Errorf("%s: served", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// Open metrics alone may be public: a plain run that Prometheus scrapes.
	s, err := Serve(ServerConfig{Addr: "0.0.0.0:0", OpenMetrics: true, Metrics: prometheus.NewCounter(prometheus.CounterOpts{Name: "z", Help: "z"})})
	if err != nil {
		t.Fatalf("public metrics only: %v", err)
	}
	s.Close()
}

// TestServeBoundsConnections: idle connections beyond the limit are evicted
// (oldest first) instead of holding descriptors, strangers' connections
// hold their share at the most and not for long; a request still gets in.
func TestServeBoundsConnections(t *testing.T) {
	s, err := Serve(ServerConfig{Addr: "127.0.0.1:0", MaxConns: 4, Routes: []Route{{"GET /x", teapot()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Ten keep-alive connections, each left idle after one request.
	var conns []net.Conn
	for i := 0; i < 10; i++ {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 512)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(buf); err != nil || !strings.Contains(string(buf[:n]), "418") {
			t.Fatalf("connection %d: %q %v", i, buf[:n], err)
		}
		conns = append(conns, c)
	}
	closed := 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
	}
	if closed < 6 {
		t.Fatalf("%d of 10 idle connections closed by a server that holds 4", closed)
	}
	// Connections that never send a request are strangers': they hold
	// two slots of four at the most, a new one evicts the oldest, and
	// each goes UntrustedTimeout after its accept, not after the header
	// timeout.
	var slow []net.Conn
	for i := 0; i < 4; i++ {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		slow = append(slow, c)
	}
	start := time.Now()
	for _, c := range slow {
		_ = c.SetReadDeadline(time.Now().Add(ReadHeaderTimeout + 5*time.Second))
		_, _ = c.Read(make([]byte, 512))
	}
	if took := time.Since(start); took > UntrustedTimeout+time.Second {
		t.Fatalf("connections that sent nothing were held %v (a stranger's %v)", took, UntrustedTimeout)
	}
	if s.Evicted() < 2 {
		t.Fatalf("%d evicted: four strangers fit in a share of two", s.Evicted())
	}
	resp, err := http.Get(s.URL() + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Fatalf("after the slow connections: %d", resp.StatusCode)
	}
}

// flood opens n connections to addr until stop, each silent or sending
// its headers a byte every 100 ms, and opens another as soon as one is
// closed, but no sooner than every (bounded). It returns how many it
// opened.
func flood(addr string, n int, every time.Duration, stop <-chan struct{}) *atomic.Int64 {
	var opened atomic.Int64
	for i := range n {
		go func() {
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				c, err := net.Dial("tcp", addr)
				if err != nil {
					continue
				}
				opened.Add(1)
				if i%2 == 1 { // slow headers: a byte every 100 ms until the server closes it
					slowHeaders(c, stop)
				}
				_, _ = c.Read(make([]byte, 1)) // until the server closes it
				c.Close()
			}
		}()
	}
	return &opened
}

func slowHeaders(c net.Conn, stop <-chan struct{}) {
	for _, b := range []byte("GET /v1/info HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 100)) {
		if _, err := c.Write([]byte{b}); err != nil {
			return
		}
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestStrangersCannotLockOutTheController: seventy connections without
// the token, silent or sending their headers slowly, reopened as soon as
// they close, leave an authenticated client at least 99% of its requests
// answered, quickly: the controller's, which keeps its connections, under
// a flood as fast as the strangers can go (each reopens up to 200 times a
// second); a client that opens a new connection for every request under
// a flood of 80 connections a second (the rate that locked the agents
// out). Under the fastest flood such a client still gets a share of its
// answers (the controller asks a GET again when its new connection was
// closed early).
func TestStrangersCannotLockOutTheController(t *testing.T) {
	s, err := Serve(ServerConfig{Addr: "127.0.0.1:0", Token: testToken, Routes: []Route{{"GET /v1/info", teapot()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		name  string
		every time.Duration // each stranger's connections at most this often
		fresh bool
		least int // of 200 answered
	}{
		{"keep-alive, the fastest flood", 5 * time.Millisecond, false, 198},
		{"a new connection a request, 80 strangers' connections a second", 875 * time.Millisecond, true, 198},
		// most here (146-175 of 200); a share whatever the host's load
		{"a new connection a request, the fastest flood", 5 * time.Millisecond, true, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan struct{})
			defer close(stop)
			opened := flood(s.Addr(), 70, tc.every, stop)
			time.Sleep(time.Second) // the flood in place first
			client := NewClient(2 * time.Second)
			client.Transport = retrying{&http.Transport{DisableKeepAlives: tc.fresh}}
			began, evicted := opened.Load(), s.Evicted()
			start := time.Now()
			ok, p99, median := askUnderFlood(t, client, s.URL()+"/v1/info", 200)
			rate := float64(opened.Load()-began) / time.Since(start).Seconds()
			t.Logf("%d of 200 answered, p99 %v, median %v, under %.0f strangers' connections a second (%d evicted)", ok, p99, median, rate, s.Evicted()-evicted)
			if ok < tc.least {
				t.Errorf("%d of 200 requests answered under the flood, want %d", ok, tc.least)
			}
			if p99 > time.Second {
				t.Errorf("p99 %v under the flood", p99)
			}
		})
	}
}

// askUnderFlood makes n authenticated requests, 10 ms apart, and returns
// how many were answered, and the p99 and median of their times.
func askUnderFlood(t *testing.T, client *http.Client, url string, n int) (int, time.Duration, time.Duration) {
	var lat []time.Duration
	ok := 0
	for range n {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		start := time.Now()
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusTeapot {
				ok++
			}
		}
		lat = append(lat, time.Since(start))
		time.Sleep(10 * time.Millisecond)
	}
	slices.Sort(lat)
	return ok, lat[len(lat)*99/100], lat[len(lat)/2]
}
