package sweep

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/trialcfg"
	"github.com/cloudprofiler-go/cp/wire/jsonev"
)

// JobPlan is a stream processor between the senders and the receivers
// (docs/sut.md): the senders publish into its input, the receivers read
// its output, each a broker URL of any driver.
type JobPlan struct {
	// Input names the job's consumer group (?group=NAME): its lag is the
	// job's backlog, read before every trial and during it.
	Input  string `json:"input"`
	Output string `json:"output"`
	// CatchUp is how long a trial waits for the job to catch up with
	// earlier input (its lag 0) before it starts (0: DefaultCatchUp).
	CatchUp time.Duration `json:"catch_up_ns,omitempty"`
}

// DefaultCatchUp is JobPlan.CatchUp when none is given, and MaxCatchUp
// the longest a trial may wait (it bounds the trial's deadline).
const (
	DefaultCatchUp = time.Minute
	MaxCatchUp     = time.Hour
)

// jobLead is added to the senders' lead in a trial of a job: the senders'
// start is fixed before the receivers start (they are told it, to tell an
// earlier trial's output from this one's).
const jobLead = 500 * time.Millisecond

// UseJob makes j the system under test: the senders send to its input
// (the relay topology, without the group: it is the job's).
func (p *TrialPlan) UseJob(j JobPlan) {
	p.Job, p.Relay, p.SenderTargets = &j, true, []string{withoutGroup(j.Input)}
}

// jobProblems checks a job plan: both ends broker URLs, the input naming
// the job's group, the output schema one the receivers decode.
func (p TrialPlan) jobProblems() []string {
	j := p.Job
	if j == nil {
		return nil
	}
	var out []string
	in, err := driver.Parse(j.Input)
	switch {
	case err != nil:
		out = append(out, fmt.Sprintf("--input: %v", err))
	case in.Group == "":
		out = append(out, fmt.Sprintf("--input %s: name the job's consumer group (?group=NAME, its durable consumer on JetStream): its lag is the job's backlog", j.Input))
	case in.Driver == driver.NATS:
		out = append(out, "--input: core NATS keeps no backlog to read the job's lag from: use jetstream://, redis:// or kafka://")
	}
	if err == nil && in.JSON() && p.BucketSize != 1 {
		out = append(out, fmt.Sprintf("--input %s: format=json sends one event a message: --bucket 1, not %d", j.Input, p.BucketSize))
	}
	outEp, err := driver.Parse(j.Output)
	switch {
	case err != nil:
		out = append(out, fmt.Sprintf("--output: %v", err))
	case outEp.JSON() && outEp.Fields.Windowed() && p.Schema != scenarios.SchemaWindow:
		out = append(out, fmt.Sprintf("--output %s: its mapping names a window's key, window and count: read it with --schema %s", j.Output, scenarios.SchemaWindow))
	case outEp.JSON() && !outEp.Fields.Windowed() && p.Schema == scenarios.SchemaWindow:
		out = append(out, fmt.Sprintf("--output %s: --schema %s reads windows: name the fields of the job's windows (key=..., window_end=..., count=...; docs/brokers.md)", j.Output, scenarios.SchemaWindow))
	}
	if j.CatchUp < 0 || j.CatchUp > MaxCatchUp {
		out = append(out, fmt.Sprintf("--catch-up must be 0 to %v, got %v", MaxCatchUp, j.CatchUp))
	}
	quiet := p.JobQuiet
	if quiet == 0 {
		quiet = trialcfg.DefaultJobQuiet
	}
	switch w := p.ExpectWindow; {
	case w == 0:
	case p.Schema != scenarios.SchemaWindow:
		out = append(out, fmt.Sprintf("--expect-window declares the job's windows: read its output with --schema %s", scenarios.SchemaWindow))
	case w > quiet:
		// trials are at least --job-quiet apart: a longer window could
		// hold the events of two trials, and owe neither's count
		out = append(out, fmt.Sprintf("--expect-window %v is longer than --job-quiet %v: a window could span two trials", w, quiet))
	}
	return out
}

// jobOutput is what the job owes the receivers (rundir.Outcome.Job).
func (p TrialPlan) jobOutput() string {
	switch {
	case p.Job == nil:
		return ""
	case p.Schema == scenarios.SchemaWindow:
		return rundir.JobWindows
	}
	return rundir.JobTuples
}

func (j *JobPlan) catchUp() time.Duration {
	if j.CatchUp > 0 {
		return j.CatchUp
	}
	return DefaultCatchUp
}

// withoutGroup is a broker URL without its group (the senders publish; the
// group is the job's).
func withoutGroup(ep string) string {
	u, err := url.Parse(ep)
	if err != nil {
		return ep
	}
	q := u.Query()
	q.Del("group")
	u.RawQuery = q.Encode()
	return u.String()
}

// waitForJob waits until the job has caught up with its input (its
// group's lag 0, as every receiver agent reads it): a trial starts only
// then, or says why it cannot.
func (c *Controller) waitForJob(ctx context.Context) error {
	j := c.Plan.Job
	limit := j.catchUp()
	deadline, said := time.Now().Add(limit), false
	for {
		lag, err := c.jobLag(ctx)
		var ae *AgentError
		switch {
		case errors.As(err, &ae):
			return err
		case err == nil && lag == 0:
			return nil
		case time.Now().After(deadline) && err != nil:
			return &AgentError{Agent: "the system under test", Err: fmt.Errorf("the job's lag on %s could not be read for %v: %w", j.Input, limit, err), System: true}
		case time.Now().After(deadline):
			return &AgentError{Agent: "the system under test", Err: fmt.Errorf("the job is still %d message(s) behind on %s after %v: is it running? (--catch-up)", lag, j.Input, limit), System: true}
		case !said && c.Waiting != nil && err == nil:
			c.Waiting("waiting up to %v for the job to catch up with %s of its input (its lag: %d message(s))", limit, c.lagEvents(lag), lag)
			said = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// lagEvents says a lag of messages in the user's unit: events, a
// bucket's worth a message in the wire format, one in JSON.
func (c *Controller) lagEvents(lag int64) string {
	per := int64(max(c.Plan.BucketSize, 1))
	if in, err := driver.Parse(c.Plan.Job.Input); err == nil && in.Format == jsonev.FormatJSON {
		per = 1
	}
	return fmt.Sprintf("%d event(s)", lag*per)
}

// jobLag is the job's lag on its input, the highest any receiver agent
// reads. An agent that does not answer, or was started without the job's
// input, is an *AgentError.
func (c *Controller) jobLag(ctx context.Context) (int64, error) {
	var most int64
	for _, r := range c.Receivers {
		info, err := r.Info(ctx)
		switch {
		case err != nil:
			return 0, agentFault(r, err)
		case info.JobInput == "":
			return 0, agentFault(r, fmt.Errorf("it reads no job's lag: start it with --connect OUTPUT?group=cp --job-input %s", c.Plan.Job.Input))
		case info.JobLagError != "":
			return 0, errors.New(info.JobLagError)
		case info.JobLag == nil:
			return 0, agentFault(r, errors.New("it reported the job's input but no lag"))
		}
		most = max(most, *info.JobLag)
	}
	return most, nil
}

// owedPattern is, for a map or filter job with a declared filter, which
// identities the filter keeps: the receivers judge its output per
// identity against it (docs/sut.md). nil without a filter (every
// identity sent is owed), for windows, and for a sender that drops
// buckets (a dropped bucket moves the templates on but not the tuple
// sequence; the filter is then judged by counts).
func (p TrialPlan) owedPattern() (*scenarios.Owed, error) {
	if p.Job == nil || p.ExpectFilter == "" || p.Schema == scenarios.SchemaWindow || p.Overflow == trialcfg.Drop || p.ScenarioSpec == nil {
		return nil, nil
	}
	pred, err := scenarios.ParsePredicate(p.ScenarioSpec.Schema, p.ExpectFilter)
	if err != nil {
		return nil, &PlanError{Problems: []string{err.Error()}}
	}
	owed, err := p.ScenarioSpec.Owed(pred, p.BucketSize)
	if err != nil {
		return nil, fmt.Errorf("the identities the filter %q keeps: %w", p.ExpectFilter, err)
	}
	return owed, nil
}
