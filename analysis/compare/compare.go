package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
	"github.com/cloudprofiler-go/cp/limits"
	"github.com/cloudprofiler-go/cp/rundir"
)

// MaxRuns bounds how many runs one comparison reads.
const MaxRuns = 16

// Budgets of the summaries one comparison reads, checked before any is
// read: a summary takes about three times its size once decoded, and
// --html more (one 250 MiB summary given 16 times was killed at 3 GiB).
// A sweep's summary.json is a few MiB (its trials' samples).
const (
	MaxRunSummary   = 64 << 20  // one run's summary.json
	MaxTotalSummary = 256 << 20 // all of them together
)

// Run is one run directory's figures.
type Run struct {
	Name    string `json:"name"`
	Dir     string `json:"dir"`
	Started string `json:"started"`
	// Answer is the answer as the sweep stated it; LastPass and FirstFail
	// its interval (0: none), Reproducible and Spread its boundary's.
	Answer       string  `json:"answer"`
	LastPass     float64 `json:"last_pass"`
	FirstFail    float64 `json:"first_fail"`
	Reproducible bool    `json:"reproducible"`
	Spread       float64 `json:"spread"`
	// Boundary: the answer was repeated at its boundary (the fast search);
	// without, Reproducible and Spread say nothing.
	Boundary bool `json:"boundary"`
	Trials   int  `json:"trials"`
	// Trust says why the run's answer is not to be used ("": it is).
	Trust string `json:"trust,omitempty"`
	// LatencyP50Ns and LatencyP99Ns are the latency at the answer (0: not
	// recorded), Latency its statement.
	LatencyP50Ns int64  `json:"latency_p50_ns"`
	LatencyP99Ns int64  `json:"latency_p99_ns"`
	Latency      string `json:"latency,omitempty"`
	// Limit is what limited the answer, as the sweep said it.
	Limit string `json:"limit,omitempty"`
	// Hosts is the host accounting of the last passing run at the answer.
	Hosts string `json:"hosts,omitempty"`
	// Points are the trials as the sweep plot draws them.
	Points []rundir.SweepPoint `json:"-"`

	summary *rundir.Summary
	dir     *rundir.Dir
	// the latency's runs at the answer, its rate, and its best run's
	// percentiles (0: one run, or an older run directory)
	latencyRuns      int
	latencyRate      float64
	bestP50, bestP99 int64
}

// Comparison is several runs side by side.
type Comparison struct {
	Runs []Run `json:"runs"`
	// PlanDiffers lists the plan's fields whose values differ between the
	// runs ("field: a | b | c"); MachinesDiffer says when the runs' agents
	// ran on other machines or in other roles. Either makes the answers
	// answers to different questions, and the comparison says so.
	PlanDiffers    []string `json:"plan_differs"`
	MachinesDiffer string   `json:"machines_differ,omitempty"`
	// Changes are each later run's answer and latency beside run 1's,
	// judged against the spread of the two runs' own repeats.
	Changes []Change `json:"changes"`
	// Statement sums it up in one line.
	Statement string `json:"statement"`
}

// Open reads the run directories and compares them.
func Open(paths []string) (*Comparison, error) {
	if len(paths) < 2 || len(paths) > MaxRuns {
		return nil, fmt.Errorf("compare needs 2 to %d run directories, got %d", MaxRuns, len(paths))
	}
	var total int64
	for _, p := range paths {
		size, err := rundir.SummarySize(p)
		if err != nil {
			return nil, err
		}
		if size > MaxRunSummary {
			return nil, fmt.Errorf("run directory %s: summary.json is %s, over compare's %s a run: is it a sweep's?", termsafe.Escape(p), numfmt.Bytes(size), numfmt.Bytes(MaxRunSummary))
		}
		if total += size; total > MaxTotalSummary {
			return nil, fmt.Errorf("the runs' summaries are over compare's %s in all: compare fewer runs at once", numfmt.Bytes(MaxTotalSummary))
		}
	}
	if err := distinct(paths); err != nil {
		return nil, err
	}
	c := &Comparison{PlanDiffers: []string{}}
	for _, p := range paths {
		d, err := rundir.Open(p)
		if err != nil {
			return nil, errors.New(termsafe.Escape(err.Error()))
		}
		if d.Summary == nil {
			return nil, fmt.Errorf("run directory %s: no summary.json (%s)", termsafe.Escape(p), termsafe.Escape(strings.Join(d.Problems, "; ")))
		}
		c.Runs = append(c.Runs, runOf(d))
	}
	c.PlanDiffers = planDiffers(c.Runs)
	c.MachinesDiffer = machinesDiffer(c.Runs)
	c.Changes = changes(c.Runs)
	c.Statement = statement(c)
	c.escape()
	return c, nil
}

// distinct refuses a run given twice, by any path (a symbolic link, a
// trailing slash): compared with itself it would look like two runs that
// agree.
func distinct(paths []string) error {
	seen := make([]os.FileInfo, 0, len(paths))
	for i, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("run directory: %w", err)
		}
		for j, other := range seen {
			if os.SameFile(st, other) {
				return fmt.Errorf("run directory %s is given twice (as %s and %s): compare needs different runs", termsafe.Escape(p), termsafe.Escape(paths[j]), termsafe.Escape(paths[i]))
			}
		}
		seen = append(seen, st)
	}
	return nil
}

// escape shows every control character of the comparison's text as an
// escape: the strings come from run directories (a name, a directory, a
// job's words in a limit), and a newline in one would start a line of
// its own in the text, a terminal escape would drive the terminal.
func (c *Comparison) escape() {
	for i := range c.Runs {
		r := &c.Runs[i]
		for _, f := range []*string{&r.Name, &r.Dir, &r.Started, &r.Answer, &r.Trust, &r.Latency, &r.Limit, &r.Hosts} {
			*f = termsafe.Escape(*f)
		}
	}
	for i := range c.PlanDiffers {
		c.PlanDiffers[i] = termsafe.Escape(c.PlanDiffers[i])
	}
	c.MachinesDiffer, c.Statement = termsafe.Escape(c.MachinesDiffer), termsafe.Escape(c.Statement)
}

func runOf(d *rundir.Dir) Run {
	s := d.Summary
	r := Run{Name: s.Name, Dir: d.Path, Started: s.Started.UTC().Format("2006-01-02 15:04:05Z"), LastPass: s.Result.LastPass, FirstFail: s.Result.FirstFail,
		Trials: len(s.Result.Trials), summary: s, dir: d}
	switch b := s.Result.Boundary; {
	case b != nil && b.Statement != "":
		r.Answer, r.Reproducible, r.Spread, r.Boundary = b.Statement, b.Reproducible, b.Spread, true
	case s.Result.LastPass > 0 && s.Result.FirstFail > 0:
		lo, hi := numfmt.RateInterval(s.Result.LastPass, s.Result.FirstFail)
		r.Answer = fmt.Sprintf("between %s (passed) and %s (failed)", lo, hi)
	case s.Result.LastPass > 0:
		r.Answer = fmt.Sprintf("at least %s (nothing failed)", numfmt.Rate(s.Result.LastPass))
	default:
		r.Answer = "no rate passed"
	}
	switch {
	case s.Contradicted != "":
		r.Trust = "contradicted: " + s.Contradicted
	case s.Disturbed != "":
		r.Trust = "disturbed: " + s.Disturbed
	case s.Interrupted:
		r.Trust = "interrupted"
	case s.Invalid != nil:
		r.Trust = "ended by an invalid trial: " + s.Invalid.Error
	}
	if l := s.Latency; l != nil {
		r.LatencyP50Ns, r.LatencyP99Ns, r.Latency = l.P50Ns, l.P99Ns, l.Statement()
		r.latencyRuns, r.latencyRate, r.bestP50, r.bestP99 = l.Runs, l.Rate, l.BestP50Ns, l.BestP99Ns
	}
	if s.Result.FirstFail > 0 {
		r.Limit = limits.Line(s.LimitingStage, s.LimitingEvidence)
	}
	for _, t := range s.Result.Trials {
		r.Points = append(r.Points, rundir.SweepPoint{Target: t.Rate, Achieved: t.Achieved, Pass: t.Verdict.Pass})
		if t.Verdict.Pass && t.Rate == s.Result.LastPass && limits.Searched(t) && len(t.Hosts) > 0 {
			r.Hosts = cpustat.HostsLine(t.Hosts)
		}
	}
	return r
}

// planDiffers flattens each run's plan to "path=value" and lists the
// paths whose values are not all the same.
func planDiffers(runs []Run) []string {
	vals := make([]map[string]string, len(runs))
	keys := map[string]bool{}
	for i, r := range runs {
		vals[i] = map[string]string{}
		var v any
		if json.Unmarshal(r.summary.Plan, &v) == nil {
			flatten("", v, vals[i])
		}
		for k := range vals[i] {
			keys[k] = true
		}
	}
	out := []string{}
	for k := range keys {
		var seen []string
		same := true
		for i := range runs {
			v, ok := vals[i][k]
			if !ok {
				v = "(absent)"
			}
			seen = append(seen, v)
			same = same && v == seen[0]
		}
		if !same {
			out = append(out, k+": "+strings.Join(seen, " | "))
		}
	}
	sort.Strings(out)
	return out
}

func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			flatten(strings.TrimPrefix(prefix+"."+k, "."), e, out)
		}
	case float64:
		if strings.HasSuffix(prefix, "_ns") { // a duration: said in units (a warm-up of 1000000000 was one second)
			out[prefix] = time.Duration(x).String()
			return
		}
		b, _ := json.Marshal(x)
		out[prefix] = string(b)
	default:
		b, _ := json.Marshal(x)
		if len(b) > 80 {
			b = append(b[:77], "..."...)
		}
		out[prefix] = string(b)
	}
}

// machinesDiffer says how the runs' agents differ in machines or roles
// ("": they ran on the same ones).
func machinesDiffer(runs []Run) string {
	var first string
	for i, r := range runs {
		var ms []string
		for _, a := range r.summary.Agents {
			ms = append(ms, a.Role+"@"+a.Machine)
		}
		sort.Strings(ms)
		m := strings.Join(ms, ",")
		if i == 0 {
			first = m
		} else if m != first {
			return fmt.Sprintf("run %d (%s) ran its agents on other machines or in other roles than run 1 (%s)", i+1, r.Name, runs[0].Name)
		}
	}
	return ""
}

func statement(c *Comparison) string {
	var parts []string
	for _, r := range c.Runs {
		if r.LastPass > 0 && r.Trust == "" {
			parts = append(parts, fmt.Sprintf("%.0f", r.LastPass))
		}
	}
	s := fmt.Sprintf("%d runs, %d with an answer to use", len(c.Runs), len(parts))
	switch {
	case len(c.PlanDiffers) > 0 && c.MachinesDiffer != "":
		s += "; they differ in plan and in machines: their answers measure different things"
	case len(c.PlanDiffers) > 0:
		s += fmt.Sprintf("; they differ in plan (%d field(s)): their answers measure different things", len(c.PlanDiffers))
	case c.MachinesDiffer != "":
		s += "; they differ in machines: their answers measure different hosts"
	default:
		s += "; same plan on the same machines"
		if lo, hi, ok := spread(c.Runs); ok {
			s += fmt.Sprintf(": answers from %s to %s (the highest %.1f%% above the lowest)", numfmt.Rate(lo), numfmt.Rate(hi), 100*(hi/lo-1))
		}
	}
	return s
}

func spread(runs []Run) (lo, hi float64, ok bool) {
	for _, r := range runs {
		if r.LastPass <= 0 || r.Trust != "" {
			continue
		}
		if !ok || r.LastPass < lo {
			lo = r.LastPass
		}
		hi = max(hi, r.LastPass)
		ok = true
	}
	return lo, hi, ok
}
