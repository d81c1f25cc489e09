package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cloudprofiler-go/cp/profiler"
)

// Profile is a command's profiling set-up: the profiler and its handler
// configuration from --profile (a YAML file or a configuration server's
// URL), following the source for live switches when follow > 0.
type Profile struct {
	Profiler *profiler.Profiler // nil: not profiling
	Handlers *profiler.Handlers
	stop     context.CancelFunc
}

// OpenProfile loads the source ("" disables profiling). name prefixes the
// switch reports on standard error.
func OpenProfile(name, source, token string, follow time.Duration) (*Profile, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	p, h, err := profiler.FromSource(ctx, source, token)
	if err != nil {
		return nil, err
	}
	pr := &Profile{Profiler: p, Handlers: h, stop: func() {}}
	if p != nil && follow > 0 {
		fctx, stop := context.WithCancel(context.Background())
		pr.stop = stop
		go p.Follow(fctx, source, token, follow, func(changed []string, err error) {
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: profile: %v (handlers unchanged)\n", name, err)
			}
			if len(changed) > 0 {
				fmt.Fprintf(os.Stderr, "%s: profile: switched %s\n", name, strings.Join(changed, ", "))
			}
		})
	}
	return pr, nil
}

// Close stops following and flushes every channel.
func (p *Profile) Close() error {
	p.stop()
	return p.Profiler.Close()
}

// Collector adds the profiler's counters to c's metrics (c alone when not
// profiling).
func (p *Profile) Collector(c prometheus.Collector) prometheus.Collector {
	if p.Profiler == nil {
		return c
	}
	return Collectors{c, p.Profiler}
}

// Collectors is several collectors as one.
type Collectors []prometheus.Collector

// Describe implements prometheus.Collector.
func (cs Collectors) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range cs {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (cs Collectors) Collect(ch chan<- prometheus.Metric) {
	for _, c := range cs {
		c.Collect(ch)
	}
}
