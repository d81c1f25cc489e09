package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/internal/osthread"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
)

// ParseRate reads a rate in tuples per second: "500000", "500k", "2.5M",
// "1G", "1e6". Zero is allowed (unpaced). A lower-case m or g is refused:
// "2m" reads as milli as well as mega, and a rate off by 10^9 is a
// confident wrong run.
func ParseRate(s string) (float64, error) {
	in := strings.TrimSpace(s)
	mult := 1.0
	switch {
	case strings.HasSuffix(in, "k"), strings.HasSuffix(in, "K"):
		mult, in = 1e3, in[:len(in)-1]
	case strings.HasSuffix(in, "M"):
		mult, in = 1e6, in[:len(in)-1]
	case strings.HasSuffix(in, "G"):
		mult, in = 1e9, in[:len(in)-1]
	case strings.HasSuffix(in, "m"), strings.HasSuffix(in, "g"):
		num := in[:len(in)-1]
		return 0, fmt.Errorf("rate %q: a lower-case %q is ambiguous (milli or mega?); write %s%s for %s, or the number in full",
			s, in[len(in)-1:], num, strings.ToUpper(in[len(in)-1:]), map[string]string{"m": "millions per second", "g": "billions per second"}[in[len(in)-1:]])
	}
	v, err := strconv.ParseFloat(in, 64)
	if err != nil || v < 0 || v != v || v > 1e12 {
		return 0, fmt.Errorf("rate %q is not a number of tuples per second (e.g. 500000, 500k, 2.5M)", s)
	}
	return v * mult, nil
}

// CPUs resolves a --cpus value: "none" (no pinning), "auto" (the last n
// allowed CPUs, leaving CPU 0 to the kernel and the ZeroMQ I/O threads when
// there is a choice), or an explicit list like "1" or "0,2-3".
func CPUs(value string, n int) ([]int, error) {
	if n < 1 {
		return nil, fmt.Errorf("--threads must be at least 1, got %d", n)
	}
	if value != "auto" {
		return osthread.Parse(value)
	}
	allowed, err := osthread.Allowed()
	if err != nil {
		return nil, err
	}
	if len(allowed) <= 1 {
		return nil, nil
	}
	if n >= len(allowed) {
		return allowed, nil
	}
	return allowed[len(allowed)-n:], nil
}

// IsTerminal reports whether f is a terminal (progress lines go there).
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// WriteJSON writes v indented to w.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(termsafe.NewJSONWriter(w)) // strings from the network or a run directory
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteJSONFile writes v to path ("-" is standard output).
func WriteJSONFile(path string, v any) error {
	if path == "-" {
		return WriteJSON(os.Stdout, v)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	if err := WriteJSON(f, v); err != nil {
		f.Close()
		return fmt.Errorf("write result %s: %w", path, err)
	}
	return f.Close()
}

// ShowProgress resolves a --progress value: always, never, or auto (only
// when standard error is a terminal, so logs and pipes stay clean).
func ShowProgress(mode string) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	return IsTerminal(os.Stderr)
}

// SignalContext is the one place a binary handles SIGINT and SIGTERM
// (each main calls it once and hands the context down): the first signal
// cancels the context, so that a run stops cleanly and still reports and a
// server shuts down; a second one exits at once with status 130.
func SignalContext(name string) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintf(os.Stderr, "%s: stopping; signal again to abort\n", name)
		cancel()
		<-sigs
		os.Exit(130)
	}()
	return ctx
}

// StopWhenDone calls stop once ctx is done (a signal), unless the run
// ended first (release).
func StopWhenDone(ctx context.Context, stop func()) (release func()) {
	after := context.AfterFunc(ctx, stop)
	return func() { after() }
}

// ServeMetricsFor is ServeMetrics for a command called name: it says where
// the metrics are on standard error.
func ServeMetricsFor(name, addr string, c prometheus.Collector) (func(), error) {
	bound, stop, err := httpapi.ServeMetrics(addr, c)
	if err != nil {
		return nil, err
	}
	if bound != "" {
		fmt.Fprintf(os.Stderr, "%s: metrics on http://%s/metrics\n", name, bound)
	}
	return stop, nil
}

// TextWriter is a result that can describe itself to a person.
type TextWriter interface{ WriteText(io.Writer) }

// WriteResult writes res to the --output file (if any) and prints it on
// standard output as JSON or as text.
func WriteResult(res TextWriter, jsonOut bool, output string) error {
	if output != "" {
		if err := WriteJSONFile(output, res); err != nil {
			return err
		}
	}
	if jsonOut {
		return WriteJSON(os.Stdout, res)
	}
	res.WriteText(termsafe.NewWriter(os.Stdout)) // its errors may quote a broker or a job
	return nil
}

// Rate is a flag of tuples per second, parsed once when the flag is read
// (ParseRate's forms: "500000", "500k", "2.5M"), so that a bad rate is a
// flag error and the value reaches the code that uses it as a number.
type Rate float64

// RateVar defines a rate flag bound to p (which holds the default).
func RateVar(f *pflag.FlagSet, p *float64, name, usage string) {
	f.Var((*Rate)(p), name, usage)
}

// Set implements pflag.Value.
func (r *Rate) Set(s string) error {
	v, err := ParseRate(s)
	if err != nil {
		return err
	}
	*r = Rate(v)
	return nil
}

// String implements pflag.Value: the shortest form ParseRate reads back.
func (r *Rate) String() string {
	v := float64(*r)
	switch {
	case v >= 1e6 && math.Mod(v, 1e5) == 0:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e3 && math.Mod(v, 100) == 0:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Type implements pflag.Value.
func (r *Rate) Type() string { return "rate" }
