package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/profiler/configsrv"
	"github.com/cloudprofiler-go/cp/profiler/profmetrics"
)

// Profile is a command's profiling set-up: the profiler and its handler
// configuration from --profile (a YAML file or a configuration server's
// URL), following the source for live switches when follow > 0.
type Profile struct {
	Profiler *profiler.Profiler // nil: not profiling
	Handlers *profiler.Handlers
	stop     context.CancelFunc
}

// ProfileFlags are the profiling flags of dgsend and dgrecv.
type ProfileFlags struct {
	Source, Token, TokenFile, Dir string
	Follow                        time.Duration
	// Period is the counters' sampling period (0: a second); RunCommand
	// sets it to the stage accounting's, so both sample in lock step.
	Period time.Duration
}

// Register adds --profile, --profile-follow and --profile-token; channels
// names the command's instrumentation points for the help.
func (pf *ProfileFlags) Register(f *pflag.FlagSet, channels string) {
	f.StringVar(&pf.Source, "profile", "", "profile with the handlers of this YAML file or configuration server URL (docs/profiler.md; channels "+channels+")")
	f.DurationVar(&pf.Follow, "profile-follow", 0, "re-read --profile this often and switch changed channels live (0: never)")
	f.StringVar(&pf.Token, "profile-token", "", "bearer token for a --profile server (visible to every user in the process list: prefer --profile-token-file)")
	f.StringVar(&pf.TokenFile, "profile-token-file", "", "read the bearer token for a --profile server from this file")
	f.StringVar(&pf.Dir, "profile-dir", "", "write every log here: the handlers' paths are relative to it and may not leave it\n(default: a new directory cp-profile-<command>-<time>-<pid> under the working directory)")
}

// Open is OpenProfile with the flags' values.
func (pf *ProfileFlags) Open(name string) (*Profile, error) {
	token, err := httpapi.ReadToken(pf.Token, pf.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("--profile-token: %w", err)
	}
	return OpenProfile(name, pf.Source, token, pf.Dir, pf.Follow, pf.Period)
}

// OpenProfile loads the source ("" disables profiling) and confines every
// log to dir (created if missing; "": a new directory under the working
// directory). name prefixes the reports on standard error.
func OpenProfile(name, source, token, dir string, follow, period time.Duration) (*Profile, error) {
	if source == "" {
		return &Profile{stop: func() {}}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if dir == "" {
		dir = fmt.Sprintf("cp-profile-%s-%s-%d", name, time.Now().UTC().Format("20060102-150405"), os.Getpid())
	}
	_, statErr := os.Stat(dir)
	made := errors.Is(statErr, fs.ErrNotExist)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--profile-dir: %w", err)
	}
	p, h, err := configsrv.FromSource(ctx, source, token, dir, period)
	if err != nil {
		if made {
			_ = os.Remove(dir) // a refused configuration leaves nothing behind; a directory that was there stays
		}
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "%s: profile logs in %s\n", name, dir)
	pr := &Profile{Profiler: p, Handlers: h, stop: func() {}}
	if p != nil && follow > 0 {
		fctx, stop := context.WithCancel(context.Background())
		pr.stop = stop
		go configsrv.Follow(fctx, p, source, token, follow, func(changed []string, err error) {
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

// Close stops following and flushes every channel. Its error names every
// log that could not be written completely and how many records were lost.
func (p *Profile) Close() error {
	p.stop()
	if err := p.Profiler.Close(); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	return nil
}

// Collector adds the profiler's counters to c's metrics (c alone when not
// profiling).
func (p *Profile) Collector(c prometheus.Collector) prometheus.Collector {
	if p.Profiler == nil {
		return c
	}
	return httpapi.Collectors{c, profmetrics.Collector{P: p.Profiler}}
}
