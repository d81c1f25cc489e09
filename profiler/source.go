package profiler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cloudprofiler-go/cp/internal/readfile"
)

// ReadHandlersFile reads a handler configuration from a YAML file (at most
// MaxHandlersBytes). It also returns the raw bytes, so that a follower can
// tell whether anything changed. Package configsrv reads one from a
// configuration server too.
func ReadHandlersFile(path string) (*Handlers, []byte, error) {
	data, err := readfile.Limited(path, MaxHandlersBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("handler configuration: %w", err)
	}
	h, err := ParseHandlers(data, path)
	return h, data, err
}

// Fetcher reads a handler configuration and its raw bytes.
type Fetcher func(ctx context.Context) (*Handlers, []byte, error)

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

// Follow calls fetch every period until ctx ends and applies every change
// of what it returns; report (may be nil) hears of each switch and error.
// A configuration that cannot be read or parsed leaves every channel as it
// is.
func (p *Profiler) Follow(ctx context.Context, fetch Fetcher, every time.Duration, report func(changed []string, err error)) {
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
		h, data, err := fetch(ctx)
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
