package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/sweep/verdict"
)

// One sweep's repeats measure how its boundary moved while it ran; they
// cannot see how far the whole answer moves from one sweep to the next.
// On a shared VM that is the larger noise (ten demos back to back answered
// 6.4-8.8 M/s, each reproducible to a few % within itself, BENCHMARKS.md),
// and a user who runs one sweep cannot tell. So each sweep compares its
// answer with the earlier sweeps of the same plan on the same machines in
// the same results directory, and says how far they spread.

// HistorySweeps is how many earlier sweeps are compared; HistorySpread
// the spread past which sweeps of one plan are said to vary (the issue's
// 5% around the median, both ways).
const (
	HistorySweeps   = 10
	HistorySpread   = 0.05
	historyMaxDirs  = 100     // run directories looked at, the newest first
	historyMaxBytes = 8 << 20 // a summary.json larger than this is not read
)

// answered: the sweep ended with an answer it stands by.
func answered(p *rundir.Summary) bool {
	return p.Result != nil && p.Result.LastPass > 0 && p.Result.Boundary != nil &&
		!p.Interrupted && p.Contradicted == "" && p.Disturbed == "" && p.Invalid == nil
}

// machinesOf is the agents' roles and machines, sorted: two sweeps whose
// agents ran on the same machines in the same roles measured the same
// hosts.
func machinesOf(agents []protocol.AgentInfo) []string {
	out := make([]string, 0, len(agents))
	for _, a := range agents {
		out = append(out, a.Role+"@"+a.Machine)
	}
	sort.Strings(out)
	return out
}

// sameJudging: two sweeps judged their hosts alike (the thresholds; how
// often and how long they repeated a disturbed trial does not change what
// an answer measured). A sweep that recorded no rules (before they were
// recorded) is not known to have.
func sameJudging(stored json.RawMessage, b verdict.HostRules) bool {
	var a verdict.HostRules
	return len(stored) > 0 && string(stored) != "null" && json.Unmarshal(stored, &a) == nil && a.MaxOthers == b.MaxOthers && a.MaxSteal == b.MaxSteal && a.MaxWait == b.MaxWait
}

// priorAnswers reads the answers of the earlier sweeps in resultsDir (not
// self) whose plan, machines and host rules are this sweep's, the most
// recent HistorySweeps. A directory it cannot read is skipped: the history
// is context, never a reason to fail a sweep.
func priorAnswers(resultsDir, self string, plan TrialPlan, agents []protocol.AgentInfo, rules verdict.HostRules) []float64 {
	want, err := json.Marshal(plan)
	if err != nil || resultsDir == "" {
		return nil
	}
	machines := machinesOf(agents)
	entries, err := os.ReadDir(resultsDir)
	if err != nil {
		return nil
	}
	slices.Reverse(entries) // named by their start time: the newest first
	var found []float64
	for i, e := range entries {
		if i >= historyMaxDirs || len(found) >= HistorySweeps {
			break
		}
		dir := filepath.Join(resultsDir, e.Name())
		if !e.IsDir() || dir == filepath.Clean(self) {
			continue
		}
		d, err := rundir.OpenSummary(dir, historyMaxBytes)
		if err != nil || d.Summary == nil {
			continue
		}
		p := *d.Summary
		if !answered(&p) || !slices.Equal(machinesOf(p.Agents), machines) || !samePlan(p.Plan, want) || !sameJudging(p.HostRules, rules) {
			continue
		}
		found = append(found, p.Result.LastPass)
	}
	return found
}

// samePlan compares a stored plan with this sweep's, both as this build
// writes them (a plan from another version that does not read back the
// same is another plan).
func samePlan(stored json.RawMessage, want []byte) bool {
	var p TrialPlan
	if json.Unmarshal(stored, &p) != nil {
		return false
	}
	got, err := json.Marshal(p)
	return err == nil && bytes.Equal(got, want)
}

// history compares answer with the earlier answers (nil: fewer than two
// to compare with).
func history(answer float64, prior []float64) *rundir.History {
	if answer <= 0 || len(prior) < 2 {
		return nil
	}
	sorted := slices.Sorted(slices.Values(prior))
	n := len(sorted)
	median := sorted[n/2]
	if n%2 == 0 {
		median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	h := &rundir.History{Sweeps: n, Median: median, Min: sorted[0], Max: sorted[n-1], Deviation: answer/median - 1}
	h.Varies = h.Min < median*(1-HistorySpread) || h.Max > median*(1+HistorySpread) ||
		h.Deviation < -HistorySpread || h.Deviation > HistorySpread
	h.Statement = fmt.Sprintf("the %d earlier sweeps of this plan on these machines answered between %s and %s (median %s); this answer lies %+.0f%% from their median",
		n, numfmt.Rate(h.Min), numfmt.Rate(h.Max), numfmt.Rate(median), 100*h.Deviation)
	if h.Varies {
		h.Statement += fmt.Sprintf(": sweeps of it here move by more than %.0f%%, more than one sweep's repeats can show; quote the median and range of several, not one answer", 100*HistorySpread)
	}
	return h
}

// historyLine is how the CLI prints it.
func historyLine(h *rundir.History) string {
	if h == nil {
		return ""
	}
	return "history: " + h.Statement
}
