package profiler

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cloudprofiler-go/cp/internal/readfile"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
)

// Handlers maps channel names to their configuration (the paper's online
// handler configuration, §5.1): a channel looks its handler up by name when
// it opens, so the same instrumented binary logs more or less per run.
//
// A YAML file:
//
//	default: {handler: null}
//	channels:
//	  receive: {handler: buffered, path: /tmp/receive.log}
//	  consume: {handler: spc}
//
// Parsed once (ParseHandlers), it travels typed: a controller sends an
// agent its trial's Handlers as JSON, which the agent checks (Validate,
// CheckLocal) without parsing YAML again.
type Handlers struct {
	Default  Config            `yaml:"default" json:"default"`
	Channels map[string]Config `yaml:"channels" json:"channels,omitempty"`
	// Counters, if set, is where the periodic counters' series are written
	// (JSON) when the profiler closes ({pid} is the process id).
	Counters string `yaml:"counters,omitempty" json:"counters,omitempty"`
}

// For returns the configuration of a channel (the default if it is not
// listed; a default without a handler is Null).
func (h *Handlers) For(name string) Config {
	if h != nil {
		if c, ok := h.Channels[name]; ok {
			return c
		}
		return h.Default
	}
	return Config{Handler: HandlerNull}
}

// Limits of a handler configuration (from a file, a server or a request).
const (
	MaxHandlersBytes = 1 << 20
	MaxChannels      = 4096
	MaxNameLen       = 256
	MaxPathLen       = 1024
	MaxBlockSize     = 1 << 24
	MaxWorkers       = 16
)

// ParseHandlers reads a handler configuration and validates it (Validate);
// unknown keys are errors, so a typo does not silently turn a channel into
// Null.
func ParseHandlers(data []byte, source string) (*Handlers, error) {
	if len(data) > MaxHandlersBytes {
		return nil, fmt.Errorf("handler configuration %s is larger than %d bytes", source, MaxHandlersBytes)
	}
	var h Handlers
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	// An empty document is an error too: a file caught half-written (being
	// saved) must not switch every channel to Null.
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("handler configuration %s: %w", source, readfile.YAMLError(err))
	}
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("handler configuration %s: %w", source, err)
	}
	return &h, nil
}

// recording says whether a handler writes a log file.
func recording(handler string) bool {
	spec, err := specOf(handler)
	return err == nil && spec.logs
}

// Validate checks a channel's configuration: a known handler, the
// parameters it needs, each in range. It opens and allocates nothing.
func (c Config) Validate() error {
	spec, err := specOf(c.Handler)
	if err != nil {
		return err
	}
	if spec.check != nil {
		if err := spec.check(c); err != nil {
			return err
		}
	}
	if err := validFormat(c); err != nil {
		return err
	}
	if recording(c.Handler) && c.Path == "" {
		return fmt.Errorf("handler %q needs a log file path", c.Handler)
	}
	if len(c.Path) > MaxPathLen || len(c.AckPath) > MaxPathLen {
		return fmt.Errorf("paths are at most %d bytes", MaxPathLen)
	}
	if err := plainPath(c.Path); err != nil {
		return err
	}
	if err := plainPath(c.AckPath); err != nil {
		return err
	}
	if c.BlockSize < 0 || c.BlockSize > MaxBlockSize {
		return fmt.Errorf("block_size must be 0 (default) to %d records, got %d", MaxBlockSize, c.BlockSize)
	}
	if c.Workers < 0 || c.Workers > MaxWorkers {
		return fmt.Errorf("workers must be 0 (default) to %d, got %d", MaxWorkers, c.Workers)
	}
	if c.Codec != "" && c.Codec != "zstd" && c.Codec != "none" {
		return fmt.Errorf("codec must be zstd or none, got %.32q", c.Codec)
	}
	for _, addr := range []string{c.Listen, c.Peer} {
		if _, _, err := net.SplitHostPort(addr); addr != "" && err != nil {
			return fmt.Errorf("%.64q is not a UDP address host:port", addr)
		}
	}
	return nil
}

// Validate checks every channel's configuration (see Config.Validate).
func (h *Handlers) Validate() error {
	if len(h.Channels) > MaxChannels {
		return fmt.Errorf("at most %d channels, got %d", MaxChannels, len(h.Channels))
	}
	if err := h.Default.Validate(); err != nil {
		return fmt.Errorf("default: %w", err)
	}
	for name, c := range h.Channels {
		if name == "" || len(name) > MaxNameLen {
			return fmt.Errorf("channel names are 1 to %d bytes", MaxNameLen)
		}
		if !termsafe.Safe(name) {
			return fmt.Errorf("channel %s: a name with control characters", termsafe.Escape(name))
		}
		if err := c.Validate(); err != nil {
			return fmt.Errorf("channel %.64q: %w", name, err)
		}
	}
	if len(h.Counters) > MaxPathLen {
		return fmt.Errorf("counters: paths are at most %d bytes", MaxPathLen)
	}
	if err := plainPath(h.Counters); err != nil {
		return fmt.Errorf("counters: %w", err)
	}
	return nil
}

// plainPath refuses a path with a control character (a NUL, which no file
// name may hold, a newline or an escape): the configuration server would
// store it, and every follower would then fail to open its log.
func plainPath(p string) error {
	if !termsafe.Safe(p) {
		return fmt.Errorf("path %s holds a control character or invalid UTF-8", termsafe.Escape(p))
	}
	return nil
}

// CheckLocal refuses a configuration that names a file outside the
// directory it will be written in, or one that is not a log of the
// profiler's: every path (logs, acknowledgement logs, counters) must be
// relative, must not climb with "..", and must end as the profiler's own
// files do (logs NAME.log or NAME.ack, counters NAME.json), so that a
// configuration server cannot name a user's file in the directory. This
// is the rule of dgsend, dgrecv and the agents, which write only inside
// their profile directory (symbolic links out of it are refused when a
// file is opened, and a file that exists is never overwritten).
func (h *Handlers) CheckLocal() error {
	check := func(what, path string, endings ...string) error {
		if path == "" {
			return nil
		}
		p := strings.NewReplacer("{name}", "n", "{pid}", "1").Replace(path)
		if !filepath.IsLocal(p) {
			return fmt.Errorf("%s path %.64q must be relative to the profile directory and stay inside it (no leading /, no \"..\")", what, path)
		}
		for _, e := range endings {
			if strings.HasSuffix(p, e) && len(filepath.Base(p)) > len(e) {
				return nil
			}
		}
		return fmt.Errorf("%s path %.64q: a profile directory holds only the profiler's own files, named NAME%s", what, path, strings.Join(endings, " or NAME"))
	}
	if err := check("counters", h.Counters, ".json"); err != nil {
		return err
	}
	for _, c := range append([]Config{h.Default}, mapValues(h.Channels)...) {
		if err := check("log", c.Path, ".log", ".ack"); err != nil {
			return err
		}
		if err := check("ack", c.AckPath, ".log", ".ack"); err != nil {
			return err
		}
	}
	return nil
}

func mapValues(m map[string]Config) []Config {
	out := make([]Config, 0, len(m))
	for _, c := range m {
		out = append(out, c)
	}
	return out
}

// LoadHandlers reads a handler configuration file.
func LoadHandlers(path string) (*Handlers, error) {
	data, err := readfile.Limited(path, MaxHandlersBytes)
	if err != nil {
		return nil, fmt.Errorf("handler configuration: %w", err)
	}
	return ParseHandlers(data, path)
}

// OpenNamed opens a channel with the configuration h gives its name.
func (p *Profiler) OpenNamed(name string, h *Handlers) (*Channel, error) {
	return p.Open(name, h.For(name))
}
