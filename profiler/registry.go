package profiler

import (
	"errors"
	"fmt"
	"strings"
)

// handlerSpec is one handler of the registry: its name, whether it writes
// a log file, the channel-state kind it runs as, how its parameters are
// checked, and how it is made. Validation, a channel's state and its
// handler all read this one table, so a handler is added in one place.
type handlerSpec struct {
	name  string
	logs  bool   // writes a log file: needs a path
	kind  uint32 // kindNull and kindSPC run inline; kindOther through make
	check func(Config) error
	make  func(p *Profiler, name string, cfg Config) (handler, error)
}

// handlerSpecs is the registry, in the order the names are listed to a
// user. It is never written after initialisation.
var handlerSpecs = []handlerSpec{
	{name: HandlerNull, kind: kindNull},
	{name: HandlerIdentity, logs: true, kind: kindOther,
		make: func(p *Profiler, _ string, cfg Config) (handler, error) { return newIdentity(p.openLog, cfg) }},
	{name: HandlerBuffered, logs: true, kind: kindOther,
		make: func(p *Profiler, _ string, cfg Config) (handler, error) { return newBuffered(p.openLog, cfg) }},
	{name: HandlerSPC, kind: kindSPC},
	{name: HandlerMPC, kind: kindOther,
		make: func(p *Profiler, name string, _ Config) (handler, error) {
			m := &mpc{}
			p.sampler.add(name, m)
			return m, nil
		}},
	{name: HandlerDownsample, logs: true, kind: kindOther,
		check: func(c Config) error {
			if c.Every < 1 {
				return errors.New("downsample needs every >= 1")
			}
			return nil
		},
		make: func(p *Profiler, _ string, cfg Config) (handler, error) {
			b, err := newBuffered(p.openLog, cfg)
			if err != nil {
				return nil, err
			}
			return &downsample{every: cfg.Every, out: b}, nil
		}},
	{name: HandlerXoY, logs: true, kind: kindOther,
		check: func(c Config) error {
			if c.Y < 1 || c.X > c.Y {
				return fmt.Errorf("xoy needs 0 <= x <= y and y >= 1, got x=%d y=%d", c.X, c.Y)
			}
			return nil
		},
		make: func(p *Profiler, _ string, cfg Config) (handler, error) {
			b, err := newBuffered(p.openLog, cfg)
			if err != nil {
				return nil, err
			}
			return &xoy{x: cfg.X, y: cfg.Y, out: b}, nil
		}},
	{name: HandlerFirstLast, logs: true, kind: kindOther,
		make: func(p *Profiler, _ string, cfg Config) (handler, error) { return newFirstLast(p.openLog, cfg) }},
	{name: HandlerReTStart, logs: true, kind: kindOther,
		check: func(c Config) error {
			if c.Listen == "" {
				return errors.New("ret-start needs listen: the UDP address acknowledgements come to")
			}
			return nil
		},
		make: func(p *Profiler, _ string, cfg Config) (handler, error) { return p.newReTStart(cfg) }},
	{name: HandlerReTEnd, logs: true, kind: kindOther,
		check: func(c Config) error {
			if c.Peer == "" {
				return errors.New("ret-end needs peer: the ret-start channel's UDP address")
			}
			if c.Y > 0 && c.X > c.Y {
				return fmt.Errorf("ret-end sampling needs x <= y, got x=%d y=%d", c.X, c.Y)
			}
			return nil
		},
		make: func(p *Profiler, _ string, cfg Config) (handler, error) { return newReTEnd(p.openLog, cfg) }},
}

// specOf is a handler's registry entry ("" is null).
func specOf(handler string) (handlerSpec, error) {
	if handler == "" {
		handler = HandlerNull
	}
	for _, s := range handlerSpecs {
		if s.name == handler {
			return s, nil
		}
	}
	names := make([]string, len(handlerSpecs))
	for i, s := range handlerSpecs {
		names[i] = s.name
	}
	return handlerSpec{}, fmt.Errorf("unknown handler %.32q (%s)", handler, strings.Join(names, ", "))
}
