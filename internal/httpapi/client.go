package httpapi

import (
	"errors"
	"fmt"
	"net/http"
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
	return &http.Client{Timeout: timeout, CheckRedirect: sameOrigin}
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

// IsCrossOrigin says whether err is a refused redirect.
func IsCrossOrigin(err error) bool {
	var c *CrossOriginError
	return errors.As(err, &c)
}
