package limits

import (
	"fmt"

	"github.com/cloudprofiler-go/cp/diagnose"
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
