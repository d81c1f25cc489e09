package protocol

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/scenarios"
	sendtally "github.com/cloudprofiler-go/cp/sender/tally"
	"github.com/cloudprofiler-go/cp/servicerate"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/trialcfg"
	"github.com/cloudprofiler-go/cp/wire"
)

// The agents' control API (HTTP/JSON, on the same port as /metrics):
//
//	GET  /v1/info        AgentInfo
//	POST /v1/trial       start a trial: SenderTrial or ReceiverTrial -> TrialStatus
//	GET  /v1/trial       TrialStatus of the current (or last) trial
//	POST /v1/trial/stop  stop the current trial (it still reports) -> TrialStatus
//	GET  /v1/trial/profile  the last profiled trial's logs (a tar of its files)
//	GET  /v1/trial/activity?since=STAGE:N,...  the trial's latest stage state changes -> ActivityReply
//
// With a token set, every /v1 request needs "Authorization: Bearer TOKEN";
// errors are {"error": "..."} with a 4xx/5xx status.

// API paths.
const (
	PathInfo     = "/v1/info"
	PathTrial    = "/v1/trial"
	PathStop     = "/v1/trial/stop"
	PathProfile  = "/v1/trial/profile"
	PathActivity = "/v1/trial/activity"
)

// MaxActivityChanges bounds the changes of one stage in an ActivityReply
// (and how many an agent keeps per stage: 16 bytes each).
const MaxActivityChanges = 1 << 16

// MaxActivityStages bounds the stages a since= query names.
const MaxActivityStages = 64

// ActivityReply is an agent's latest stage state changes of its running
// (or last) trial: what cpsweep watch builds its live activity graph from.
type ActivityReply struct {
	Trial int `json:"trial"` // 0: no trial yet
	// Running: the trial runs (its stages are still in their last
	// changes' states); false once it has ended.
	Running bool `json:"running"`
	// NowNs is when the agent read its stages (Unix ns of its clock):
	// each stage is in its last change's state at least until then.
	NowNs  int64           `json:"now_ns"`
	Stages []StageActivity `json:"stages"`
}

// StageActivity is one stage's state changes after the cursor asked for.
type StageActivity struct {
	Stage string `json:"stage"`
	Kind  string `json:"kind"`
	// Next is the cursor to ask from next time (since=STAGE:NEXT); Lost
	// counts the changes after the cursor that are not here (overwritten
	// before they were asked for).
	Next uint64 `json:"next"`
	Lost uint64 `json:"lost"`
	// Changes are [unix_ns, state, items] per change, oldest first: at
	// unix_ns the stage entered state (its index in the kind's states,
	// docs/diagnosis.md) having processed items items (modulo 2^56).
	Changes [][3]int64 `json:"changes"`
}

// StatusCapacity is an agent's answer to a trial whose rate the sender
// refuses because it is above what its measured send cost allows: a fact
// about the sender's capacity (the controller fails the trial), not a
// fault (every other refusal makes the trial invalid).
const StatusCapacity = 422 // Unprocessable Entity (a number: this package links no net/http)

// Roles of agents.
const (
	RoleSender   = "sender"
	RoleReceiver = "receiver"
	// RoleJob is a job under test that serves its own operators'
	// accounting (package dataflow, docs/dataflow.md): a trial is the
	// window its series is cut to, the job running before and after it.
	RoleJob = "job"
)

// Trial states.
const (
	StateIdle     = "idle"
	StateStarting = "starting"
	StateRunning  = "running"
	StateDone     = "done"
	StateFailed   = "failed"
)

// AgentInfo describes an agent.
type AgentInfo struct {
	Role string `json:"role"`
	Host string `json:"host"`
	// Machine is the kernel's boot id: the same in every container (pod)
	// on one machine, whose host names differ, so that agents sharing CPUs
	// are known to (empty: an agent older than it, or no /proc).
	Machine   string  `json:"machine,omitempty"`
	Cores     int     `json:"cores"`
	TSCHz     float64 `json:"tsc_hz"`
	TSCNative bool    `json:"tsc_native"`
	Version   string  `json:"version"`
	PID       int     `json:"pid"`
	// DataEndpoints are a receiver's ZeroMQ endpoints as bound (a "*" host
	// means every interface; the controller substitutes the agent's host).
	DataEndpoints []string `json:"data_endpoints,omitempty"`
	State         string   `json:"state"`
	// JobInput is the input of a job between the senders and this
	// receiver (dgrecv --job-input; docs/sut.md), and JobLag the lag of
	// the job's group on it, read when the info was asked for, or
	// JobLagError why it could not be read. Absent without a job.
	JobInput    string `json:"job_input,omitempty"`
	JobLag      *int64 `json:"job_lag,omitempty"`
	JobLagError string `json:"job_lag_error,omitempty"`
}

// SenderTrial configures a sender agent for one trial. Everything the
// agent needs travels inline: the agent opens no file a request names (the
// controller reads the user's scenario and replay files and sends their
// content). Validate checks every field's range before anything is
// allocated.
type SenderTrial struct {
	// The settings every trial of the sweep shares (package trialcfg),
	// embedded: the JSON stays flat.
	trialcfg.Sender
	trialcfg.Agent

	Endpoints     []string           `json:"endpoints"` // thread i uses Endpoints[i % len]
	SenderID      uint8              `json:"sender_id"`
	Rate          float64            `json:"rate"`  // this sender's share, tuples/s
	Shape         scenarios.Shape    `json:"shape"` // rate shape around Rate (see dgsend --shape)
	Duration      time.Duration      `json:"duration_ns"`
	Warmup        time.Duration      `json:"warmup_ns"`
	StartAt       time.Time          `json:"start_at,omitempty"` // common start of all senders (wall clock)
	Scenario      scenarios.Scenario `json:"scenario"`
	LateThreshold time.Duration      `json:"late_threshold_ns,omitempty"`
	HWM           int                `json:"hwm,omitempty"`
	// Stalls are injected stalls of this sender's threads (sender.Config).
	Stalls []inject.Stall `json:"stalls,omitempty"`
	// Profile, if set, is the trial's handler configuration (--profile,
	// parsed once by the controller, sent typed); its paths are relative to
	// a directory of the agent's own (GET PathProfile), and one that leads
	// outside it is refused.
	Profile *profiler.Handlers `json:"profile,omitempty"`
	// Seal is the trial's key for the intended times, with a job between
	// the senders and the receivers (wire.SealKey; zero: none), new for
	// every trial: the job never sees it.
	Seal wire.SealKey `json:"seal,omitzero"`
}

// ReceiverTrial configures a receiver agent for one trial (its endpoints are
// fixed when the agent starts).
type ReceiverTrial struct {
	// The settings every trial of the sweep shares (package trialcfg),
	// embedded: the JSON stays flat.
	trialcfg.Receiver
	trialcfg.Agent

	ExpectStreams int                `json:"expect_streams"`
	HWM           int                `json:"hwm,omitempty"`
	Duration      time.Duration      `json:"duration_ns,omitempty"` // hard limit
	Profile       *profiler.Handlers `json:"profile,omitempty"`     // see SenderTrial
	// TrialStart and SendersEnd, with a job between the senders and the
	// receivers (docs/sut.md): the senders' common start and the end of
	// their schedule (receiver.Config).
	TrialStart time.Time `json:"trial_start,omitempty"`
	SendersEnd time.Time `json:"senders_end,omitempty"`
	// Senders and SenderThreads: the trial's senders and threads per
	// sender, whose streams are the only ones a job's output may name.
	Senders       int `json:"senders,omitempty"`
	SenderThreads int `json:"sender_threads,omitempty"`
	// Owed says which identities a declared filter keeps (receiver.Config).
	Owed *scenarios.Owed `json:"owed,omitempty"`
	// Seal is the trial's key the senders sealed the intended times with
	// (SenderTrial.Seal).
	Seal wire.SealKey `json:"seal,omitzero"`
	// Stalls are injected stalls of the consumer and the lanes (receiver.Config).
	Stalls []inject.Stall `json:"stalls,omitempty"`
}

// ValidProfile checks a trial's handler configuration (nil: none): valid,
// and writing only inside the agent's directory. It parses nothing: the
// configuration arrives typed.
func ValidProfile(h *profiler.Handlers) error {
	if h == nil {
		return nil
	}
	if err := h.Validate(); err != nil {
		return fmt.Errorf("handler configuration of the trial: %w", err)
	}
	return h.CheckLocal()
}

// TrialStatus is an agent's view of its current or last trial.
type TrialStatus struct {
	ID       int               `json:"id"`
	Role     string            `json:"role"`
	State    string            `json:"state"`
	Error    string            `json:"error,omitempty"`
	Started  time.Time         `json:"started"`
	Sender   *sendtally.Result `json:"sender,omitempty"`
	Receiver *tally.Result     `json:"receiver,omitempty"`
	Job      *JobResult        `json:"job,omitempty"`
}

// JobTrial asks a job agent for its operators' accounting over a trial:
// from the request until a stop, or Duration at the latest.
type JobTrial struct {
	Duration time.Duration `json:"duration_ns"`
	// Profile, if set, traces the job's operators in the trial: their
	// points (op.NAME) and state changes (activity.op.NAME) with these
	// handlers, in a directory of the agent's own (see SenderTrial).
	Profile *profiler.Handlers `json:"profile,omitempty"`
}

// MaxJobTrial bounds a job trial's Duration.
const MaxJobTrial = 24 * time.Hour

// Validate checks a job trial's fields.
func (t JobTrial) Validate() error {
	if t.Duration <= 0 || t.Duration > MaxJobTrial {
		return fmt.Errorf("duration_ns %v is outside (0, %v]", t.Duration, MaxJobTrial)
	}
	return ValidProfile(t.Profile)
}

// JobResult is a job's operators over one trial: their stage series (of
// kind operator, docs/diagnosis.md) cut to the trial, and the dataflow's
// edges between them, [from, to] by operator name.
type JobResult struct {
	Name  string      `json:"name"`
	Edges [][2]string `json:"edges"`
	// Reads and Writes are the topics the job reads and writes
	// (driver:subject, e.g. jetstream:ysb.views; Topic): a job whose
	// output another job reads feeds that one, and the analyses follow a
	// tuple from the first job's operators into the next's.
	Reads  []string `json:"reads,omitempty"`
	Writes []string `json:"writes,omitempty"`
	// Node is the run directory's name of the job (job0, ...), set by
	// the sweep, never by the agent.
	Node        string        `json:"node,omitempty"`
	StageSeries *stage.Series `json:"stage_series"`
	// ItemsAreRecords says that the series' items count records (tuples,
	// events), as a job's metrics count them (Flink's numRecordsIn), not
	// the batches (messages) a job agent counts: the input a job took in
	// is then its items, not its items times the senders' bucket.
	ItemsAreRecords bool `json:"items_are_records,omitempty"`
	// ServiceRates are the operators' service rates over the trial, by
	// both methods (docs/service-rate.md; absent: not estimated).
	ServiceRates []servicerate.Rate `json:"service_rates,omitempty"`
	// Injected are the stalls injected into its operators in the trial
	// (experiments only: cpjob --stall), as scheduled, Unix ns.
	Injected []InjectedStall `json:"injected,omitempty"`
	// GoRuntime is what a job in Go spent on its runtime over the trial
	// (absent: not a Go job, or not said).
	GoRuntime *GoRuntime `json:"go_runtime,omitempty"`
}

// GoRuntime is a Go job's runtime over a trial (dataflow.ReadRuntime's
// deltas): its CPU, its garbage collector's share and pauses.
type GoRuntime struct {
	CPUSeconds     float64 `json:"cpu_s"`
	GCCPUSeconds   float64 `json:"gc_cpu_s"`
	GCPauseSeconds float64 `json:"gc_pause_s"`
	GCCycles       uint64  `json:"gc_cycles"`
	GOGC           int64   `json:"gogc"` // -1: off
}

// GCShare is the collector's share of the job's CPU (0: none used).
func (g *GoRuntime) GCShare() float64 {
	if g == nil || g.CPUSeconds <= 0 {
		return 0
	}
	return min(1, g.GCCPUSeconds/g.CPUSeconds)
}

// validate: finite, not negative, the collector within the job's CPU.
func (g *GoRuntime) validate() error {
	for _, v := range []float64{g.CPUSeconds, g.GCCPUSeconds, g.GCPauseSeconds} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > maxRuntimeSeconds {
			return fmt.Errorf("go_runtime: %v seconds: want 0 to %v", v, maxRuntimeSeconds)
		}
	}
	if g.GCCPUSeconds > 1.01*g.CPUSeconds+0.01 {
		return fmt.Errorf("go_runtime: the collector's %.3f s of CPU exceed the job's %.3f s", g.GCCPUSeconds, g.CPUSeconds)
	}
	if g.GOGC < -1 {
		return fmt.Errorf("go_runtime: GOGC %d", g.GOGC)
	}
	return nil
}

// maxRuntimeSeconds bounds a trial's runtime seconds: a day on 1,024
// processors.
const maxRuntimeSeconds = 1024 * 86400

// InjectedStall is a stall injected into a job's operator.
type InjectedStall struct {
	Operator   string `json:"operator"`
	FromUnixNs int64  `json:"from_unix_ns"`
	ToUnixNs   int64  `json:"to_unix_ns"`
}

// MaxJobTopics bounds a job's topics read, and written.
const MaxJobTopics = 16

// validTopic: driver:subject, printable, without spaces, bounded.
func validTopic(tp string) bool {
	drv, subject, ok := strings.Cut(tp, ":")
	if !ok || drv == "" || subject == "" || len(tp) > 256 {
		return false
	}
	for _, c := range tp {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// MaxJobEdges bounds the edges of a JobResult (a dataflow's 256
// operators, each feeding a few).
const MaxJobEdges = 4096

// Validate checks a job's result as read from the network: a valid
// series, and edges between its operators.
func (r *JobResult) Validate() error {
	if r.StageSeries == nil {
		return errors.New("a job result without a stage series")
	}
	if err := r.StageSeries.Validate(); err != nil {
		return err
	}
	if len(r.Name) == 0 || len(r.Name) > 64 || strings.ContainsAny(r.Name, "/ \t\n") {
		return fmt.Errorf("job name %q: want 1 to 64 bytes, no '/' or space", r.Name)
	}
	for _, topics := range [][]string{r.Reads, r.Writes} {
		if len(topics) > MaxJobTopics {
			return fmt.Errorf("%d topics, at most %d", len(topics), MaxJobTopics)
		}
		for _, tp := range topics {
			if !validTopic(tp) {
				return fmt.Errorf("topic %.80q: want driver:subject, at most 256 printable bytes", tp)
			}
		}
	}
	if len(r.Edges) > MaxJobEdges {
		return fmt.Errorf("%d edges, at most %d", len(r.Edges), MaxJobEdges)
	}
	ops := map[string]bool{}
	threadOf := map[string]string{}
	for _, st := range r.StageSeries.Stages {
		if st.Kind != stage.Operator {
			return fmt.Errorf("stage %q is a %s, not an operator", st.Name, st.Kind)
		}
		ops[st.Name], threadOf[st.Name] = true, st.Thread
	}
	for _, e := range r.Edges {
		if !ops[e[0]] || !ops[e[1]] || e[0] == e[1] {
			return fmt.Errorf("edge %s -> %s is not between two of the job's operators", e[0], e[1])
		}
	}
	if len(r.ServiceRates) > 2*len(ops) {
		return fmt.Errorf("%d service rates for %d operators (two methods each)", len(r.ServiceRates), len(ops))
	}
	for _, sr := range r.ServiceRates {
		if !ops[sr.Stage] {
			return fmt.Errorf("a service rate of %q, not one of the job's operators", sr.Stage)
		}
		if sr.Thread != threadOf[sr.Stage] { // the analyses group operators by it
			return fmt.Errorf("operator %s's service rate on thread %.80q, its series on %q", sr.Stage, sr.Thread, threadOf[sr.Stage])
		}
		if v, ok := sr.Value(); ok && (math.IsNaN(v) || math.IsInf(v, 0) || v < 0) {
			return fmt.Errorf("operator %s's service rate %v", sr.Stage, v)
		}
		if !(sr.Error >= 0 && sr.Error <= servicerate.MaxSpread) { // a spread decides ties: NaN or a huge one would tie everything or nothing
			return fmt.Errorf("operator %s's service rate's spread %v: want 0 to %v", sr.Stage, sr.Error, servicerate.MaxSpread)
		}
	}
	if r.GoRuntime != nil {
		if err := r.GoRuntime.validate(); err != nil {
			return err
		}
	}
	if len(r.Injected) > inject.MaxStalls {
		return fmt.Errorf("%d injected stalls, at most %d", len(r.Injected), inject.MaxStalls)
	}
	for _, st := range r.Injected {
		if !ops[st.Operator] || st.ToUnixNs <= st.FromUnixNs || st.ToUnixNs-st.FromUnixNs > inject.MaxStall.Nanoseconds() {
			return fmt.Errorf("an injected stall of %q from %d to %d: not one of the job's operators, or not 0 to %v long", st.Operator, st.FromUnixNs, st.ToUnixNs, inject.MaxStall)
		}
	}
	return nil
}

// Finished reports whether the trial has a final state.
func (s TrialStatus) Finished() bool { return s.State == StateDone || s.State == StateFailed }
