package httpapi

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestClientKeepsTheTokenInItsOrigin: a redirect to another port of the
// same host (which Go's client would follow with the Authorization header)
// is refused, and the other server never sees the token; a redirect within
// the origin is followed.
func TestClientKeepsTheTokenInItsOrigin(t *testing.T) {
	var leaked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer other.Close()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
		case "/here":
			http.Redirect(w, r, "/final", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/final":
			if r.Header.Get("Authorization") != "Bearer secret-token-0123456789" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer origin.Close()
	get := func(path string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodGet, origin.URL+path, nil)
		req.Header.Set("Authorization", "Bearer secret-token-0123456789")
		return NewClient(5 * time.Second).Do(req)
	}
	var refused *CrossOriginError
	if _, err := get("/away"); !errors.As(err, &refused) {
		t.Errorf("a redirect to another port: %v, want the cross-origin refusal", err)
	}
	if leaked.Load() != 0 {
		t.Errorf("the other origin received the token %d times", leaked.Load())
	}
	if resp, err := get("/here"); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Errorf("a redirect within the origin: %v %v", resp, err)
	}
	if _, err := get("/loop"); err == nil {
		t.Error("a redirect loop was followed without end")
	}
}

// TestClientAsksAGETAgainWhenClosedEarly: a server that closes a new
// connection before reading it (as a server under a flood of strangers'
// connections does) gets the GET again on a new connection; a POST is not
// sent twice.
func TestClientAsksAGETAgainWhenClosedEarly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if accepted.Add(1)%2 == 1 { // every other connection closed at once
				c.Close()
				continue
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				_, _ = c.Read(buf)
				_, _ = io.WriteString(c, "HTTP/1.1 418 I'm a teapot\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			}()
		}
	}()
	client := NewClient(5 * time.Second)
	resp, err := client.Get("http://" + ln.Addr().String() + "/x")
	if err != nil || resp.StatusCode != http.StatusTeapot {
		t.Fatalf("GET: %v %v", resp, err)
	}
	resp.Body.Close()
	if n := accepted.Load(); n != 2 {
		t.Errorf("%d connections for one GET, want 2 (one closed early, one answered)", n)
	}
	if _, err := client.Post("http://"+ln.Addr().String()+"/x", "text/plain", strings.NewReader("once")); err == nil {
		t.Error("a POST whose connection was closed early succeeded: it was sent again")
	}
}
