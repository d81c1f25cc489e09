package watch

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/stage/stagemetrics"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
)

// WriteText renders a view for a terminal: one line per stage, then the
// alerts and the agents that did not answer.
func WriteText(w io.Writer, v View) {
	fmt.Fprintf(w, "cpsweep watch  %s\n\n", v.At)
	fmt.Fprintf(w, "%-12s %-10s %-9s %12s %6s %8s  %-9s %14s %14s\n", "node", "stage", "kind", "buckets/s", "busy", "blocked", "label", "raftlib", "busy_time")
	for _, s := range v.Stages {
		fmt.Fprintf(w, "%-12s %-10s %-9s %12s %5.0f%% %7.0f%%  %-9s %14s %14s\n", s.Node, s.Stage, s.Kind, numfmt.Rate(s.ItemsPerS),
			100*s.Busy, 100*s.Blocked, orDash(s.Label), rateOrNot(s.RaftLib), rateOrNot(s.BusyTime))
	}
	if len(v.Stages) == 0 {
		fmt.Fprintln(w, "(no stage yet: the agents publish their stages while a trial runs)")
	}
	fmt.Fprintln(w)
	if len(v.Alerts) == 0 {
		fmt.Fprintln(w, "invariants: no alert")
	}
	for _, a := range v.Alerts {
		fmt.Fprintf(w, "ALERT %s %s: %s\n", a.Invariant, a.Stage, a.Detail)
	}
	for _, e := range v.Errors {
		fmt.Fprintf(w, "agent error: %s\n", e)
	}
	fmt.Fprintf(w, "critical participation: %s\n", v.CriticalParticipation)
	for _, cw := range v.CPWindows {
		fmt.Fprintf(w, "  %s  %s\n", clockOf(cw.Start), cpLine(cw))
	}
}

// cpLine is a window's largest critical participations, or why it has
// none.
func cpLine(cw CPWindow) string {
	var b strings.Builder
	if !cw.HasPath {
		b.WriteString("no path: every stage waited in this window")
	}
	for i, s := range cw.Top {
		if i == 3 || s.Value < 0.005 {
			break
		}
		if i > 0 {
			b.WriteString("  ")
		}
		fmt.Fprintf(&b, "%s %s %.0f%%", s.Worker, s.Kind, 100*s.Value)
	}
	if cw.Incomplete {
		b.WriteString("  (incomplete: state changes lost, ask more often with --interval)")
	}
	return b.String()
}

// clockOf is the time of day of an RFC 3339 instant, to the millisecond.
func clockOf(rfc string) string {
	t, err := time.Parse(time.RFC3339Nano, rfc)
	if err != nil {
		return rfc
	}
	return t.Format("15:04:05.000")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func rateOrNot(v *float64) string {
	if v == nil {
		return "not_converged"
	}
	return numfmt.Rate(*v)
}

//go:embed page.html
var page []byte

// Routes serve the web view: the page (plain HTML and JavaScript, no
// build step) at /, the latest view at /state.json; the alerts are its
// metrics (Collector). httpapi.Serve adds the token and the limits.
func (w *Watcher) Routes() []httpapi.Route {
	pageH := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = rw.Write(page)
	})
	state := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(w.Latest())
	})
	return []httpapi.Route{{Pattern: "GET /{$}", Handler: pageH}, {Pattern: "GET /state.json", Handler: state}}
}

// Serve serves the web view on addr, with the token on every route.
func (w *Watcher) Serve(addr, token string) (*httpapi.Server, error) {
	return httpapi.Serve(httpapi.ServerConfig{Name: "--http", Addr: addr, Token: token, Routes: w.Routes(), Metrics: stagemetrics.Alerts{Of: w}})
}
