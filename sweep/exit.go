package sweep

import (
	"context"
	"errors"

	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/sweep/verdict"
)

// Exit statuses of cpsweep, so that a script can tell an answer from a
// failure of the instrument (docs/cpsweep.md).
const (
	ExitAnswer       = 0   // the maximum sustainable rate was found (an interval, or a lower bound)
	ExitError        = 1   // any other error (e.g. the run directory could not be written)
	ExitNoRatePassed = 3   // a real answer: not even the lowest rate tried was sustained
	ExitInvalidPlan  = 4   // bad flags or an invalid plan; nothing ran
	ExitAgentFailure = 5   // an agent failed, refused or stopped answering; no answer
	ExitContradicted = 6   // the trials contradict the answer (a rate well above it passed): the host moved
	ExitDisturbed    = 7   // the host stayed disturbed (other processes, steal) through every repeat of a trial: no answer
	ExitSystemFailed = 8   // the system under test failed (a broker closed its connections mid-trial): no answer
	ExitInterrupted  = 130 // stopped by a signal; the finished trials are kept
)

// ExitCode is the exit status for a sweep's report and error.
func ExitCode(r *rundir.Summary, err error) int {
	var plan *PlanError
	var agent *AgentError
	var disturbed *verdict.DisturbedError
	switch {
	case errors.As(err, &plan):
		return ExitInvalidPlan
	case errors.As(err, &agent) && agent.System:
		return ExitSystemFailed
	case errors.As(err, &agent):
		return ExitAgentFailure
	case errors.As(err, &disturbed):
		return ExitDisturbed
	case errors.Is(err, context.Canceled) || (r != nil && r.Interrupted):
		return ExitInterrupted
	case err != nil:
		return ExitError
	case r != nil && r.Contradicted != "":
		return ExitContradicted
	case r == nil || r.Result == nil || r.Result.LastPass <= 0:
		return ExitNoRatePassed
	}
	return ExitAnswer
}
