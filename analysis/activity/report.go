package activity

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/analysis"
	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/limits"
	"github.com/cloudprofiler-go/cp/rundir"
)

// DefaultWindowNs is the analysis's default window: short enough that a
// stall of a few hundred ms shows in its own windows, long enough for
// thousands of buckets in each at the harness's rates.
const DefaultWindowNs = 100_000_000

// DefaultHops is how far k-hops walks back by default.
const DefaultHops = 3

// WindowHops are one window's k-hops.
type WindowHops struct {
	Window int   `json:"window"`
	Hops   []Hop `json:"hops"`
}

// Report is the graph's analysis over a whole trace.
type Report struct {
	WindowNs int64 `json:"window_ns"`
	WaitNs   int64 `json:"wait_ns"`
	// MessageDelayNs is the clip applied to long messages (0: none).
	MessageDelayNs int64    `json:"message_delay_ns"`
	Workers        []string `json:"workers"`
	Windows        []Result `json:"windows"`
	// CP is the critical participation over the whole trace per worker
	// and kind: each window's, weighted by the window's length, over the
	// windows that have a path.
	CP       []Share `json:"critical_participation"`
	CPByKind []Share `json:"critical_participation_by_kind"`
	// SystemCP is CP without the input's own timing, renormalized over
	// the rest: what the system's own activities contributed. A paced
	// sender waiting for its next slot (pacing) is the schedule, the
	// input the system is measured against, not a part of it
	// (docs/activity.md); InputShare is that wait's share of the paths.
	SystemCP   []Share `json:"system_critical_participation"`
	InputShare float64 `json:"input_share"`
	// CPUWait says how the threads' runnable wait was apportioned into
	// the shares (kind cpu-wait; nil: it was not, ApportionCPUWait).
	CPUWait    *CPUWaitNote `json:"cpu_wait,omitempty"`
	KHops      []WindowHops `json:"k_hops,omitempty"`
	Violations []Violation  `json:"violations"`
	Limits     Limits       `json:"limits"`
	// Events are the activities and transfers read. Elapsed is the whole
	// pass (with a streamed run: reading and joining its logs too),
	// GraphSeconds the time the graph itself took (building and analysing
	// its windows), and EventsPerSec the graph's speed: events over its own
	// time (one core), not over the pass.
	Events       int     `json:"events"`
	Ambiguous    int     `json:"ambiguous_messages"`
	Elapsed      float64 `json:"elapsed_s"`
	GraphSeconds float64 `json:"graph_s"`
	EventsPerSec float64 `json:"events_per_s"`
	// Late are transfers that came after their window was built (a
	// streamed trace whose join ran late): not in the graph.
	Late int `json:"late_messages,omitempty"`
	// Agreement puts this graph's answer beside the sweep's diagnosis and
	// service rates (set by cpsweep analyze --pag; nil: not compared).
	Agreement *limits.Agreement `json:"agreement,omitempty"`
}

// Top is the worker and kind with the largest critical participation
// over the trace (ok false: no window had a path).
func (r *Report) Top() (Share, bool) {
	if len(r.CP) == 0 {
		return Share{}, false
	}
	return r.CP[0], true
}

// pathWindows is how many windows have a path from their start to their
// end: the critical participation is theirs alone.
func (r *Report) pathWindows() int {
	n := 0
	for _, win := range r.Windows {
		if win.HasPath {
			n++
		}
	}
	return n
}

// sumWindows sets CP and CPByKind to the windows' shares weighted by
// their length, over the windows with a path, and the system's shares
// from them (nothing when no window has a path).
func (r *Report) sumWindows() {
	var total float64
	cp, byKind := map[[2]string]float64{}, map[string]float64{}
	for _, win := range r.Windows {
		if !win.HasPath {
			continue
		}
		weight := float64(win.To - win.From)
		total += weight
		for _, sh := range win.CP {
			cp[[2]string{sh.Worker, sh.Kind}] += weight * sh.Value
		}
		for _, sh := range win.CPByKind {
			byKind[sh.Kind] += weight * sh.Value
		}
	}
	if total <= 0 {
		return
	}
	r.CP, r.CPByKind = nil, nil
	for k, v := range cp {
		r.CP = append(r.CP, Share{Worker: k[0], Kind: k[1], Value: v / total})
	}
	for k, v := range byKind {
		r.CPByKind = append(r.CPByKind, Share{Kind: k, Value: v / total})
	}
	sortShares(r.CP)
	sortShares(r.CPByKind)
	r.splitInput()
}

// splitInput fills SystemCP and InputShare from CP.
func (r *Report) splitInput() {
	r.SystemCP, r.InputShare = nil, 0
	for _, s := range r.CP {
		if s.Kind == Pacing.String() {
			r.InputShare += s.Value
		}
	}
	rest := 1 - r.InputShare
	if rest <= 1e-9 {
		return
	}
	for _, s := range r.CP {
		if s.Kind != Pacing.String() {
			r.SystemCP = append(r.SystemCP, Share{Worker: s.Worker, Kind: s.Kind, Value: s.Value / rest})
		}
	}
}

// TopSystem is the system's own activity with the largest critical
// participation, the input's schedule left out (ok false: none). Time
// between two of a job's operators is not an answer: it is a window's
// buffer (event time passing, as pacing is the schedule) or a queue in
// front of an operator, whose paths then carry that operator's busy time.
func (r *Report) TopSystem() (Share, bool) {
	for _, s := range r.SystemCP {
		if s.Kind == Message.String() && IsOperator(s.Worker) {
			continue
		}
		return s, true
	}
	return Share{}, false
}

// IsOperator says whether a worker is a job's operator (job0/op.join).
func IsOperator(worker string) bool {
	return strings.HasPrefix(worker[strings.LastIndex(worker, "/")+1:], analysis.OperatorPrefix)
}

// AgreementWith puts the sweep's stage diagnosis and service rates (from
// its summary) beside this graph's top system activity.
func (r *Report) AgreementWith(s *rundir.Summary) *limits.Agreement {
	diag, rates, rateDetail, rateTrial := limits.Explanations(s)
	rateNote := ""
	if t := limits.RateTrial(s); t != nil && t.NextLimit.Through != "" {
		rateNote = "through " + t.NextLimit.Through
	}
	graph, graphDetail, graphNote, topKind := "", "", "", ""
	if top, ok := r.TopSystem(); ok {
		topKind = top.Kind
		graph, graphDetail = top.Worker, fmt.Sprintf("%s %.0f%% of the system's critical paths", top.Kind, 100*top.Value)
		switch top.Kind {
		case CPUWait.String():
			// The graph's own evidence of the host: the thread was on the
			// critical paths and could not run.
			graph = diagnose.HostCPU
			graphDetail = fmt.Sprintf("%s waited runnable for a CPU %.0f%% of the system's critical paths", top.Worker, 100*top.Value)
			graphNote = fmt.Sprintf("%s runnable, not running, on the critical paths", top.Worker)
		case Message.String():
			// Time in flight after the worker is the black box's between
			// it and its receiver, not the worker's own.
			graph = inFlight(top.Worker, s.BlackBox())
			if b := diagnose.Broker(s.PlanFacts().JobInput()); b != "" && !IsOperator(top.Worker) {
				graph = b // a sender's messages in flight are in the broker the job drains
			}
			graphDetail = fmt.Sprintf("messages from %s in flight %.0f%% of the system's critical paths", top.Worker, 100*top.Value)
		}
	}
	graphTrial, above := "at the profiled trial", false
	if t, ok := s.ProfiledTrial(); ok {
		if s.Result.LastPass > 0 {
			above = t.Rate > s.Result.LastPass
			graphTrial = fmt.Sprintf("at the profiled trial, %s = %.0f%% of the answer", numfmt.Rate(t.Rate), 100*t.Rate/s.Result.LastPass)
		}
		// A top activity that outweighed its threads' cpu-wait may still
		// have been stretched by the host: the one host-CPU rule, on the
		// profiled trial's accounting, says whether the stage it named
		// gave way to the host's CPUs.
		if graph != "" && graph != diagnose.HostCPU && len(t.Hosts) > 0 {
			graph, graphDetail, graphNote = heldByHost(t, graph, topKind, graphDetail, graphNote)
		}
	}
	if paths := r.pathWindows(); graph != "" && 2*paths < len(r.Windows) {
		// The answer rests on a minority of the trace: say so.
		graphDetail += fmt.Sprintf("; only %d of %d windows had a path (in the rest every worker waited on something that logs no activity, such as the transport's I/O threads)", paths, len(r.Windows))
	}
	a := limits.Agree([]limits.Explanation{
		{Analysis: "diagnosis", Stage: diag, Detail: s.LimitingEvidence, Trial: "at the first failing rate above the answer", AboveAnswer: true,
			Operators: limits.ThreadOperators(s, diag)},
		{Analysis: "service rates", Stage: rates, Detail: rateDetail, Trial: rateTrial, AboveAnswer: strings.Contains(rateTrial, "failing rate"), Note: rateNote,
			Operators: limits.ThreadOperators(s, rates), Tied: limits.RateTied(s)},
		{Analysis: "activity graph", Stage: graph, Detail: graphDetail, Trial: graphTrial, AboveAnswer: above, Note: graphNote},
	})
	return &a
}

// heldByHost applies the host-CPU rule to the graph's answer (graph, the
// stage it named, and its top activity's kind) on the profiled trial's
// accounting: the host's CPUs when the stage gave way to them, else the
// stage with how long its thread waited runnable.
func heldByHost(t rundir.Trial, graph, kind, detail, note string) (string, string, string) {
	if held, ok := diagnose.HostCPUHeld(t.Hosts, graph); ok {
		note = fmt.Sprintf("%s's %s, %s waited runnable %.0f%% of the profiled trial", graph, kind, held.Waiter, 100*held.Wait)
		detail += fmt.Sprintf(", held back by the host's CPUs: %s waited runnable %.0f%% of the profiled trial", held.Waiter, 100*held.Wait)
		if held.Saturated {
			detail += " (its CPUs saturated)"
		}
		return diagnose.HostCPU, detail, note
	}
	if wait, ok := runnableWait(t, graph); ok {
		note = fmt.Sprintf("its thread waited runnable %.0f%% of the profiled trial", 100*wait)
		detail += "; " + note
	}
	return graph, detail, note
}

// runnableWait is the share of a trial's time the worker's thread
// ("sender0/thread0": node, role) waited runnable (ok false: no host
// accounting for it).
func runnableWait(t rundir.Trial, worker string) (float64, bool) {
	node, role, ok := strings.Cut(worker, "/")
	if !ok {
		return 0, false
	}
	for _, h := range t.Hosts {
		if h.Node != node {
			continue
		}
		for _, th := range h.Threads {
			if th.Name == role {
				return th.Runqueue, true
			}
		}
	}
	return 0, false
}

// inFlight names the black box after a sender thread as the diagnosis
// does: its stream (thread N sends stream N), under the system under
// test's name when there is one ("sut/stream0", "nats/stream0").
func inFlight(worker, box string) string {
	name := worker[strings.LastIndex(worker, "/")+1:]
	stream := "stream" + strings.TrimLeftFunc(name, func(r rune) bool { return r < '0' || r > '9' })
	if box != "" {
		return box + "/" + stream
	}
	return stream
}

// StageCP adds up the critical participation of each worker's busy
// kinds (its own work: send, decode, consume) and of everything else it
// did (pacing, waiting, gaps): the stage a bottleneck search names.
func (r *Report) StageCP() map[string]float64 {
	out := map[string]float64{}
	for _, s := range r.CP {
		out[s.Worker] += s.Value
	}
	return out
}

// WriteCSV writes one row per window × worker × kind: the metrics and
// the critical participation.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"window", "start_ns", "end_ns", "worker", "kind", "waiting", "count", "total_ns", "items", "critical_participation"})
	for _, win := range r.Windows {
		cp := map[[2]string]float64{}
		for _, s := range win.CP {
			cp[[2]string{s.Worker, s.Kind}] = s.Value
		}
		for _, m := range win.Metrics {
			_ = cw.Write([]string{strconv.Itoa(win.Window), strconv.FormatInt(win.From, 10), strconv.FormatInt(win.To, 10),
				m.Worker, m.Kind, strconv.FormatBool(m.Waiting), strconv.Itoa(m.Count), strconv.FormatInt(m.TotalNs, 10),
				strconv.FormatUint(m.Items, 10), strconv.FormatFloat(cp[[2]string{m.Worker, m.Kind}], 'g', 6, 64)})
		}
		for _, s := range win.CP { // apportioned, not logged: no metrics of its own
			if s.Kind == CPUWait.String() {
				_ = cw.Write([]string{strconv.Itoa(win.Window), strconv.FormatInt(win.From, 10), strconv.FormatInt(win.To, 10),
					s.Worker, s.Kind, "false", "0", strconv.FormatInt(int64(s.Value*float64(win.To-win.From)), 10), "0", strconv.FormatFloat(s.Value, 'g', 6, 64)})
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteText writes the summary a person reads first: the critical
// participation over the trace, the ambiguous messages, the violations,
// and the analyses' agreement in at most two lines (verbose: the whole
// statement, with why they differ).
func (r *Report) WriteText(w io.Writer, verbose bool) {
	fmt.Fprintf(w, "program activity graph: %d workers, %d events, %d windows of %s (waiting above %s)\n",
		len(r.Workers), r.Events, len(r.Windows), time.Duration(r.WindowNs), time.Duration(r.WaitNs))
	if len(r.CP) == 0 {
		fmt.Fprintln(w, "critical participation: no window has a path from its start to its end")
	} else {
		fmt.Fprintf(w, "critical participation of the system's own activities (share of the critical paths of the %d of %d windows\n", r.pathWindows(), len(r.Windows))
		fmt.Fprintln(w, "that have one, weighted by time, the input's schedule left out):")
		for i, s := range r.SystemCP {
			if i == 8 || s.Value < 0.005 {
				break
			}
			fmt.Fprintf(w, "  %-28s %-10s %5.1f%%\n", s.Worker, s.Kind, 100*s.Value)
		}
		if c := r.CPUWait; c != nil {
			fmt.Fprintf(w, "cpu-wait: a thread runnable but not running (its host accounting, sampled every %s), taken as spread\n", time.Duration(c.PeriodNs))
			fmt.Fprintf(w, "  evenly over its time on the critical paths: %.1f%% of them, in %d of the %d windows with a path\n", 100*c.Share, c.Windows, c.PathWindows)
		}
		if r.InputShare > 0 {
			fmt.Fprintf(w, "the input's schedule (senders waiting for their next slot, pacing): %.1f%% of the critical paths;\n", 100*r.InputShare)
			fmt.Fprintln(w, "  it is what the system is measured against, not a part of it (all shares: pag.json critical_participation)")
		}
	}
	if r.Ambiguous > 0 {
		fmt.Fprintf(w, "ambiguous messages: %d (order not known within the clock bound; marked, never on a path)\n", r.Ambiguous)
	}
	switch n := len(r.Violations); {
	case !r.Limits.any():
		fmt.Fprintln(w, "invariants: none set (--message-max, --operator-max, --progress-max)")
	case n == 0:
		fmt.Fprintln(w, "invariants: all held")
	default:
		fmt.Fprintf(w, "invariants: %d violation(s)\n", n)
		shown := r.Violations
		if len(shown) > 20 {
			shown = shown[:20]
		}
		for _, v := range shown {
			fmt.Fprintf(w, "  %-19s %-28s at +%s: %s (limit %s)\n", v.Invariant, v.Worker, ms(v.FromNs-r.start()), v.Detail, time.Duration(v.LimitNs))
		}
		if len(r.Violations) > len(shown) {
			fmt.Fprintf(w, "  ... and %d more (pag.json)\n", len(r.Violations)-len(shown))
		}
	}
	if r.Agreement != nil {
		if verbose || r.Agreement.Short == "" {
			fmt.Fprintln(w, r.Agreement.Statement)
		} else {
			fmt.Fprintln(w, r.Agreement.Short)
		}
	}
	fmt.Fprintf(w, "the graph: %d events in %.2f s of its own (%.2f M events/s); the whole pass, reading and joining the logs: %.2f s\n",
		r.Events, r.GraphSeconds, r.EventsPerSec/1e6, r.Elapsed)
}

func (l Limits) any() bool {
	return l.MessageMaxNs > 0 || l.OperatorMaxNs > 0 || (l.ProgressWorker >= 0 && (l.ProgressMaxNs > 0 || l.EveryWindow))
}

// start is the first window's start (the trace's origin in the text).
func (r *Report) start() int64 {
	if len(r.Windows) == 0 {
		return 0
	}
	return r.Windows[0].From
}

func ms(ns int64) string { return strconv.FormatFloat(float64(ns)/1e6, 'f', 1, 64) + " ms" }
