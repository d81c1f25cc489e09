package verdict

import "github.com/cloudprofiler-go/cp/rundir"

// A verdict judges a trial's outcome as the run directory records both.
type (
	Outcome = rundir.Outcome
	Verdict = rundir.Verdict
	Check   = rundir.Check
)
