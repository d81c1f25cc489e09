package profiler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/internal/readfile"
)

// A configuration source is a YAML file or the URL of a configuration
// server (http:// or https://) that serves the same YAML: every process of
// an experiment can follow one server, and a change there switches their
// channels live (Follow).

// PathHandlers is where a configuration server serves the handlers.
const PathHandlers = "/v1/profiler/handlers"

// FetchHandlers reads a handler configuration from a file or a server
// (token: sent as a bearer token, may be empty). It also returns the raw
// bytes, so a follower can tell whether anything changed.
func FetchHandlers(ctx context.Context, source, token string) (*Handlers, []byte, error) {
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
		data, err = io.ReadAll(io.LimitReader(resp.Body, MaxHandlersBytes+1))
		if err != nil {
			return nil, nil, fmt.Errorf("handler configuration %s: %w", source, err)
		}
		if len(data) > MaxHandlersBytes && resp.StatusCode == http.StatusOK {
			return nil, nil, fmt.Errorf("handler configuration %s: above the limit of %d bytes: refused (a configuration is never applied in part)", source, MaxHandlersBytes)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, nil, fmt.Errorf("handler configuration %s: %s: %s", source, resp.Status, bytes.TrimSpace(data[:min(len(data), 512)]))
		}
	} else {
		var err error
		if data, err = readfile.Limited(source, MaxHandlersBytes); err != nil {
			return nil, nil, fmt.Errorf("handler configuration: %w", err)
		}
	}
	h, err := ParseHandlers(data, source)
	return h, data, err
}

// FromSource returns a profiler confined to dir (see NewIn) with the
// handlers of a file or a configuration server, or nil and nil when source
// is empty. A configuration that names a path outside dir is refused.
func FromSource(ctx context.Context, source, token, dir string, period time.Duration) (*Profiler, *Handlers, error) {
	if source == "" {
		return nil, nil, nil
	}
	h, _, err := FetchHandlers(ctx, source, token)
	if err != nil {
		return nil, nil, err
	}
	if err := h.CheckLocal(); err != nil {
		return nil, nil, fmt.Errorf("handler configuration %s: %w", source, err)
	}
	p, err := NewFor(dir, h, "", period)
	if err != nil {
		return nil, nil, err
	}
	return p, h, nil
}

// NewFor is the profiler of a handler configuration, confined to dir (see
// NewIn): counters sampled every period (0: every second; the stage
// accounting's period, so that both sample in lock step) and written at
// Close to counters, or when that is "" to the configuration's counters
// path (if any). An agent fixes the name so that cpsweep finds the file.
func NewFor(dir string, h *Handlers, counters string, period time.Duration) (*Profiler, error) {
	p, err := NewIn(dir, period)
	if err != nil {
		return nil, err
	}
	p.CountersPath = counters
	if counters == "" {
		p.CountersPath = h.Counters
	}
	return p, nil
}

// Apply switches every open channel whose configuration in h differs from
// its current one, and returns the names of those it switched. A channel
// whose new configuration is refused keeps its handler; the errors are
// joined.
func (p *Profiler) Apply(h *Handlers) ([]string, error) {
	if p.root != nil {
		if err := h.CheckLocal(); err != nil {
			return nil, err // not one channel switched
		}
	}
	p.mu.Lock()
	names := make([]string, 0, len(p.channels))
	for name := range p.channels {
		names = append(names, name)
	}
	p.mu.Unlock()
	sort.Strings(names)
	var changed []string
	var errs []error
	for _, name := range names {
		p.mu.Lock()
		c := p.channels[name]
		p.mu.Unlock()
		want := h.For(name).forChannel(name)
		if sameConfig(c.Config(), want) {
			continue
		}
		if err := p.Switch(name, want); err != nil {
			errs = append(errs, err)
			continue
		}
		changed = append(changed, name)
	}
	return changed, errors.Join(errs...)
}

func sameConfig(a, b Config) bool {
	norm := func(c Config) Config {
		if c.Handler == "" {
			c.Handler = HandlerNull
		}
		if c.Format == "" {
			c.Format = FormatBinary
		}
		return c
	}
	return norm(a) == norm(b)
}

// Follow polls source every period until ctx ends and applies every change
// of its content; report (may be nil) hears of each switch and error. A
// source that cannot be read or parsed leaves every channel as it is.
func (p *Profiler) Follow(ctx context.Context, source, token string, every time.Duration, report func(changed []string, err error)) {
	if report == nil {
		report = func([]string, error) {}
	}
	// The first fetch is applied too (channels already as configured are
	// left alone): a change made before it must not be missed.
	var last []byte
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h, data, err := FetchHandlers(ctx, source, token)
		if err != nil {
			if ctx.Err() == nil {
				report(nil, err)
			}
			continue
		}
		if last != nil && bytes.Equal(data, last) {
			continue
		}
		last = data
		if changed, err := p.Apply(h); len(changed) > 0 || err != nil {
			report(changed, err)
		}
	}
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

// ServeConfig serves the handler configuration in file on addr, with the
// token on every route (cpsweep profiler serve).
func ServeConfig(addr, token, file string) (*httpapi.Server, error) {
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
		if data, err = readfile.Limited(s.File, MaxHandlersBytes); err != nil {
			httpapi.ReplyError(w, http.StatusInternalServerError, errors.New("the configuration file cannot be read (or is above 1 MiB)"))
			return
		}
	}
	if h, err := ParseHandlers(data, s.File); err != nil || h.CheckLocal() != nil {
		// never hand out what clients would refuse anyway
		httpapi.ReplyError(w, http.StatusInternalServerError, fmt.Errorf("the served configuration is not valid; fix %s", s.File))
		return
	}
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(data)
}

func (s *ConfigServer) put(w http.ResponseWriter, r *http.Request) {
	data, err := httpapi.ReadBody(w, r, MaxHandlersBytes)
	if err != nil {
		httpapi.ReplyRequestError(w, err)
		return
	}
	h, err := ParseHandlers(data, "request")
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
		if err := writeAtomic(s.File, data); err != nil {
			httpapi.ReplyError(w, http.StatusInternalServerError, fmt.Errorf("store the configuration: %w", err))
			return
		}
	}
	s.data = data
	w.WriteHeader(http.StatusNoContent)
}

// writeAtomic replaces path with data in one step (a temporary file, then
// a rename), so that a GET never serves a half-written configuration.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".handlers-*.yaml")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
