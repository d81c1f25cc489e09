package rundir

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/internal/histo"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	sendtally "github.com/cloudprofiler-go/cp/sender/tally"
	"github.com/cloudprofiler-go/cp/servicerate"
)

// The records of a sweep, as summary.json and trials/NNN.json hold them:
// one definition, which the sweep writes and every reader (the analysis,
// the report, cpsweep diagnose, the sweep's own history) reads.

// Summary is a sweep's summary (summary.json).
type Summary struct {
	FormatVersion int       `json:"format_version"`
	Name          string    `json:"name"`
	Started       time.Time `json:"started"`
	// Plan and Search are the sweep's settings as it ran them (package
	// sweep owns their fields: TrialPlan and Search); a reader that needs
	// one of them asks a method here (PlanDuration, PlanRelay), so that
	// none decodes them its own way.
	Plan     json.RawMessage      `json:"plan"`
	Search   json.RawMessage      `json:"search"`
	Agents   []protocol.AgentInfo `json:"agents"`
	Topology string               `json:"topology"` // for people: no reader parses it
	// BlackBoxName is the system the data went through between the
	// senders and the receivers, as the diagnosis names its stages: "sut"
	// in a relayed sweep, a broker's scheme ("nats", "kafka", ...), or ""
	// when it went straight over the transport (see BlackBox).
	BlackBoxName string  `json:"black_box,omitempty"`
	Result       *Result `json:"result"`
	Interrupted  bool    `json:"interrupted"`
	// Invalid is the trial that ended the sweep because an agent failed
	// (nil when none did): its rate was never judged.
	Invalid *InvalidTrial `json:"invalid,omitempty"`
	// ProfileSkipped says why the profiled trial did not run ("" if it
	// ran or was not asked for).
	ProfileSkipped string `json:"profile_skipped,omitempty"`
	// ProfiledSearch: every trial of the search ran with the profile's
	// handlers on (--profile-search).
	ProfiledSearch bool   `json:"profiled_search,omitempty"`
	Dir            string `json:"dir"`
	// LimitingStage is what limited the first failing trial above the
	// answer (see Trial.LimitingStage).
	LimitingStage    string `json:"limiting_stage,omitempty"`
	LimitingEvidence string `json:"limiting_evidence,omitempty"`
	// Contradicted says how the sweep's own trials contradict its answer
	// (a rate well above the first failing one passed): the capacity moved
	// during the sweep, and the answer is not to be trusted ("": none;
	// cpsweep exits 6 when they do).
	Contradicted string `json:"contradicted,omitempty"`
	// Disturbed says which trial's host stayed disturbed through every
	// repeat, and by what: the sweep ended without an answer.
	Disturbed string `json:"disturbed,omitempty"`
	// WrongOutput says at which rate a job's output was found wrong while
	// the job kept up, and how: the sweep stopped without an answer (exit
	// status 11), since no rate can pass a job that is wrong, not slow.
	WrongOutput string `json:"wrong_output,omitempty"`
	// Colocated says which agents shared a host, with the cores each used
	// in the last judged trial: the answer is then a property of that host.
	Colocated string `json:"colocated,omitempty"`
	// Unsteady says which thread waited for a core on a shared host in
	// the last judged trial ("": none): the answer then moves between
	// sweeps with the other work there, and is to be compared across
	// several (Colocated says it in words).
	Unsteady string `json:"unsteady,omitempty"`
	// Latency is the end-to-end latency at the answer, with its clock
	// error (nil without an answer).
	Latency *AnswerLatency `json:"latency,omitempty"`
	// History compares the answer with the earlier sweeps of the same
	// plan on the same machines in the same results directory (nil: fewer
	// than two, or no answer).
	History *History `json:"history,omitempty"`
	// HostRules are the rules this sweep judged its hosts by (package
	// sweep's HostRules): a sweep that accepted a busy neighbour measured
	// another host than one that waited for a quiet one, and the history
	// keeps them apart.
	HostRules json.RawMessage `json:"host_rules,omitempty"`
}

// Purposes of a trial: why the search (or the sweep) ran it.
const (
	PurposeLinear = "linear" // a step of the linear search
	PurposeRamp   = "ramp"   // the fast search's ramp, up or down by its factor
	PurposeBisect = "bisect" // the fast search's narrowing, far from the edge
	PurposeClose  = "close"  // the narrowing near the edge, by the prober's steps
	PurposeGallop = "gallop" // the prober's widening steps down after failures that kept up
	// PurposeHint is the trial the service-rate hint placed (and the
	// prober's probe just below what a trial that fell behind achieved).
	PurposeHint = "hint"
	// PurposeEstimate is the hint's trial: its verdict counts only as a
	// full pass (Trial.Judged).
	PurposeEstimate = "estimate"
	// PurposeRecheck tests an answer its own stages' service rates doubt.
	PurposeRecheck = "recheck"
	// PurposeRepeat is a boundary repeat (or a repeat of a pass that
	// contradicts the boundary); PurposeCandidate the first run of a lower
	// answer candidate, after the last pass failed a repeat; PurposeBound a
	// first run just above the rates whose outcomes varied.
	PurposeRepeat    = "repeat"
	PurposeCandidate = "candidate"
	PurposeBound     = "bound"
	// PurposeProfile is the profiled trial after the search: not the
	// search's, never part of its answer.
	PurposeProfile = "profile"
)

// TrialFile is trials/NNN.json: the trial's record and everything its
// agents reported.
type TrialFile struct {
	Trial *Trial `json:"trial,omitempty"` // nil: the trial was invalid
	// Invalid is the trial an agent failure made impossible to judge.
	Invalid *InvalidTrial `json:"invalid,omitempty"`
	Outcome *Outcome      `json:"outcome"`
}

// AllPassed: every run at the rate passed.
func (r RateRuns) AllPassed() bool { return r.Runs > 0 && r.Passes == r.Runs }

// AllFailed: every run at the rate failed.
func (r RateRuns) AllFailed() bool { return r.Runs > 0 && r.Passes == 0 }

// Result is a search's answer: the maximum sustainable throughput lies in
// [LastPass, FirstFail).
type Result struct {
	Method    string        `json:"method"`
	LastPass  float64       `json:"last_pass"`  // 0: no rate passed
	FirstFail float64       `json:"first_fail"` // 0: no rate failed (the top of the range passed)
	Trials    []Trial       `json:"trials"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	Stopped   string        `json:"stopped,omitempty"` // why the search ended early
	Hint      string        `json:"hint,omitempty"`    // what the service-rate hint did
	// Boundary is what the repeats at the boundary measured (fast search;
	// nil when the search ended before them): LastPass and FirstFail are
	// then its answer and its lowest rate that failed every run.
	Boundary *Boundary `json:"boundary,omitempty"`
}

// Precision is the relative width of the answer's interval.
func (r *Result) Precision() float64 {
	if r.LastPass <= 0 || r.FirstFail <= 0 {
		return math.Inf(1)
	}
	return (r.FirstFail - r.LastPass) / r.LastPass
}

// Trial is one measured run at a target rate.
type Trial struct {
	N         int           `json:"n"`
	Rate      float64       `json:"rate"`
	Achieved  float64       `json:"achieved"` // tuples/s consumed by the receivers
	Verdict   Verdict       `json:"verdict"`
	Purpose   string        `json:"purpose"` // ramp, bisect, hint, confirm, linear
	Elapsed   time.Duration `json:"elapsed_ns"`
	Outcome   *Outcome      `json:"-"` // full agent results (saved separately)
	StartedAt time.Time     `json:"started_at"`
	// LimitingStage is the stage that limited the trial over its window
	// ("none": no stage was busy with work waiting; "": not diagnosed),
	// and LimitingEvidence the numbers that say so (package diagnose).
	LimitingStage    string `json:"limiting_stage,omitempty"`
	LimitingEvidence string `json:"limiting_evidence,omitempty"`
	// ServiceRates are every stage's service-rate estimates in the trial
	// (stages named by node), and NextLimit the stage they say would limit
	// first (nil: none converged).
	ServiceRates []servicerate.Rate `json:"service_rates,omitempty"`
	NextLimit    *NextLimit         `json:"next_limit,omitempty"`
	// Busy is each stage's busy share over the measured window (stages
	// named by node; from the diagnosis).
	Busy map[string]float64 `json:"busy,omitempty"`
	// Short: the trial ran a shorter window than the plan's (the hint's
	// estimate trial), so its pass is weaker evidence than a full trial's.
	Short bool `json:"short,omitempty"`
	// Hosts is every agent's host accounting over the trial: its threads'
	// CPU and run-queue wait, the host's busy, stolen and other processes'
	// shares (package cpustat; none off Linux).
	Hosts []cpustat.AgentHost `json:"hosts,omitempty"`
	// Disturbed are the runs of this trial's rate that its host disturbed
	// (other processes, steal: HostRules) before this one: repeated, never
	// judged.
	Disturbed []Attempt `json:"disturbed,omitempty"`
}

// Judged says whether the search counts the trial's verdict: every trial
// but the hint's estimate trial, which counts only as a pass of the full
// plan (a short pass says less; its failure is not read: the estimates
// are what it ran for).
func (t Trial) Judged() bool {
	return t.Purpose != PurposeEstimate || (t.Verdict.Pass && !t.Short)
}

// ProfilerCost is what the profiler's own threads used over the trial,
// summed over its agents (cpustat.ProfilerCost).
func (t Trial) ProfilerCost() (cores, share float64, ok bool) {
	return cpustat.AgentsProfilerCost(t.Hosts)
}

// Check is one rule's outcome with the numbers behind it.
type Check struct {
	Rule   string `json:"rule"`
	Pass   bool   `json:"pass"`
	Detail string `json:"detail"`
}

// Verdict is a trial's outcome: it passes only if every check passes.
type Verdict struct {
	Pass   bool    `json:"pass"`
	Checks []Check `json:"checks"`
}

// Failed lists the failing checks' details, for a one-line reason.
func (v Verdict) Failed() []string {
	var out []string
	for _, c := range v.Checks {
		if !c.Pass {
			out = append(out, c.Rule+": "+c.Detail)
		}
	}
	return out
}

// FailedLine says a failing trial in a line: the rules that failed, each
// once (a rule may judge several things: the job's lag and the receivers'
// backlog are both system-backlog), and the stage that limited it
// ("lateness, backlog; limited by host CPU"; "": it passed). The console
// and the report both show it.
func (t Trial) FailedLine() string {
	var rules []string
	for _, c := range t.Verdict.Checks {
		if !c.Pass && !slices.Contains(rules, c.Rule) {
			rules = append(rules, c.Rule)
		}
	}
	if len(rules) == 0 {
		return ""
	}
	line := strings.Join(rules, ", ")
	if t.LimitingStage != "" && t.LimitingStage != "none" {
		line += "; limited by " + t.LimitingStage
	}
	return line
}

// Outcome is what the agents reported for one trial.
type Outcome struct {
	Rate      float64             `json:"rate"` // total target rate
	Senders   []*sendtally.Result `json:"senders"`
	Receivers []*tally.Result     `json:"receivers"`
	Errors    []string            `json:"errors,omitempty"`  // agents that failed or did not answer
	Refused   []string            `json:"refused,omitempty"` // senders that refused the rate (above their send cost)
	Window    [2]int64            `json:"window_unix_ns"`    // measured window (after warm-up)
	// Job is what a stream processor between the senders and the
	// receivers owes them (docs/sut.md): "tuples" (a map or filter) or
	// "windows" (a windowed count: the windows' counts add up to the
	// tuples counted). "": no job, every emitted tuple is owed.
	Job string `json:"job,omitempty"`
	// Jobs are the job agents' operators over the trial (cpsweep
	// --job-agent; docs/dataflow.md): each operator's stage series and
	// the dataflow's edges, which the diagnosis puts between the senders
	// and the receivers.
	Jobs []*protocol.JobResult `json:"jobs,omitempty"`
}

// What a job's output is (Outcome.Job).
const (
	JobTuples  = "tuples"
	JobWindows = "windows"
)

// NextLimit is the stage a trial's estimates say would limit first, and
// its headroom over the trial's rate.
type NextLimit struct {
	servicerate.Limit
	// Headroom is the limit over the trial's target rate, minus 1 (0.2:
	// 20% more would reach it; below 0: the trial was above it).
	Headroom float64 `json:"headroom"`
	// Other is the other method's limit for the same stage (0: none).
	Other float64 `json:"other_method_tuples_per_s,omitempty"`
	// Inconsistent says why the trials contradict the limit: a limit
	// below a rate that passed (the pipeline sustained more), or headroom
	// that the failing trial itself disproves. Such a limit is never
	// printed or used as one: the line says "inconsistent" with both
	// numbers, and the hint ignores it.
	Inconsistent string `json:"inconsistent,omitempty"`
	// Noisy says that a rate above the limit passed once and was not
	// repeated: not enough to call the limit wrong, since the boundary
	// is noisy there (a join measured at 9.8 k views/s, a trial at 12 k
	// that passed once). The limit stands.
	Noisy string `json:"noisy,omitempty"`
	// Through is the stage whose rate it is when the limit is the host's
	// CPUs (Stage "host CPU"): the stage the estimate named could not run
	// for want of CPU (diagnose.HostCPUHeld, the rule the diagnosis
	// follows too). HostEvidence says who used the cores, and HeldBy its
	// point: the thread that waited to run, or how busy the host was.
	Through      string `json:"through,omitempty"`
	HostEvidence string `json:"host_evidence,omitempty"`
	HeldBy       string `json:"held_by,omitempty"`
	// Tie are the other stages whose limits by the same method lie within
	// the two estimates' own spreads of this one (Error): no one of them
	// is the next limit, and all are named.
	Tie []servicerate.Limit `json:"tie,omitempty"`
}

// RateRuns is what every judged run at one rate showed.
type RateRuns struct {
	Rate   float64 `json:"rate"`
	Runs   int     `json:"runs"`
	Passes int     `json:"passes"`
}

// Boundary is what the repeats at the search's boundary measured.
type Boundary struct {
	// Runs is how many runs each boundary rate was to have (--boundary-runs).
	Runs int `json:"runs"`
	// Resolution is the search's own: (first fail - last pass) / last pass
	// when the narrowing ended.
	Resolution float64 `json:"resolution"`
	// Answer is the highest rate that passed every one of its runs (rate 0:
	// none did).
	Answer RateRuns `json:"answer"`
	// Fail is the lowest rate above the answer, and above every rate that
	// passed a run, that failed every one of its runs (rate 0: none did).
	Fail RateRuns `json:"fail"`
	// Mixed are the rates above the answer that passed a run without
	// passing every run it needed, in ascending order.
	Mixed []RateRuns `json:"mixed,omitempty"`
	// Spread is the relative width above the answer in which outcomes
	// varied: (the highest of the mixed rates - answer) / answer. With no
	// mixed rate it is the gap to Fail, the search's resolution.
	Spread float64 `json:"spread"`
	// Reproducible: the answer passed Runs of Runs, Fail failed at least
	// Runs of Runs, and no rate between them or above passed at all.
	Reproducible bool `json:"reproducible"`
	// Statement is the answer as every output prints it.
	Statement string `json:"statement"`
}

// InvalidTrial is a trial an agent failure made impossible to judge.
type InvalidTrial struct {
	N       int     `json:"n"`
	Rate    float64 `json:"rate"`
	Purpose string  `json:"purpose"`
	Agent   string  `json:"agent"`
	// System: the system under test failed (Agent names it), not an agent.
	System  bool   `json:"system,omitempty"`
	Error   string `json:"error"`
	Retries int    `json:"retries"`
}

// History is what the earlier sweeps of the same plan on the same
// machines answered (see sameSweep).
type History struct {
	// Sweeps is how many earlier answers are compared (at most
	// HistorySweeps, the most recent).
	Sweeps int     `json:"sweeps"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// Deviation is this sweep's answer over their median, minus 1.
	Deviation float64 `json:"deviation"`
	// Varies: the earlier answers spread by more than HistorySpread, or
	// this one lies more than HistorySpread from their median: one sweep
	// here is not the plan's capacity.
	Varies    bool   `json:"varies"`
	Statement string `json:"statement"`
}

// AnswerLatency is the end-to-end latency at the answer: from each
// tuple's intended send time to its consumption, through whatever sat
// between (a broker, a relay), over the answer's passing runs. A latency
// is stamped by two clocks, the sender's and the receiver's; Clock says
// how far apart they can be.
type AnswerLatency struct {
	Rate float64 `json:"rate"`
	Runs int     `json:"runs"`
	// The worst run's percentiles (the highest over runs and receivers).
	P50Ns int64 `json:"p50_ns"`
	P99Ns int64 `json:"p99_ns"`
	// BestP50Ns and BestP99Ns are the best run's (each run's worst
	// receiver's, the lowest over runs; 0: one run): with the worst run's,
	// the spread the repeats at the answer show, by which compare tells a
	// change from noise.
	BestP50Ns int64 `json:"best_p50_ns,omitempty"`
	BestP99Ns int64 `json:"best_p99_ns,omitempty"`
	// ClockBoundNs bounds the clock error of each latency: 0 when every
	// agent runs on one machine (one clock); -1 when they do not, and the
	// live latencies rest on the hosts' clocks (NTP), which the harness
	// does not bound.
	ClockBoundNs int64  `json:"clock_bound_ns"`
	Clock        string `json:"clock"`
	// Definition is what the latency measures when it is not each
	// tuple's intended send to its consumption ("": that), e.g. a
	// windowed job's (YSB's window latency).
	Definition string `json:"definition,omitempty"`
}

// Statement is the latency as one line.
func (a *AnswerLatency) Statement() string {
	bound := "clock error not bounded"
	if a.ClockBoundNs >= 0 {
		bound = "± " + numfmt.Ns(float64(a.ClockBoundNs))
	}
	def := "intended send to consumed"
	if a.Definition != "" {
		def = a.Definition
	}
	return fmt.Sprintf("latency at %s (%s, worst of %d run(s)): p50 %s, p99 %s, %s (%s)",
		numfmt.Rate(a.Rate), def, a.Runs, numfmt.Ns(float64(a.P50Ns)), numfmt.Ns(float64(a.P99Ns)), bound, a.Clock)
}

// Attempt is a run of a trial's rate that the host disturbed: what it
// showed, kept, but never judged.
type Attempt struct {
	Reason   string              `json:"reason"`
	Pass     bool                `json:"pass"`
	Achieved float64             `json:"achieved"`
	Hosts    []cpustat.AgentHost `json:"hosts"`
}

// WorstLateness is the senders' lateness as the trial's tables and plots
// show it: each percentile the highest of any sender's (ok false: no
// sender reported).
func (o *Outcome) WorstLateness() (worst histo.Summary, ok bool) {
	for _, s := range o.Senders {
		if s != nil {
			worst, ok = worstOf(worst, s.Lateness), true
		}
	}
	return worst, ok
}

// WorstLatency is the receivers' end-to-end latency likewise, over the
// receivers that recorded any (ok false: none did).
func (o *Outcome) WorstLatency() (worst histo.Summary, ok bool) {
	for _, r := range o.Receivers {
		if r != nil && r.Latency.Count > 0 {
			worst, ok = worstOf(worst, r.Latency), true
		}
	}
	return worst, ok
}

func worstOf(a, b histo.Summary) histo.Summary {
	a.P50, a.P90, a.P99, a.P999, a.Max = max(a.P50, b.P50), max(a.P90, b.P90), max(a.P99, b.P99), max(a.P999, b.P999), max(a.Max, b.Max)
	a.Count += b.Count
	return a
}

// InEvents says a count of a job's input messages in events, as a user
// counts them (" (49,200 events)"), when each message is a bucket of more
// than one and the senders agree on its size ("": one event a message, the
// size unknown, or no outcome): 492 messages were 49,200 events.
func (o *Outcome) InEvents(messages float64) string {
	if o == nil {
		return ""
	}
	bucket := 0
	for _, s := range o.Senders {
		if s == nil || (bucket != 0 && s.BucketSize != bucket) {
			return ""
		}
		bucket = s.BucketSize
	}
	if bucket <= 1 || messages <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%s events)", numfmt.Count(uint64(messages)*uint64(bucket)))
}
