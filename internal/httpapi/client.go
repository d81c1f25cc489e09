package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// maxRedirects bounds the redirects a client follows within one origin.
const maxRedirects = 5

// NewClient is the one HTTP client of the project's requests that may
// carry a token (agents, TSC clients, configuration servers). It follows a
// redirect only within the same origin (scheme, host and port): Go's own
// client keeps the Authorization header on a redirect to another port of
// the same host, which would hand the token to whatever listens there.
func NewClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, CheckRedirect: sameOrigin, Transport: retrying{http.DefaultTransport}}
}

// retrying asks a GET or HEAD again, twice at the most, when its
// connection was closed or reset before any reply: a server under a flood
// of strangers' connections closes the newest last, but closes them
// (docs/security.md), and Go's transport asks again only on a connection
// it reused. Such a request changed nothing on the server.
type retrying struct{ next http.RoundTripper }

func (r retrying) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	for try := 0; err != nil && try < 2 && (req.Method == http.MethodGet || req.Method == http.MethodHead) && req.Context().Err() == nil && closedEarly(err); try++ {
		resp, err = r.next.RoundTrip(req)
	}
	return resp, err
}

// closedEarly says whether a request failed because its connection was
// closed or reset before a reply. Go's transport says so of a new
// connection closed before its first byte with an error it does not
// export ("server closed idle connection"): matched by its words.
func closedEarly(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		strings.Contains(err.Error(), "server closed idle connection")
}

func sameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return &CrossOriginError{From: first.Scheme + "://" + first.Host, To: req.URL.Scheme + "://" + req.URL.Host}
	}
	return nil
}

// CrossOriginError is a redirect to another origin, which is not followed.
type CrossOriginError struct{ From, To string }

func (e *CrossOriginError) Error() string {
	return fmt.Sprintf("%s redirects to %s: another origin is not followed (the token would go with it); give the final URL", e.From, e.To)
}
