package httpapi

import (
	"net/http"
	"net/http/httptest"
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
	if _, err := get("/away"); !IsCrossOrigin(err) {
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
