package profiler

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
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
	Listen    string `yaml:"listen,omitempty" json:"listen,omitempty"`         // ret-start: UDP address for acknowledgements
	AckPath   string `yaml:"ack_path,omitempty" json:"ack_path,omitempty"`     // ret-start: ack log (default path + ".ack")
	Peer      string `yaml:"peer,omitempty" json:"peer,omitempty"`             // ret-end: the ret-start's UDP address
}

// handler is what a channel calls. Implementations are in this package.
type handler interface {
	log(id uint64)
	logAt(tsc, id uint64) // with a TSC the caller already read
	close() error
}

// Kinds of channel state: the two cheapest handlers are tested first, with
// predictable branches, so they do not pay for a dynamic call (the point
// of Null and SPC is to cost next to nothing).
const (
	kindNull uint32 = iota
	kindSPC
	kindOther
)

// state is what a channel does now. It is immutable once published, except
// for the SPC cell its single writer increments.
type state struct {
	kind uint32
	spc  spcCell // kindSPC
	h    handler // kindOther (nil in a transition)
	cfg  Config  // as the handler was opened (a reused path gets .N)
	// asked is the configuration as requested ({name} expanded), what
	// Config reports and Apply compares.
	asked Config
	// A transition (kindOther, h nil): the writer's next call retires prev
	// (the recording handler it may still be inside of) and installs next.
	prev, next *state
}

// Channel is an instrumentation point. Its state is one atomic pointer, so
// Switch can replace the handler under running writers (see Switch).
type Channel struct {
	// st is a *state. An unsafe.Pointer with atomic.LoadPointer keeps
	// LogTS within the inlining budget, which atomic.Pointer[state] does
	// not (its generic Load costs more to the inliner).
	st   unsafe.Pointer
	name string
	p    *Profiler
	mu   sync.Mutex // serialises switches
}

// LogTS and LogTSAt are in logts_norace.go (and logts_race.go for
// race-detector builds).

// LogRangeAt logs the n consecutive ids first, first+1, ... with one TSC
// value (e.g. a bucket of tuples sent at once): one call instead of n. A
// counter counts n calls.
func (c *Channel) LogRangeAt(tsc, first, n uint64) {
	s := c.load()
	switch s.kind {
	case kindNull:
		return
	case kindSPC:
		s.spc.add(n)
		return
	}
	if s.next != nil {
		if s = c.complete(s); s.kind != kindOther {
			c.LogRangeAt(tsc, first, n)
			return
		}
	}
	if r, ok := s.h.(rangeLogger); ok {
		r.logRangeAt(tsc, first, n)
		return
	}
	for i := uint64(0); i < n; i++ {
		s.h.logAt(tsc, first+i)
	}
}

// rangeLogger is a handler that logs a run of consecutive ids faster than
// one call each.
type rangeLogger interface {
	logRangeAt(tsc, first, n uint64)
}

func (c *Channel) load() *state { return (*state)(atomic.LoadPointer(&c.st)) }

func (c *Channel) store(s *state) { atomic.StorePointer(&c.st, unsafe.Pointer(s)) }

func (c *Channel) cas(old, new *state) bool {
	return atomic.CompareAndSwapPointer(&c.st, unsafe.Pointer(old), unsafe.Pointer(new))
}

// slow calls a recording handler, first completing a pending switch. It
// loads the state again rather than take it as an argument: one argument
// less keeps LogTS inlined.
func (c *Channel) slow(id uint64) {
	s := c.load()
	if s.next != nil {
		if s = c.complete(s); s.kind != kindOther {
			c.LogTS(id) // switched to Null or a counter
			return
		}
	}
	s.h.log(id)
}

func (c *Channel) slowAt(tsc, id uint64) {
	s := c.load()
	if s.next != nil {
		if s = c.complete(s); s.kind != kindOther {
			c.LogTSAt(tsc, id)
			return
		}
	}
	s.h.logAt(tsc, id)
}

// complete installs a pending switch's new state. Only the writer knows it
// has left the old handler, so only it retires it (a switcher may have
// replaced the transition meanwhile: then it tries again).
func (c *Channel) complete(s *state) *state {
	for s.next != nil {
		if c.cas(s, s.next) {
			c.p.retire(c.name, s.prev)
		}
		s = c.load()
	}
	return s
}

// Null reports whether the channel logs nothing now, so a caller can skip
// the work of producing ids for it (e.g. a loop over a bucket's tuples).
// Ask per batch, not once: the handler may be switched while running.
func (c *Channel) Null() bool {
	s := c.load()
	if s.next != nil {
		s = s.next
	}
	_, shared := s.h.(nullHandler)
	return s.kind == kindNull || shared
}

// Name is the channel's name.
func (c *Channel) Name() string { return c.name }

// Config is the channel's current configuration.
func (c *Channel) Config() Config {
	s := c.load()
	if s.next != nil {
		return s.next.asked
	}
	return s.asked
}

// Profiler owns the channels of a process and the sampler of the periodic
// counters.
type Profiler struct {
	// CountersPath, if set before Close, is where Close writes the
	// counters' series (a CounterLog as JSON; {pid} is the process id).
	CountersPath string

	mu       sync.Mutex
	channels map[string]*Channel
	sampler  *sampler
	closed   bool
	paths    map[string]int // log paths used so far: a switch never truncates one
	retiring sync.WaitGroup
	errMu    sync.Mutex
	errs     []error
	// return-trip listeners by address, shared by ret-start channels
	retMu        sync.Mutex
	retListeners map[string]*retListener
	// root, if set, confines every file the profiler writes to one
	// directory (NewIn): paths are relative to it, and neither an absolute
	// path, nor "..", nor a symbolic link leads out of it.
	root *os.Root
}

// NewIn returns a profiler (as New) whose logs and counters are written
// only inside dir, which must exist: every path of a handler configuration
// is taken relative to it, and one that would lead outside (absolute, with
// "..", or through a symbolic link) is refused when the channel opens.
func NewIn(dir string, period time.Duration) (*Profiler, error) {
	if period <= 0 {
		period = time.Second
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("profile directory: %w", err)
	}
	p := New(period)
	p.root = root
	return p, nil
}

// openLog creates a log file, inside the profiler's directory when it has
// one. There it never opens a file that exists: every path the profiler
// uses is new (a switch takes another, p.paths), so one that exists is
// someone else's (a user's file named like a log, an earlier run's), and
// is refused rather than truncated.
func (p *Profiler) openLog(path string) (*os.File, error) {
	if p.root == nil {
		return createFile(path)
	}
	if !filepath.IsLocal(path) {
		return nil, fmt.Errorf("log path %q must be relative to the profile directory, without \"..\"", path)
	}
	f, err := p.root.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("log path %q: a file of that name is already in the profile directory, and the profiler never overwrites a file it did not make (give another --profile-dir, or move the file)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("log path %q in the profile directory: %w", path, err)
	}
	return f, nil
}

// New returns a profiler whose counters are sampled every period (0: one
// second).
func New(period time.Duration) *Profiler {
	if period <= 0 {
		period = time.Second
	}
	return &Profiler{channels: map[string]*Channel{}, sampler: newSampler(period), paths: map[string]int{}}
}

// Period is the counters' sampling period.
func (p *Profiler) Period() time.Duration { return p.sampler.period }

// OnSample registers fn, called on the sampler's goroutine right after
// every sample of the counters (the stage accounting samples in lock
// step this way).
func (p *Profiler) OnSample(fn func()) {
	p.sampler.mu.Lock()
	p.sampler.hooks = append(p.sampler.hooks, fn)
	p.sampler.mu.Unlock()
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
	st, err := p.newState(name, cfg)
	if err != nil {
		return nil, fmt.Errorf("open channel %q: %w", name, err)
	}
	c := &Channel{name: name, p: p}
	c.store(st)
	p.channels[name] = c
	return c, nil
}

// Switch replaces the handler of an open channel while writers may be
// calling LogTS (§5.1's online handler configuration, done live). Every
// record goes to exactly one handler: a writer that is inside the old
// handler finishes there, and its next call moves to the new one and
// retires the old one, which is flushed and closed in the background. A
// recording handler that would reuse a path already written in this run
// writes to PATH.N instead, so nothing recorded is ever truncated.
func (p *Profiler) Switch(name string, cfg Config) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("profiler is closed")
	}
	c, ok := p.channels[name]
	if !ok {
		return fmt.Errorf("switch channel %q: not open", name)
	}
	next, err := p.newState(name, cfg)
	if err != nil {
		return fmt.Errorf("switch channel %q: %w", name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		cur := c.load()
		old, abandoned := cur, (*state)(nil)
		if cur.next != nil { // a switch the writer has not picked up yet
			old, abandoned = cur.prev, cur.next
		}
		if next.kind == kindNull && old.cfg.Handler == HandlerMPC {
			// several writers: a Null through the call, so they do not
			// all increment one cell (see LogTS)
			next = &state{kind: kindOther, h: nullHandler{}, cfg: next.cfg, asked: next.asked}
		}
		install := next
		if old.kind == kindOther {
			install = &state{kind: kindOther, prev: old, next: next}
		}
		if !c.cas(cur, install) {
			continue // the writer completed the pending switch meanwhile
		}
		if abandoned != nil {
			p.retire(name, abandoned) // never written to
		}
		if old.kind != kindOther {
			p.retire(name, old) // counters keep being sampled; Null has nothing
		}
		return nil
	}
}

// nullHandler logs nothing (a Null shared by several writers).
type nullHandler struct{}

func (nullHandler) log(uint64)           {}
func (nullHandler) logAt(uint64, uint64) {}
func (nullHandler) close() error         { return nil }

// retire closes a state's handler in the background; counters stay with
// the sampler, so a writer's late increment still counts.
func (p *Profiler) retire(name string, s *state) {
	if s == nil || s.kind != kindOther || s.h == nil {
		return
	}
	p.retiring.Add(1)
	go func() {
		defer p.retiring.Done()
		if err := s.h.close(); err != nil {
			p.errMu.Lock()
			p.errs = append(p.errs, fmt.Errorf("close channel %q (switched away): %w", name, err))
			p.errMu.Unlock()
		}
	}()
}

// forChannel is cfg for the channel name: "{name}" in its path is the
// channel's name, so that one default gives every channel its own file.
// It is the one place the expansion happens.
func (cfg Config) forChannel(name string) Config {
	cfg.Path = strings.ReplaceAll(cfg.Path, "{name}", name)
	return cfg
}

func (p *Profiler) newState(name string, cfg Config) (*state, error) {
	cfg = cfg.forChannel(name)
	asked := cfg
	if cfg.Path != "" {
		base := cfg.Path
		if n := p.paths[base]; n > 0 {
			cfg.Path = fmt.Sprintf("%s.%d", base, n)
		}
		defer func() { p.paths[base]++ }()
	}
	st := &state{cfg: cfg, asked: asked}
	spec, err := specOf(cfg.Handler)
	if err != nil {
		return nil, err
	}
	switch spec.kind {
	case kindNull:
		st.kind = kindNull
		return st, validFormat(cfg)
	case kindSPC:
		if err := validFormat(cfg); err != nil {
			return nil, err
		}
		st.kind = kindSPC
		p.sampler.add(name, &st.spc)
		return st, nil
	}
	h, err := p.newHandler(name, spec, cfg)
	if err != nil {
		return nil, err
	}
	st.kind, st.h = kindOther, h
	return st, nil
}

func validFormat(cfg Config) error {
	if cfg.Format != "" && cfg.Format != FormatBinary && cfg.Format != FormatASCII {
		return fmt.Errorf("format must be %q or %q, got %q", FormatBinary, FormatASCII, cfg.Format)
	}
	return nil
}

// newHandler makes a handler that runs through a dynamic call, checking
// its parameters again (a configuration may come straight from code).
func (p *Profiler) newHandler(name string, spec handlerSpec, cfg Config) (handler, error) {
	if err := validFormat(cfg); err != nil {
		return nil, err
	}
	if cfg.Format == "" {
		cfg.Format = FormatBinary
	}
	if spec.check != nil {
		if err := spec.check(cfg); err != nil {
			return nil, err
		}
	}
	if spec.logs && cfg.Path == "" {
		return nil, fmt.Errorf("handler %q needs a log file path", cfg.Handler)
	}
	return spec.make(p, name, cfg)
}

// Counts returns the periods sampled so far for a counter channel.
func (p *Profiler) Counts(name string) []uint64 { return p.sampler.series(name) }
