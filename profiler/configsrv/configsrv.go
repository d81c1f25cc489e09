package configsrv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cloudprofiler-go/cp/internal/atomicfile"
	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/internal/readfile"
	"github.com/cloudprofiler-go/cp/profiler"
)

// A configuration source is a YAML file or the URL of a configuration
// server (http:// or https://) that serves the same YAML: every process of
// an experiment can follow one server, and a change there switches their
// channels live (Follow).

// PathHandlers is where a configuration server serves the handlers.
const PathHandlers = "/v1/profiler/handlers"

// Fetch reads a handler configuration from a file or a server
// (token: sent as a bearer token, may be empty). It also returns the raw
// bytes, so a follower can tell whether anything changed.
func Fetch(ctx context.Context, source, token string) (*profiler.Handlers, []byte, error) {
	var data []byte
	if strings.HasPrefix(source, "http://") || strings.HasPrefix(source, "https://") {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, source, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("handler configuration %s: %w", source, err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpapi.NewClient(10 * time.Second).Do(req)
		if err != nil {
			return nil, nil, fmt.Errorf("handler configuration: %w", err)
		}
		defer resp.Body.Close()
		// One byte more than allowed tells a configuration that is too
		// large from one that fits exactly: it is refused whole, never cut.
		data, err = io.ReadAll(io.LimitReader(resp.Body, profiler.MaxHandlersBytes+1))
		if err != nil {
			return nil, nil, fmt.Errorf("handler configuration %s: %w", source, err)
		}
		if len(data) > profiler.MaxHandlersBytes && resp.StatusCode == http.StatusOK {
			return nil, nil, fmt.Errorf("handler configuration %s: above the limit of %d bytes: refused (a configuration is never applied in part)", source, profiler.MaxHandlersBytes)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, nil, fmt.Errorf("handler configuration %s: %s: %s", source, resp.Status, bytes.TrimSpace(data[:min(len(data), 512)]))
		}
	} else {
		return profiler.ReadHandlersFile(source)
	}
	h, err := profiler.ParseHandlers(data, source)
	return h, data, err
}

// FromSource returns a profiler confined to dir (see profiler.NewIn) with the
// handlers of a file or a configuration server, or nil and nil when source
// is empty. A configuration that names a path outside dir is refused.
func FromSource(ctx context.Context, source, token, dir string, period time.Duration) (*profiler.Profiler, *profiler.Handlers, error) {
	if source == "" {
		return nil, nil, nil
	}
	h, _, err := Fetch(ctx, source, token)
	if err != nil {
		return nil, nil, err
	}
	if err := h.CheckLocal(); err != nil {
		return nil, nil, fmt.Errorf("handler configuration %s: %w", source, err)
	}
	p, err := profiler.NewFor(dir, h, "", period)
	if err != nil {
		return nil, nil, err
	}
	return p, h, nil
}

// Follow polls source (a file or a server) every period until ctx ends
// and applies every change of its content to p (profiler.Profiler.Follow).
func Follow(ctx context.Context, p *profiler.Profiler, source, token string, every time.Duration, report func(changed []string, err error)) {
	p.Follow(ctx, func(ctx context.Context) (*profiler.Handlers, []byte, error) { return Fetch(ctx, source, token) }, every, report)
}

// ConfigServer serves a handler configuration at PathHandlers: GET returns
// it (YAML), PUT replaces it after checking it parses (and writes it back
// to File when set). Processes follow it with Follow. It is served through
// httpapi.Serve, which adds the token check and the limits.
type ConfigServer struct {
	File string // re-read on every GET, so editing it works too
	mu   sync.Mutex
	data []byte // when File is empty
}

// Serve serves the handler configuration in file on addr, with the
// token on every route (cpsweep profiler serve).
func Serve(addr, token, file string) (*httpapi.Server, error) {
	cs := &ConfigServer{File: file}
	return httpapi.Serve(httpapi.ServerConfig{Name: "configuration server", Addr: addr, Token: token, Routes: cs.Routes()})
}

// Routes are the server's routes.
func (s *ConfigServer) Routes() []httpapi.Route {
	return []httpapi.Route{
		{Pattern: "GET " + PathHandlers, Handler: http.HandlerFunc(s.get)},
		{Pattern: "PUT " + PathHandlers, Handler: http.HandlerFunc(s.put)},
	}
}

func (s *ConfigServer) get(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data := s.data
	if s.File != "" {
		var err error
		if data, err = readfile.Limited(s.File, profiler.MaxHandlersBytes); err != nil {
			httpapi.ReplyError(w, http.StatusInternalServerError, errors.New("the configuration file cannot be read (or is above 1 MiB)"))
			return
		}
	}
	if h, err := profiler.ParseHandlers(data, s.File); err != nil || h.CheckLocal() != nil {
		// never hand out what clients would refuse anyway
		httpapi.ReplyError(w, http.StatusInternalServerError, fmt.Errorf("the served configuration is not valid; fix %s", s.File))
		return
	}
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(data)
}

func (s *ConfigServer) put(w http.ResponseWriter, r *http.Request) {
	data, err := httpapi.ReadBody(w, r, profiler.MaxHandlersBytes)
	if err != nil {
		httpapi.ReplyRequestError(w, err)
		return
	}
	h, err := profiler.ParseHandlers(data, "request")
	if err == nil {
		// followers write only inside their profile directories
		err = h.CheckLocal()
	}
	if err != nil {
		httpapi.ReplyError(w, http.StatusBadRequest, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.File != "" {
		if err := atomicfile.Write(s.File, data, 0o644); err != nil {
			httpapi.ReplyError(w, http.StatusInternalServerError, fmt.Errorf("store the configuration: %w", err))
			return
		}
	}
	s.data = data
	w.WriteHeader(http.StatusNoContent)
}
