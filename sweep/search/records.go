package search

import "github.com/cloudprofiler-go/cp/rundir"

// The search reads and returns the run directory's records.
type (
	Trial    = rundir.Trial
	Result   = rundir.Result
	RateRuns = rundir.RateRuns
	Boundary = rundir.Boundary
	Verdict  = rundir.Verdict
)
