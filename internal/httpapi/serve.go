package httpapi

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ServeMetrics serves /metrics for the collector on addr ("" disables),
// with extra handlers beside it, and returns the bound address (useful
// with port 0) and a shutdown function.
func ServeMetrics(addr string, c prometheus.Collector, extra map[string]http.Handler) (string, func(), error) {
	if addr == "" {
		return "", func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("listen for /metrics on %s: %w (use --metrics-addr to pick another, or \"\" to disable)", addr, err)
	}
	stop, err := ServeMetricsOn(ln, c, extra)
	if err != nil {
		ln.Close()
		return "", nil, err
	}
	return ln.Addr().String(), stop, nil
}

// ServeMetricsOn is ServeMetrics on a listener the caller has bound (to
// learn its port before anything is served).
func ServeMetricsOn(ln net.Listener, c prometheus.Collector, extra map[string]http.Handler) (func(), error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	for path, h := range extra {
		mux.Handle(path, h)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "metrics server: %v\n", err)
		}
	}()
	return func() { _ = srv.Close() }, nil
}
