package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/internal/osthread"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/tsc"
)

// Runner is what dgsend and dgrecv run: a sender or a receiver with its
// result type R.
type Runner[R any] interface {
	Run() (R, error)
	Stop()
	Close()
}

// Staged is a runner with stage accounting (nil: off), diagnosed live.
type Staged interface{ Stages() *stage.Set }

// RunFlags are the settings every measuring command shares.
type RunFlags struct {
	Name        string // the command, prefixing its lines on standard error
	MetricsAddr string
	Calibrate   time.Duration
	Progress    string // always, never, auto
	JSON        bool
	Output      string
	Profile     ProfileFlags
	// StagePeriod is the stage accounting's sampling period (0: off).
	StagePeriod time.Duration
	// ServiceRates estimates every stage's service rate (with StagePeriod).
	ServiceRates bool
	// OtherCPUs confines every thread but the pinned workers ("" or
	// "none": not confined).
	OtherCPUs string
}

// RunCommand is the one life of dgsend and dgrecv: calibrate the TSC, open
// the profile, build the runner, serve its metrics, stop it on the first
// signal, show progress on a terminal, run it, write the result, and close
// the profile (a lost record fails the run, after the result is out).
// progress, if set, prints a line a second until done is closed.
func RunCommand[R TextWriter](ctx context.Context, f RunFlags, build func(*tsc.Clock, *Profile) (Runner[R], httpapi.Collectors, error),
	progress func(r Runner[R], done <-chan struct{})) (res R, err error) {
	clock, err := tsc.NewClock(f.Calibrate)
	if err != nil {
		return res, err
	}
	f.Profile.Period = f.StagePeriod
	prof, err := f.Profile.Open(f.Name)
	if err != nil {
		return res, err
	}
	defer func() { // flushes every channel, also after a signal
		if cerr := prof.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	r, metrics, err := build(clock, prof)
	if err != nil {
		return res, err
	}
	if st, ok := r.(Staged); ok && st.Stages() != nil {
		diagnose.LogStalls(st.Stages(), diagnose.DefaultConfirm, Logf(f.Name))
	}
	defer r.Close()
	stopMetrics, err := ServeMetricsFor(f.Name, f.MetricsAddr, prof.Collector(metrics))
	if err != nil {
		return res, err
	}
	defer stopMetrics()
	defer StopWhenDone(ctx, r.Stop)()
	done := make(chan struct{})
	if progress != nil && ShowProgress(f.Progress) {
		go progress(r, done)
	}
	res, err = r.Run()
	close(done)
	if err != nil {
		return res, err
	}
	return res, WriteResult(res, f.JSON, f.Output)
}

// Logf returns a logger that prefixes name to every line on standard
// error, escaping what its arguments hold (a broker's or a job's words).
func Logf(name string) func(format string, args ...any) {
	return func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s: %s\n", name, termsafe.Escape(fmt.Sprintf(format, args...)))
	}
}

// Register adds the shared flags: --calibrate, --metrics-addr (with the
// command's default), --json, --output, --progress and the profile flags
// (channels names the command's instrumentation points).
func (f *RunFlags) Register(fs *pflag.FlagSet, name, metricsAddr, channels string) {
	f.Name = name
	fs.DurationVar(&f.Calibrate, "calibrate", 100*time.Millisecond, "TSC frequency calibration time")
	fs.StringVar(&f.MetricsAddr, "metrics-addr", metricsAddr, "serve Prometheus /metrics here (\"\" to disable)")
	fs.BoolVar(&f.JSON, "json", false, "print the result as JSON instead of text")
	fs.StringVarP(&f.Output, "output", "o", "", "also write the JSON result to this file")
	fs.StringVar(&f.Progress, "progress", "auto", "per-second progress on stderr: auto (on a terminal), always, never")
	fs.DurationVar(&f.StagePeriod, "stage-period", stage.DefaultPeriod, "account every stage's time (docs/diagnosis.md) and sample it this often, 10ms..10s\n(also the profiler's counter period, in lock step); 0 turns the accounting off")
	fs.BoolVar(&f.ServiceRates, "service-rates", true, "estimate every stage's service rate while accounting (docs/service-rate.md); false: the accounting only")
	fs.StringVar(&f.OtherCPUs, "other-cpus", "none", "CPUs for every thread but the pinned ones of --cpus (ZeroMQ I/O threads, the Go runtime,\nmetrics): keep them off a measured thread's CPU, e.g. --cpus 0,1 --other-cpus 0; none: not confined")
	f.Profile.Register(fs, channels)
}

// ConfineOthers applies --other-cpus. Call it first, before any thread is
// pinned.
func (f *RunFlags) ConfineOthers() error { return ConfineOthers(f.OtherCPUs) }

// ConfineOthers confines every thread of the process to the CPUs of spec
// (a list like 0 or 0-1; "" or "none": no change), each one the process
// may use (osthread.ConfineProcess).
func ConfineOthers(spec string) error {
	cpus, err := osthread.Parse(spec)
	if err != nil {
		return fmt.Errorf("--other-cpus: %w", err)
	}
	if len(cpus) == 0 {
		return nil
	}
	allowed, err := osthread.Allowed()
	if err != nil {
		return err
	}
	for _, c := range cpus {
		if !slices.Contains(allowed, c) {
			return fmt.Errorf("--other-cpus: CPU %d is not one this process may run on (allowed: %v)", c, allowed)
		}
	}
	return osthread.ConfineProcess(cpus)
}
