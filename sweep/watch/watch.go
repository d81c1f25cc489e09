package watch

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cloudprofiler-go/cp/analysis/activity"
	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/stage"
)

// MaxMetricsBytes bounds one scrape: an agent's metrics are a few kB.
const MaxMetricsBytes = 4 << 20

// Agent is one agent to watch: its node name in the view and the address
// of its control API, which serves /metrics too.
type Agent struct {
	Node, Addr string
}

// StageView is one stage of one agent over the latest interval.
type StageView struct {
	Node      string  `json:"node"`
	Stage     string  `json:"stage"`
	Kind      string  `json:"kind"`
	ItemsPerS float64 `json:"items_per_s"` // buckets a second
	Busy      float64 `json:"busy"`        // share of the interval in its own work
	Blocked   float64 `json:"blocked"`     // share of the interval held up by the stage after it
	Label     string  `json:"label"`       // FlowDiagnoser's label at the latest snapshot
	// RaftLib and BusyTime are the service-rate estimates in tuples/s
	// (null: not converged).
	RaftLib  *float64 `json:"raftlib_tuples_per_s"`
	BusyTime *float64 `json:"busy_time_tuples_per_s"`
}

// Alert is an invariant that does not hold now.
type Alert struct {
	Invariant string  `json:"invariant"`
	Stage     string  `json:"stage"` // node/stage
	Since     string  `json:"since"` // RFC 3339
	Seconds   float64 `json:"seconds"`
	Detail    string  `json:"detail"`
}

// View is what the watch shows after one scrape of every agent.
type View struct {
	At     string      `json:"at"`
	Stages []StageView `json:"stages"`
	Alerts []Alert     `json:"alerts"`
	// Errors are the agents that could not be scraped, or whose state
	// changes could not be read, with why.
	Errors []string `json:"errors"`
	// CriticalParticipation says what the live critical participation is
	// built from, or why there is none yet; CPWindows are its latest
	// whole windows, oldest first.
	CriticalParticipation string     `json:"critical_participation"`
	CPWindows             []CPWindow `json:"cp_windows"`
}

// Options of a Watcher.
type Options struct {
	// ProgressMax fires an alert when a consumer has not finished a bucket
	// for this long while a sender emitted (0: off). The resolution is
	// the scrape interval.
	ProgressMax time.Duration
	Client      *http.Client
	// Token authorises the activity requests (the agents' /v1 API).
	Token string
	// CPWindow and CPWindows are the live critical participation's
	// windows: how long, and how many of the latest (defaults 1 s, 3);
	// WaitNs is the waiting threshold of the activity graph (default
	// ST2's 15 µs).
	CPWindow  time.Duration
	CPWindows int
	WaitNs    int64
}

// Watcher scrapes agents and keeps what it needs between scrapes.
type Watcher struct {
	agents []Agent
	opt    Options
	mu     sync.Mutex
	prev   map[string]scrape // by agent address
	// progress: per consumer (node/stage), when its items last grew.
	progress map[string]time.Time
	firing   map[string]Alert      // by invariant/stage
	total    map[string]int        // alerts fired, by invariant/stage
	live     map[string]*liveAgent // by agent address
	// activityErrors: the agents whose state changes could not be read
	// in the latest step.
	activityErrors int
	view           View
}

// New returns a watcher of agents.
func New(agents []Agent, opt Options) *Watcher {
	if opt.Client == nil {
		opt.Client = httpapi.NewClient(2 * time.Second)
	}
	if opt.CPWindow <= 0 {
		opt.CPWindow = DefaultCPWindow
	}
	if opt.CPWindows <= 0 {
		opt.CPWindows = DefaultCPWindows
	}
	if opt.WaitNs <= 0 {
		opt.WaitNs = activity.DefaultWaitNs
	}
	return &Watcher{agents: agents, opt: opt, prev: map[string]scrape{}, progress: map[string]time.Time{},
		firing: map[string]Alert{}, total: map[string]int{}, live: map[string]*liveAgent{}}
}

// scrape is one agent's stage metrics at one instant.
type scrape struct {
	at     time.Time
	stages map[string]*stageMetrics
	// runqueue is each thread role's time runnable but not running, s
	// (cumulative): the live graph's cpu-wait.
	runqueue map[string]float64
}

type stageMetrics struct {
	seconds map[string]float64 // by state
	items   float64
	label   string
	rates   map[string]float64 // by method
}

// Step scrapes every agent once and returns the new view.
func (w *Watcher) Step(ctx context.Context) View {
	now := time.Now()
	v := View{At: now.UTC().Format(time.RFC3339Nano), Stages: []StageView{}, Alerts: []Alert{}, Errors: []string{}, CPWindows: []CPWindow{}}
	errsBefore := len(v.Errors)
	cur, replies := w.poll(ctx, now, &v)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.activityErrors = len(v.Errors) - errsBefore - (len(w.agents) - len(cur))
	w.absorbReplies(now, replies)
	w.absorbWaits(cur, replies)
	v.CPWindows, v.CriticalParticipation = w.criticalParticipation()
	if v.CPWindows == nil {
		v.CPWindows = []CPWindow{}
	}
	senderGrew := false
	for _, a := range w.agents {
		s, ok := cur[a.Addr]
		if !ok {
			continue
		}
		p, hasPrev := w.prev[a.Addr]
		for _, name := range sortedKeys(s.stages) {
			m := s.stages[name]
			kind := kindOfStage(name, m.seconds)
			sv := StageView{Node: a.Node, Stage: name, Kind: string(kind), Label: m.label}
			if r, ok := m.rates["raftlib"]; ok {
				sv.RaftLib = &r
			}
			if r, ok := m.rates["busy_time"]; ok {
				sv.BusyTime = &r
			}
			if pm := p.stages[name]; hasPrev && pm != nil {
				dt := s.at.Sub(p.at).Seconds()
				if dt > 0 {
					sv.ItemsPerS = math.Max(0, m.items-pm.items) / dt
					busy, blocked := classShares(kind, m.seconds, pm.seconds)
					sv.Busy, sv.Blocked = busy/dt, blocked/dt
				}
				key := a.Node + "/" + name
				if m.items > pm.items {
					if kind == stage.Sender {
						senderGrew = true
					}
					w.progress[key] = now
				} else if _, seen := w.progress[key]; !seen {
					w.progress[key] = now
				}
			}
			v.Stages = append(v.Stages, sv)
		}
	}
	w.checkProgress(now, senderGrew)
	for _, key := range sortedKeys(w.firing) {
		v.Alerts = append(v.Alerts, w.firing[key])
	}
	for k, s := range cur {
		w.prev[k] = s
	}
	w.view = v
	return v
}

// poll scrapes every agent's metrics and reads its latest state changes;
// an agent that does not answer is named in v.Errors.
func (w *Watcher) poll(ctx context.Context, now time.Time, v *View) (map[string]scrape, map[string]protocol.ActivityReply) {
	cur := map[string]scrape{}
	replies := map[string]protocol.ActivityReply{}
	for _, a := range w.agents {
		s, err := w.scrape(ctx, a.Addr)
		if err != nil {
			v.Errors = append(v.Errors, fmt.Sprintf("%s (%s): %v", a.Node, a.Addr, err))
			continue
		}
		s.at = now
		cur[a.Addr] = s
		w.mu.Lock()
		la := w.live[a.Addr]
		w.mu.Unlock()
		reply, err := w.fetchActivity(ctx, a.Addr, la)
		if err != nil {
			v.Errors = append(v.Errors, fmt.Sprintf("%s (%s) activity: %v", a.Node, a.Addr, err))
			continue
		}
		replies[a.Addr] = reply
	}
	return cur, replies
}

// absorbReplies adds the agents' state changes to what the watch keeps,
// and forgets an agent gone for longer than the windows shown (w.mu held).
func (w *Watcher) absorbReplies(now time.Time, replies map[string]protocol.ActivityReply) {
	keep := time.Duration(w.opt.CPWindows+1) * w.opt.CPWindow
	for addr, la := range w.live {
		la.answers = false
		if _, ok := replies[addr]; !ok && now.Sub(time.Unix(0, la.nowNs)) > keep {
			delete(w.live, addr)
		}
	}
	for addr, reply := range replies {
		if la := absorb(w.live[addr], reply, reply.NowNs-keep.Nanoseconds()); la != nil {
			w.live[addr] = la
		}
	}
}

// checkProgress fires progress-max for every consumer whose items have not
// grown for ProgressMax while a sender emitted in the latest interval, and
// clears it when they grow again.
func (w *Watcher) checkProgress(now time.Time, senderGrew bool) {
	if w.opt.ProgressMax <= 0 {
		return
	}
	for key, last := range w.progress {
		if kindOf(key[strings.LastIndexByte(key, '/')+1:]) != stage.Consumer {
			continue
		}
		id := "progress-max/" + key
		idle := now.Sub(last)
		if idle >= w.opt.ProgressMax && senderGrew {
			a, firing := w.firing[id]
			if !firing {
				w.total[id]++
				a = Alert{Invariant: "progress-max", Stage: key, Since: last.UTC().Format(time.RFC3339Nano)}
			}
			a.Seconds = idle.Seconds()
			a.Detail = fmt.Sprintf("no bucket consumed for %v while the senders emit (limit %v)", idle.Round(time.Millisecond), w.opt.ProgressMax)
			w.firing[id] = a
		} else if idle < w.opt.ProgressMax {
			delete(w.firing, id)
		}
	}
}

// Latest is the latest view (for the web page).
func (w *Watcher) Latest() View {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.view
}

// Fired returns how often each alert (invariant/node/stage) fired.
func (w *Watcher) Fired() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.total))
	for k, v := range w.total {
		out[k] = v
	}
	return out
}

// Firing reports whether an alert is firing now, by invariant/node/stage.
func (w *Watcher) Firing() map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]bool, len(w.total))
	for k := range w.total {
		_, out[k] = w.firing[k]
	}
	return out
}

func (w *Watcher) scrape(ctx context.Context, addr string) (scrape, error) {
	var s scrape
	err := w.get(ctx, addr+"/metrics", true, MaxMetricsBytes, func(body io.Reader) (err error) {
		s, err = parse(body)
		return err
	})
	return s, err
}

// get reads http://hostPath (with the token when auth: the agents' /v1
// API) and hands read at most limit bytes of the body; any status but 200
// is an error that says it, with a hint for a refused token.
func (w *Watcher) get(ctx context.Context, hostPath string, auth bool, limit int64, read func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hostPath, nil)
	if err != nil {
		return err
	}
	if auth && w.opt.Token != "" {
		req.Header.Set("Authorization", "Bearer "+w.opt.Token)
	}
	resp, err := w.opt.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	path := req.URL.Path
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		hint := ""
		if resp.StatusCode == http.StatusUnauthorized {
			hint = " (give cpsweep watch the agents' token: --token-file)"
		}
		return fmt.Errorf("GET %s: HTTP %d %s%s", path, resp.StatusCode, strings.TrimSpace(string(msg)), hint)
	}
	if err := read(io.LimitReader(resp.Body, limit)); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// parse reads the stage metrics out of a Prometheus text exposition.
func parse(r io.Reader) (scrape, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return scrape{}, fmt.Errorf("parse metrics: %w", err)
	}
	s := scrape{stages: map[string]*stageMetrics{}}
	get := func(name string) *stageMetrics {
		m := s.stages[name]
		if m == nil {
			m = &stageMetrics{seconds: map[string]float64{}, rates: map[string]float64{}}
			s.stages[name] = m
		}
		return m
	}
	each := func(fam string, f func(labels map[string]string, v float64)) {
		mf := fams[fam]
		if mf == nil {
			return
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["stage"] == "" {
				continue
			}
			f(labels, value(m))
		}
	}
	each("cp_stage_seconds_total", func(l map[string]string, v float64) { get(l["stage"]).seconds[l["state"]] = v })
	each("cp_stage_items_total", func(l map[string]string, v float64) { get(l["stage"]).items = v })
	each("cp_stage_label", func(l map[string]string, v float64) {
		if v == 1 {
			get(l["stage"]).label = l["label"]
		}
	})
	each("cp_stage_service_rate", func(l map[string]string, v float64) {
		if !math.IsNaN(v) && v > 0 {
			get(l["stage"]).rates[l["method"]] = v
		}
	})
	if mf := fams["cp_thread_runqueue_seconds_total"]; mf != nil {
		s.runqueue = map[string]float64{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if v := value(m); l.GetName() == "thread" && l.GetValue() != "" && v >= 0 && !math.IsInf(v, 0) && len(s.runqueue) < maxThreadRoles {
					s.runqueue[l.GetValue()] = v
				}
			}
		}
	}
	return s, nil
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return math.NaN()
}

// kindOf tells a stage's kind by its name, as dgsend and dgrecv name them.
func kindOf(name string) stage.Kind {
	switch {
	case name == "consumer":
		return stage.Consumer
	case strings.HasPrefix(name, "thread"):
		return stage.Sender
	case strings.HasPrefix(name, "lane"):
		return stage.Lane
	case strings.HasPrefix(name, "stream"):
		return stage.Network
	}
	return stage.SUT
}

// kindOfStage is kindOf, or for a name dgsend and dgrecv do not give, an
// operator when its states are an operator's (a job agent's: cpsweep
// watch --job-agent; docs/dataflow.md), else a black box.
func kindOfStage(name string, seconds map[string]float64) stage.Kind {
	k := kindOf(name)
	if k != stage.SUT {
		return k
	}
	for _, st := range stage.States(stage.Operator) {
		if _, ok := seconds[st.Name]; !ok {
			return k
		}
	}
	return stage.Operator
}

// classShares is the time in busy and blocked states between two scrapes.
func classShares(k stage.Kind, cur, prev map[string]float64) (busy, blocked float64) {
	for _, st := range stage.States(k) {
		d := math.Max(0, cur[st.Name]-prev[st.Name])
		switch st.Class {
		case stage.Busy:
			busy += d
		case stage.Blocked:
			blocked += d
		}
	}
	return busy, blocked
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
