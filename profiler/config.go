package profiler

import (
	"fmt"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
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
type Handlers struct {
	Default  Config            `yaml:"default"`
	Channels map[string]Config `yaml:"channels"`
	// Counters, if set, is where the periodic counters' series are written
	// (JSON) when the profiler closes ({pid} is the process id).
	Counters string `yaml:"counters,omitempty"`
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

// ParseHandlers reads a handler configuration; unknown keys are errors, so a
// typo does not silently turn a channel into Null.
func ParseHandlers(data []byte, source string) (*Handlers, error) {
	var h Handlers
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("handler configuration %s: %w", source, err)
	}
	return &h, nil
}

// LoadHandlers reads a handler configuration file.
func LoadHandlers(path string) (*Handlers, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("handler configuration: %w", err)
	}
	return ParseHandlers(data, path)
}

// OpenNamed opens a channel with the configuration h gives its name.
func (p *Profiler) OpenNamed(name string, h *Handlers) (*Channel, error) {
	return p.Open(name, h.For(name))
}

// FromFile returns a profiler (counters sampled every second) with the
// handlers of the YAML file at path, or nil and nil when path is empty (no
// profiling: every channel would be Null).
func FromFile(path string) (*Profiler, *Handlers, error) {
	if path == "" {
		return nil, nil, nil
	}
	h, err := LoadHandlers(path)
	if err != nil {
		return nil, nil, err
	}
	p := New(time.Second)
	p.CountersPath = h.Counters
	return p, h, nil
}
