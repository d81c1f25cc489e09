package httpapi

import (
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strings"
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
// (oldest first) instead of holding descriptors; a request still gets in.
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
	// Four connections that never send a request fill the server; a fifth
	// is closed at once (none is idle), and the slow ones go after the
	// header timeout.
	var slow []net.Conn
	for i := 0; i < 4; i++ {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		slow = append(slow, c)
	}
	deadline := time.Now().Add(2 * time.Second)
	for s.Refused() == 0 && time.Now().Before(deadline) {
		c, err := net.Dial("tcp", s.Addr())
		if err == nil {
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			_, _ = c.Read(make([]byte, 1))
			c.Close()
		}
	}
	if s.Refused() == 0 {
		t.Fatal("a full server of connections that sent nothing took another")
	}
	start := time.Now()
	for _, c := range slow {
		_ = c.SetReadDeadline(time.Now().Add(ReadHeaderTimeout + 5*time.Second))
		_, _ = c.Read(make([]byte, 512))
	}
	if took := time.Since(start); took > ReadHeaderTimeout+3*time.Second {
		t.Fatalf("connections that sent nothing were held %v (header timeout %v)", took, ReadHeaderTimeout)
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
