package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cloudprofiler-go/cp/analysis/activity"
	"github.com/cloudprofiler-go/cp/cmd/internal/cli"
	"github.com/cloudprofiler-go/cp/sweep/watch"
)

func watchCommand() *cobra.Command {
	var senders, receivers, jobs []string
	var interval, progressMax, duration time.Duration
	var httpAddr string
	var jsonOut bool
	var tok cli.TokenFlags
	var cpWindow, wait time.Duration
	var cpWindows int
	cmd := &cobra.Command{
		Use:   "watch --sender ADDR --receiver ADDR",
		Short: "Live view of running agents: rates, busy shares, labels and service rates per stage, critical participation, invariant alerts",
		Long:  watchLong,
		Example: `  # the agents a sweep on this machine started (cpsweep prints their addresses)
  cpsweep watch --sender 127.0.0.1:40521 --receiver 127.0.0.1:46007

  # with the job between them, its operators named (cpjob ysb ... --agent-addr h3:9103)
  cpsweep watch --sender h1:9101 --receiver h2:9102 --job-agent h3:9103 --token-file token

  # two hosts, a web page on port 8080, an alert after 200 ms without progress
  cpsweep watch --sender h1:9101 --receiver h2:9102 --token-file token --http :8080 --progress-max 200ms

  # critical participation over the last 5 windows of 500 ms, as JSON lines
  cpsweep watch --sender h1:9101 --receiver h2:9102 --token-file token --cp-window 500ms --cp-windows 5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			if len(senders)+len(receivers)+len(jobs) == 0 {
				return errors.New("no agent to watch: give --sender and --receiver addresses (host:port of their control API)")
			}
			if err := checkWatchFlags(interval, progressMax, duration, cpWindow, wait, cpWindows); err != nil {
				return err
			}
			token, err := tok.Read()
			if err != nil {
				return err
			}
			var agents []watch.Agent
			for i, a := range receivers {
				agents = append(agents, watch.Agent{Node: fmt.Sprintf("receiver%d", i), Addr: a})
			}
			for i, a := range senders {
				agents = append(agents, watch.Agent{Node: fmt.Sprintf("sender%d", i), Addr: a})
			}
			for i, a := range jobs {
				agents = append(agents, watch.Agent{Node: fmt.Sprintf("job%d", i), Addr: a})
			}
			w := watch.New(agents, watch.Options{ProgressMax: progressMax, Token: token, CPWindow: cpWindow, CPWindows: cpWindows, WaitNs: wait.Nanoseconds()})
			return runWatch(cmd.Context(), w, interval, duration, httpAddr, token, jsonOut)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&senders, "sender", nil, "a sender agent's control address host:port (repeat)")
	f.StringArrayVar(&receivers, "receiver", nil, "a receiver agent's control address host:port (repeat)")
	f.StringArrayVar(&jobs, "job-agent", nil, "a job agent's control address host:port (cpjob --agent-addr; repeat): its operators, as job0/join, ... (their states once the sweep has started a trial there)")
	f.DurationVar(&interval, "interval", time.Second, "how often to scrape the agents")
	f.DurationVar(&progressMax, "progress-max", 0, "alert while a consumer finishes no bucket for this long although a sender emits (0: off; resolution: --interval)")
	f.StringVar(&httpAddr, "http", "", "also serve the view as a web page, JSON and Prometheus alerts on this address (e.g. :8080)")
	f.BoolVar(&jsonOut, "json", false, "print one JSON view per line instead of the table")
	f.DurationVar(&duration, "for", 0, "stop after this long (0: until Ctrl-C)")
	f.DurationVar(&cpWindow, "cp-window", watch.DefaultCPWindow, "the live critical participation's window (fixed windows, SnailTrail 1)")
	f.IntVar(&cpWindows, "cp-windows", watch.DefaultCPWindows, "how many of the latest whole windows to show")
	f.DurationVar(&wait, "wait", time.Duration(activity.DefaultWaitNs), "a gap between two state changes longer than this is waiting (ST2's 15us)")
	tok.Register(f, "token the agents expect (their /v1 API serves the state changes)")
	return cmd
}

// watchLong is cpsweep watch's --help text.
const watchLong = `Scrapes every agent's metrics (its control address serves /metrics) every
--interval and shows, per stage: buckets a second, the share of the interval
spent busy and blocked, its diagnosis label (HEALTHY, DONTCARE, BLOCKED,
STALLED) and its service-rate estimates. --progress-max D raises an alert
while a consumer finishes no bucket for D although a sender emits.

On a terminal the view is redrawn in place; otherwise (or with --json) one
view is printed per interval. --http ADDR also serves the view as a web page
(plain HTML and JavaScript) at /, as JSON at /state.json, and the alerts as
Prometheus series (cp_watch_alert_firing, cp_watch_alerts_total) at /metrics.

The critical participation is live too: every --interval the watch reads each
agent's latest stage state changes (GET /v1/trial/activity, with --token or
--token-file when the agents have one) and builds the activity graph of the
last --cp-windows whole windows of --cp-window, showing each window's largest
shares. It has local edges only: the per-tuple points that make message edges
are in the profiled logs (cpsweep analyze --pag, docs/activity.md). The
agents start keeping their stages' changes at the watch's first request, so
the first windows appear an interval or two later. A window whose changes the
watch read too late (an agent keeps the last 65536 per stage) is marked
incomplete.

--job-agent ADDR adds a job that serves its operators (cpjob --agent-addr,
docs/dataflow.md): each operator is a stage of the view (job0/join, ...),
with its rate, busy and blocked shares, once a sweep has started a trial
there (the job serves its operators' metrics per trial).`

// checkWatchFlags checks cpsweep watch's durations and window settings.
func checkWatchFlags(interval, progressMax, duration, cpWindow, wait time.Duration, cpWindows int) error {
	if interval < 100*time.Millisecond || progressMax < 0 || duration < 0 {
		return fmt.Errorf("--interval must be at least 100ms, --progress-max and --for not negative (got %v, %v, %v)", interval, progressMax, duration)
	}
	if cpWindow < time.Millisecond || cpWindow > time.Minute || cpWindows < 1 || cpWindows > 60 || wait <= 0 || wait >= cpWindow {
		return fmt.Errorf("--cp-window must be in [1ms, 1m], --cp-windows in [1, 60], --wait in (0, --cp-window) (got %v, %d, %v)", cpWindow, cpWindows, wait)
	}
	return nil
}

// runWatch redraws the view every interval until Ctrl-C or duration.
func runWatch(ctx context.Context, w *watch.Watcher, interval, duration time.Duration, httpAddr, token string, jsonOut bool) error {
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	if httpAddr != "" {
		srv, err := w.Serve(httpAddr, token)
		if err != nil {
			return err
		}
		defer srv.Close()
		note := ""
		if token != "" {
			note = " (the browser asks for a password: the token; any user name)"
		}
		fmt.Fprintf(os.Stderr, "web view: http://%s/%s\n", srv.Addr(), note)
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
}
