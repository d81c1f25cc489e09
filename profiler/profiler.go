// Package profiler is the Cloudprofiler profiling library (§5): a process
// opens named channels, each with a handler and a log format, and calls
// LogTS(tupleID) at instrumentation points; Close flushes everything.
// Handlers range from Null (a call and nothing else) through periodic
// counters and samplers (Downsample, XoY, FirstLast) to Identity and the
// buffered identity handler, which fills fixed blocks on the calling
// thread and compresses and writes them in the background.
//
// A channel belongs to one writer goroutine (like the paper's per-thread
// channels), except with the multi-writer counter (MPC).
package profiler

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Handler names.
const (
	HandlerNull       = "null"
	HandlerIdentity   = "identity"
	HandlerBuffered   = "buffered"
	HandlerSPC        = "spc"
	HandlerMPC        = "mpc"
	HandlerDownsample = "downsample"
	HandlerXoY        = "xoy"
	HandlerFirstLast  = "firstlast"
)

// Log formats.
const (
	FormatBinary = "binary" // framed, checksummed blocks (see blocks.go)
	FormatASCII  = "ascii"  // "tsc,id" lines
)

// Config says how a channel logs.
type Config struct {
	Handler   string `yaml:"handler" json:"handler"`
	Format    string `yaml:"format,omitempty" json:"format,omitempty"`
	Path      string `yaml:"path,omitempty" json:"path,omitempty"`             // log file (not for null and counters)
	Every     uint64 `yaml:"every,omitempty" json:"every,omitempty"`           // downsample: keep every n-th call
	X         uint64 `yaml:"x,omitempty" json:"x,omitempty"`                   // xoy: keep ids with id mod Y < X
	Y         uint64 `yaml:"y,omitempty" json:"y,omitempty"`                   //
	BlockSize int    `yaml:"block_size,omitempty" json:"block_size,omitempty"` // buffered: records per block (default 1 M)
	Workers   int    `yaml:"workers,omitempty" json:"workers,omitempty"`       // buffered: compression workers (default 1)
	Codec     string `yaml:"codec,omitempty" json:"codec,omitempty"`           // buffered: zstd (default) or none
}

// handler is what a channel calls. Implementations are in this package.
type handler interface {
	log(id uint64)
	logAt(tsc, id uint64) // with a TSC the caller already read
	close() error
}

// Channel is an instrumentation point.
type Channel struct {
	// The two cheapest handlers are tested first, with predictable branches,
	// so they do not pay for a dynamic call (the point of Null and SPC is to
	// cost next to nothing).
	null bool
	spc  *spc
	h    handler
	name string
	cfg  Config
}

// LogTS logs the tuple id (and, depending on the handler, the TSC now).
func (c *Channel) LogTS(id uint64) {
	if c.spc != nil {
		c.spc.c.inc()
	} else if !c.null {
		c.h.log(id)
	}
}

// LogTSAt logs the tuple id with a TSC value the caller already has (e.g.
// the instant it sent the tuple), saving a second read of the clock.
func (c *Channel) LogTSAt(tsc, id uint64) {
	if c.spc != nil {
		c.spc.c.inc()
	} else if !c.null {
		c.h.logAt(tsc, id)
	}
}

// Null reports whether the channel logs nothing, so a caller can skip the
// work of producing ids for it (e.g. a loop over a bucket's tuples).
func (c *Channel) Null() bool { return c.null }

// Name is the channel's name.
func (c *Channel) Name() string { return c.name }

// Profiler owns the channels of a process and the sampler of the periodic
// counters.
type Profiler struct {
	mu       sync.Mutex
	channels map[string]*Channel
	sampler  *sampler
	closed   bool
}

// New returns a profiler whose counters are sampled every period (0: one
// second).
func New(period time.Duration) *Profiler {
	if period <= 0 {
		period = time.Second
	}
	return &Profiler{channels: map[string]*Channel{}, sampler: newSampler(period)}
}

// Open creates the named channel with cfg.
func (p *Profiler) Open(name string, cfg Config) (*Channel, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("profiler is closed")
	}
	if _, ok := p.channels[name]; ok {
		return nil, fmt.Errorf("channel %q is already open", name)
	}
	// "{name}" in a path is the channel's name, so one default can give
	// every channel its own file.
	cfg.Path = strings.ReplaceAll(cfg.Path, "{name}", name)
	h, err := p.newHandler(name, cfg)
	if err != nil {
		return nil, fmt.Errorf("open channel %q: %w", name, err)
	}
	c := &Channel{name: name, h: h, cfg: cfg}
	_, c.null = h.(nullHandler)
	c.spc, _ = h.(*spc)
	p.channels[name] = c
	return c, nil
}

func (p *Profiler) newHandler(name string, cfg Config) (handler, error) {
	if cfg.Format == "" {
		cfg.Format = FormatBinary
	}
	if cfg.Format != FormatBinary && cfg.Format != FormatASCII {
		return nil, fmt.Errorf("format must be %q or %q, got %q", FormatBinary, FormatASCII, cfg.Format)
	}
	switch cfg.Handler {
	case "", HandlerNull:
		return nullHandler{}, nil
	case HandlerSPC:
		return p.sampler.add(name, &spc{}), nil
	case HandlerMPC:
		return p.sampler.add(name, &mpc{}), nil
	}
	if cfg.Path == "" {
		return nil, fmt.Errorf("handler %q needs a log file path", cfg.Handler)
	}
	switch cfg.Handler {
	case HandlerIdentity:
		return newIdentity(cfg)
	case HandlerBuffered:
		return newBuffered(cfg)
	case HandlerDownsample:
		if cfg.Every < 1 {
			return nil, errors.New("downsample needs every >= 1")
		}
		b, err := newBuffered(cfg)
		if err != nil {
			return nil, err
		}
		return &downsample{every: cfg.Every, out: b}, nil
	case HandlerXoY:
		if cfg.Y < 1 || cfg.X > cfg.Y {
			return nil, fmt.Errorf("xoy needs 0 <= x <= y and y >= 1, got x=%d y=%d", cfg.X, cfg.Y)
		}
		b, err := newBuffered(cfg)
		if err != nil {
			return nil, err
		}
		return &xoy{x: cfg.X, y: cfg.Y, out: b}, nil
	case HandlerFirstLast:
		return newFirstLast(cfg)
	}
	return nil, fmt.Errorf("unknown handler %q (null, identity, buffered, spc, mpc, downsample, xoy, firstlast)", cfg.Handler)
}

// Counts returns the periods sampled so far for a counter channel.
func (p *Profiler) Counts(name string) []uint64 { return p.sampler.series(name) }

// Close flushes and closes every channel (no record is lost); LogTS must not
// be called afterwards. A nil profiler closes as a no-op.
func (p *Profiler) Close() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	p.sampler.stop()
	var errs []error
	for _, c := range p.channels {
		if err := c.h.close(); err != nil {
			errs = append(errs, fmt.Errorf("close channel %q: %w", c.name, err))
		}
	}
	return errors.Join(errs...)
}

type nullHandler struct{}

func (nullHandler) log(uint64)           {}
func (nullHandler) logAt(uint64, uint64) {}
func (nullHandler) close() error         { return nil }
