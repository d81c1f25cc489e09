package limits

import (
	"fmt"
	"strings"

	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/servicerate"
)

// Named says what a diagnosis named as a trial's or the answer's limit,
// with its evidence, as every output prints it: "" when it was not
// diagnosed (evidence then says why, or is empty).
func Named(stage, evidence string) string {
	switch stage {
	case "":
		return evidence
	case "none":
		return "no stage identified (none was busy at least 80% with work waiting)"
	}
	return fmt.Sprintf("%s (%s)", stage, evidence)
}

// Line is Named as the sweep's line: "limited by: ...".
func Line(stage, evidence string) string {
	if stage == "" {
		return evidence // "not diagnosed: why", or nothing
	}
	return "limited by: " + Named(stage, evidence)
}

// HostCPUNote says why a stage table shows no limiting stage beside a
// limit of the host's CPUs ("": the limit is a stage's): the stages'
// own accounting counts the time each was busy, blocked or idle, and a
// thread that waited to run on a busy host was none of these, so its
// stage reads healthy while the trial was held back.
func HostCPUNote(stage string) string {
	if stage != diagnose.HostCPU {
		return ""
	}
	return "The host's CPUs limited this trial, not a stage: a thread that waited to run on a busy host is neither busy nor blocked in its own accounting, so the stages read healthy below; the host accounting (the trials table's hosts) says who used the cores."
}

// NextLine says a trial's next limit for its progress line.
func NextLine(t rundir.Trial) string {
	n := t.NextLimit
	if n == nil {
		if len(t.ServiceRates) > 0 {
			return "next limit: no stage's service rate converged (not_converged)"
		}
		return ""
	}
	other := ""
	if n.Other > 0 {
		m := servicerate.MethodBusyTime
		if n.Method == servicerate.MethodBusyTime {
			m = servicerate.MethodRaftLib
		}
		other = fmt.Sprintf("; %s %s", m, numfmt.Rate(n.Other))
	}
	if n.Inconsistent != "" {
		return fmt.Sprintf("next limit: inconsistent: %s (%s %s%s): not a limit", n.Inconsistent, n.Method, numfmt.Rate(n.TuplesPerS), other)
	}
	through := ""
	if n.Through != "" {
		through = fmt.Sprintf(" of %s, held back by the host's CPUs: %s", n.Through, n.HeldBy)
	}
	noisy := ""
	if n.Noisy != "" {
		noisy = "; the boundary is noisy: " + n.Noisy
	}
	stage := n.Stage
	switch {
	case n.Thread == n.Stage && n.Thread != "": // a shared thread: what runs on it
		stage += " (" + strings.Join(n.Operators, ", ") + ")"
	case n.Thread != "":
		stage += " (on " + n.Thread + ")"
	}
	if len(n.Tie) > 0 { // no one of them: each with its spread
		tie := []string{fmt.Sprintf("%s at %s ±%.0f%%", stage, numfmt.Rate(n.TuplesPerS), 100*n.Error)}
		for _, l := range n.Tie {
			tie = append(tie, fmt.Sprintf("%s at %s ±%.0f%%", l.Stage, numfmt.Rate(l.TuplesPerS), 100*l.Error))
		}
		return fmt.Sprintf("next limit: a tie: %s (%s%s%s), headroom %+.0f%% over this trial's rate%s",
			strings.Join(tie, ", "), n.Method, through, other, 100*n.Headroom, noisy)
	}
	return fmt.Sprintf("next limit: %s at %s (%s%s%s), headroom %+.0f%% over this trial's rate%s",
		stage, numfmt.Rate(n.TuplesPerS), n.Method, through, other, 100*n.Headroom, noisy)
}
