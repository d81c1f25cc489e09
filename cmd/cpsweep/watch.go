package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cloudprofiler-go/cp/internal/cli"
	"github.com/cloudprofiler-go/cp/sweep/watch"
)

func watchCommand() *cobra.Command {
	var senders, receivers []string
	var interval, progressMax, duration time.Duration
	var httpAddr string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "watch --sender ADDR --receiver ADDR",
		Short: "Live view of running agents: rates, busy shares, labels and service rates per stage, invariant alerts",
		Long: `Scrapes every agent's metrics (its control address serves /metrics) every
--interval and shows, per stage: buckets a second, the share of the interval
spent busy and blocked, its diagnosis label (HEALTHY, DONTCARE, BLOCKED,
STALLED) and its service-rate estimates. --progress-max D raises an alert
while a consumer finishes no bucket for D although a sender emits.

On a terminal the view is redrawn in place; otherwise (or with --json) one
view is printed per interval. --http ADDR also serves the view as a web page
(plain HTML and JavaScript) at /, as JSON at /state.json, and the alerts as
Prometheus series (cp_watch_alert_firing, cp_watch_alerts_total) at /metrics.

The activity graph's critical participation is not live: the agents do not
stream their activities (docs/activity.md: cpsweep analyze --pag).`,
		Example: `  # the agents a sweep on this machine started (cpsweep prints their addresses)
  cpsweep watch --sender 127.0.0.1:40521 --receiver 127.0.0.1:46007

  # two hosts, a web page on port 8080, an alert after 200 ms without progress
  cpsweep watch --sender h1:9101 --receiver h2:9102 --http :8080 --progress-max 200ms`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			if len(senders)+len(receivers) == 0 {
				return errors.New("no agent to watch: give --sender and --receiver addresses (host:port of their control API)")
			}
			if interval < 100*time.Millisecond || progressMax < 0 || duration < 0 {
				return fmt.Errorf("--interval must be at least 100ms, --progress-max and --for not negative (got %v, %v, %v)", interval, progressMax, duration)
			}
			var agents []watch.Agent
			for i, a := range receivers {
				agents = append(agents, watch.Agent{Node: fmt.Sprintf("receiver%d", i), Addr: a})
			}
			for i, a := range senders {
				agents = append(agents, watch.Agent{Node: fmt.Sprintf("sender%d", i), Addr: a})
			}
			w := watch.New(agents, watch.Options{ProgressMax: progressMax})
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if duration > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, duration)
				defer cancel()
			}
			if httpAddr != "" {
				ln, err := net.Listen("tcp", httpAddr)
				if err != nil {
					return fmt.Errorf("--http %s: %w", httpAddr, err)
				}
				srv := &http.Server{Handler: w.Handler(), ReadHeaderTimeout: 5 * time.Second}
				go func() { _ = srv.Serve(ln) }()
				defer srv.Close()
				fmt.Fprintf(os.Stderr, "web view: http://%s/\n", ln.Addr())
			}
			tty := !jsonOut && cli.IsTerminal(os.Stdout)
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for {
				v := w.Step(ctx)
				switch {
				case jsonOut:
					if err := json.NewEncoder(os.Stdout).Encode(v); err != nil {
						return fmt.Errorf("write the view: %w", err)
					}
				case tty:
					fmt.Print("\033[H\033[2J") // redraw in place
					watch.WriteText(os.Stdout, v)
				default:
					watch.WriteText(os.Stdout, v)
					fmt.Println()
				}
				select {
				case <-ctx.Done():
					return nil
				case <-tick.C:
				}
			}
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&senders, "sender", nil, "a sender agent's control address host:port (repeat)")
	f.StringArrayVar(&receivers, "receiver", nil, "a receiver agent's control address host:port (repeat)")
	f.DurationVar(&interval, "interval", time.Second, "how often to scrape the agents")
	f.DurationVar(&progressMax, "progress-max", 0, "alert while a consumer finishes no bucket for this long although a sender emits (0: off; resolution: --interval)")
	f.StringVar(&httpAddr, "http", "", "also serve the view as a web page, JSON and Prometheus alerts on this address (e.g. :8080)")
	f.BoolVar(&jsonOut, "json", false, "print one JSON view per line instead of the table")
	f.DurationVar(&duration, "for", 0, "stop after this long (0: until Ctrl-C)")
	return cmd
}
