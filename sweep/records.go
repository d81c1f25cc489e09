package sweep

import "github.com/cloudprofiler-go/cp/rundir"

// The sweep's records are package rundir's: one definition, written here
// and read by the analysis, the report, cpsweep diagnose and the history.
// These are their names here.
type (
	Report       = rundir.Summary
	Result       = rundir.Result
	Trial        = rundir.Trial
	Verdict      = rundir.Verdict
	Check        = rundir.Check
	Outcome      = rundir.Outcome
	NextLimit    = rundir.NextLimit
	RateRuns     = rundir.RateRuns
	Boundary     = rundir.Boundary
	InvalidTrial = rundir.InvalidTrial
	History      = rundir.History
	Attempt      = rundir.Attempt
	// AnswerLatency is the latency at the answer (see answerLatency).
	AnswerLatency = rundir.AnswerLatency
)
