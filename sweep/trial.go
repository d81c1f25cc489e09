package sweep

import (
	"time"

	"github.com/cloudprofiler-go/cp/cpustat"

	"github.com/cloudprofiler-go/cp/servicerate"
)

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
