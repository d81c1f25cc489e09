package sweep

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/internal/numfmt"

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
	ExitChanged      = 9   // cpsweep compare --fail-on-change: a later run's figure changed beyond the runs' own ranges
	ExitShort        = 10  // an answer that falls short of --expect-min-rate or --expect-p99 (a gate for CI)
	ExitWrongOutput  = 11  // a job's output was wrong while it kept up: wrong, not slow; no answer
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
	case errors.As(err, new(*verdict.WrongOutputError)):
		return ExitWrongOutput
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

// Expectation is what a CI asks of a sweep's answer: at least MinRate
// tuples/s (--expect-min-rate), and a p99 latency at the answer of at most
// P99 (--expect-p99); zero asks nothing.
type Expectation struct {
	MinRate float64
	P99     time.Duration
}

// Shortfall says how an answer falls short of e ("" when it does not, or
// when e asks nothing). Only an answer is judged: a sweep without one has
// its own exit status already.
func (e Expectation) Shortfall(r *rundir.Summary) string {
	if r == nil || r.Result == nil || r.Result.LastPass <= 0 {
		return ""
	}
	var short []string
	if e.MinRate > 0 && r.Result.LastPass < e.MinRate {
		short = append(short, fmt.Sprintf("the answer %s is below --expect-min-rate %s", numfmt.Rate(r.Result.LastPass), numfmt.Rate(e.MinRate)))
	}
	if e.P99 > 0 {
		switch {
		case r.Latency == nil || r.Latency.P99Ns <= 0:
			short = append(short, "no latency was measured at the answer to hold to --expect-p99")
		case time.Duration(r.Latency.P99Ns) > e.P99:
			short = append(short, fmt.Sprintf("the p99 latency at the answer %s is above --expect-p99 %v", numfmt.Ns(float64(r.Latency.P99Ns)), e.P99))
		}
	}
	return strings.Join(short, "; ")
}
