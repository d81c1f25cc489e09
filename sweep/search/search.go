package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/cloudprofiler-go/cp/rundir"
)

// TrialFunc runs one trial at rate. An error means the trial could not be
// judged at all (e.g. every agent is gone) and stops the search; an agent
// failing inside a trial is a failed verdict instead.
type TrialFunc func(ctx context.Context, rate float64, purpose string) (rundir.Trial, error)

// LinearPlan is the paper's search (Fig. 9a): from, from+step, ... up to
// to, stopping at the first failing trial.
type LinearPlan struct {
	From float64 `json:"from"`
	To   float64 `json:"to"`
	Step float64 `json:"step"`
}

// Linear runs the paper's search.
func Linear(ctx context.Context, p LinearPlan, run TrialFunc) (*rundir.Result, error) {
	if p.From <= 0 || p.Step <= 0 || p.To < p.From {
		return nil, fmt.Errorf("linear search needs 0 < from <= to and step > 0 (got from %g, to %g, step %g)", p.From, p.To, p.Step)
	}
	if n := (p.To - p.From) / p.Step; n > 1e6 {
		return nil, fmt.Errorf("linear search from %g to %g in steps of %g is %.0f trials; use --search fast", p.From, p.To, p.Step, n)
	}
	res := &rundir.Result{Method: "linear"}
	start := time.Now()
	defer func() { res.Elapsed = time.Since(start) }()
	for i := 0; ; i++ {
		rate := p.From + float64(i)*p.Step
		if rate > p.To*(1+1e-12) {
			return res, nil
		}
		t, err := runOne(ctx, res, rate, rundir.PurposeLinear, run)
		if err != nil {
			return res, err
		}
		if !t.Verdict.Pass {
			res.FirstFail = rate
			return res, nil
		}
		res.LastPass = rate
	}
}

// ContradictionFactor: a pass this far above the answer's first failing
// rate contradicts it. Near the capacity a rate passes once and fails its
// repeat (a few %); 25% above is not noise at the edge.
const ContradictionFactor = 1.25

// HintServiceRate is the --hint that starts the search from the stages'
// service-rate estimates.
const HintServiceRate = "service-rate"

// DefaultFactor is the ramp's multiplier. Each ramp step costs a trial
// and each doubling of the bracket it leaves costs one narrowing trial, so
// a wider step pays when the capacity is far above the start: on a
// simulated host with the capacity 6-18× the start, failing on lateness
// while keeping up as on loopback, a factor of 4 took 13.8 trials with
// the boundary repeats against 14.5 for a factor of 2 (BENCHMARKS.md,
// sixteenth session). A trial that overshoots costs no more than one
// nearer the capacity: it fails on lateness, or the sender falls behind
// its schedule, within the same duration.
const DefaultFactor = 4

// FastPlan configures the fast search.
type FastPlan struct {
	Start     float64 `json:"start"`         // first rate tried
	Factor    float64 `json:"factor"`        // ramp multiplier (default DefaultFactor)
	Max       float64 `json:"max"`           // never try above this (0: no limit)
	Min       float64 `json:"min"`           // the floor: give up below this when even low rates fail (default Start/1024)
	Precision float64 `json:"precision"`     // stop when (first fail - last pass)/last pass <= this (default 0.01)
	Runs      int     `json:"boundary_runs"` // runs of each boundary rate in all (default DefaultBoundaryRuns; 1: no repeats)
	MaxTrials int     `json:"max_trials"`    // hard limit on trials (default 24)
	// Hint "service-rate": a first, short trial at Start (purpose
	// "estimate") reads every stage's service-rate estimates; the search
	// then tries HintOver × the smallest pipeline limit they give (purpose
	// "hint"), ramping by at most HintFactor if it passes. When none
	// converged there (the stages were mostly idle), the ramp reads them
	// after every pass and jumps as soon as they do. "" : no hint.
	Hint string `json:"hint"`
	// Floor is the smallest rate the senders can pace (the sweep sets
	// sender.MinRate): Start may not be below it, nor the default Min.
	Floor float64 `json:"-"`
}

// The service-rate hint's jump and ramp. The estimates are within ~15%
// of the answer, mostly above it (RaftLib's q reads high at low load), so
// a trial just below one often fails while keeping up, which says little
// about where the capacity is. A trial HintOver above the estimate
// overloads the pipeline: it falls behind, and what it achieved is the
// capacity, so the narrowing starts just below that (prober.hint), as the
// plain search does after its ramp overshoots, without the ramp's steps.
// One that passes (the estimate was low) ramps on by HintFactor; one that
// fails while keeping up puts the capacity just below it (prober.near).
const (
	HintOver   = 1.2
	HintFactor = 1.25
)

// WithDefaults fills the plan's unset fields and checks them.
func (p FastPlan) WithDefaults() (FastPlan, error) {
	if p.Factor == 0 {
		p.Factor = DefaultFactor
	}
	if p.Precision == 0 {
		p.Precision = 0.01
	}
	if p.MaxTrials == 0 {
		p.MaxTrials = 24
	}
	if p.Runs <= 0 {
		p.Runs = DefaultBoundaryRuns
	}
	if p.Min == 0 {
		p.Min = max(p.Start/1024, p.Floor)
	}
	switch {
	case p.Start <= 0:
		return p, fmt.Errorf("fast search needs a positive start rate, got %g", p.Start)
	case p.Start < p.Floor:
		return p, fmt.Errorf("start rate %g tuples/s is below the smallest paced rate, %g tuples/s", p.Start, p.Floor)
	case p.Factor <= 1:
		return p, fmt.Errorf("ramp factor must be above 1, got %g", p.Factor)
	case p.Precision <= 0 || p.Precision >= 1:
		return p, fmt.Errorf("precision must be between 0 and 1 (e.g. 0.01 for 1%%), got %g", p.Precision)
	case p.Max > 0 && p.Max < p.Start:
		return p, fmt.Errorf("max rate %g is below the start rate %g", p.Max, p.Start)
	}
	return p, nil
}

// errTrialLimit ends a search that used up its trials.
var errTrialLimit = errors.New("trial limit reached")

// Fast ramps up geometrically from Start until a trial fails (or down
// until one passes, if the first fails), then narrows [last pass, first
// fail] to the precision (see prober: what failing trials achieved guides
// the next probe). Then the boundary is repeated (settle): the answer is
// the highest rate that passed every one of its runs, and the rates above
// it whose runs disagreed are its measured uncertainty. Only when every
// rate down to the floor (Min) failed is there no answer.
func Fast(ctx context.Context, plan FastPlan, run TrialFunc) (*rundir.Result, error) {
	p, err := plan.WithDefaults()
	if err != nil {
		return nil, err
	}
	f := &fastSearch{ctx: ctx, p: p, run: run, res: &rundir.Result{Method: "fast"}, pr: prober{precision: p.Precision}}
	start := time.Now()
	defer func() { f.res.Elapsed = time.Since(start) }()
	from, purpose := p.Start, rundir.PurposeRamp
	if p.Hint == HintServiceRate {
		if from, purpose, err = f.estimate(); err != nil {
			return f.finish(err)
		}
	}
	if stopped, err := f.ramp(from, purpose); err != nil || stopped {
		return f.finish(err)
	}
	if err := f.narrow(); err != nil {
		return f.finish(err)
	}
	if err := f.recheck(); err != nil {
		return f.finish(err)
	}
	return f.finish(f.settle())
}

// fastSearch is a fast search in progress.
type fastSearch struct {
	ctx context.Context
	p   FastPlan
	run TrialFunc
	res *rundir.Result
	pr  prober
	// hinting: the service-rate hint has not moved the search yet.
	hinting bool
}

func (f *fastSearch) try(rate float64, purpose string) (rundir.Trial, error) {
	if len(f.res.Trials) >= f.p.MaxTrials {
		return rundir.Trial{}, errTrialLimit
	}
	return runOne(f.ctx, f.res, rate, purpose, f.run)
}

// estimate runs the hint's trial and returns the rate the ramp starts
// at: HintOver × the smallest limit the stages' estimates give, or, when
// none converged, Start (after Start when the trial passed the full plan:
// it counts as the ramp's first pass, not run twice).
func (f *fastSearch) estimate() (rate float64, purpose string, err error) {
	start := f.p.Start
	t, err := f.try(start, rundir.PurposeEstimate)
	if err != nil {
		return 0, "", err
	}
	f.hinting = true
	if t.Judged() {
		f.res.LastPass = start
		f.pr.passed(start)
	}
	if next, ok := f.hintAfter(t, start); ok && next > start {
		return next, rundir.PurposeHint, nil
	}
	if f.hinting {
		f.res.Hint = fmt.Sprintf("no stage's service rate converged in the estimate trial at %.0f: the ramp reads them after every pass", start)
	}
	if t.Judged() {
		return f.above(start), rundir.PurposeRamp, nil
	}
	return start, rundir.PurposeRamp, nil
}

// hintAfter reads a passing trial's estimates while the hint has not
// acted: when they converged, the next rate is HintOver × the smallest
// limit (or the ramp's next step, by at most HintFactor, when the trial
// is already above that) and ok is true.
func (f *fastSearch) hintAfter(t rundir.Trial, rate float64) (next float64, ok bool) {
	if !f.hinting {
		return 0, false
	}
	limit, stage, method := 0.0, "", ""
	switch {
	case t.NextLimit != nil && t.NextLimit.TuplesPerS > 0 && t.NextLimit.Inconsistent == "":
		limit, stage, method = t.NextLimit.TuplesPerS, t.NextLimit.Stage, t.NextLimit.Method
	default:
		if limit, stage = impliedLimit(t); limit <= 0 {
			return 0, false
		}
		method = "window busy time"
	}
	f.hinting = false
	f.p.Factor = math.Min(f.p.Factor, HintFactor)
	next = HintOver * limit
	f.res.Hint = fmt.Sprintf("after trial %d at %.0f: %.0f%% of %s's %s limit %.0f", t.N, rate, 100*HintOver, stage, method, limit)
	if next <= rate*(1+f.p.Precision) {
		next = rate * f.p.Factor
		f.res.Hint += fmt.Sprintf(", at or below the rate that passed: ramping by %g", f.p.Factor)
	}
	if f.p.Max > 0 {
		next = math.Min(next, f.p.Max)
	}
	return next, true
}

// MinImpliedBusy: below this busy share a stage's window busy time says
// nothing about its capacity (the extrapolation would be 20× or more).
const MinImpliedBusy = 0.05

// impliedLimit is the pipeline rate at which the busiest stage of a
// passing trial would saturate, by its busy time over the trial's window
// (DS2's true processing rate: achieved ÷ busy share, the same for every
// stage of a pipeline whose stages each carry their share). It is what the
// hint reads when no estimate converged: at a low load it is biased low
// (a stage idle most of the time starts every bucket cold, BENCHMARKS.md),
// which makes it a safe start below the answer, never a reported rate.
func impliedLimit(t rundir.Trial) (float64, string) {
	if !t.Verdict.Pass || t.Achieved <= 0 {
		return 0, ""
	}
	busiest, name := 0.0, ""
	for stage, b := range t.Busy {
		if b > busiest {
			busiest, name = b, stage
		}
	}
	if busiest < MinImpliedBusy {
		return 0, ""
	}
	return t.Achieved / busiest, name
}

// above is the ramp's next rate after a pass at rate.
func (f *fastSearch) above(rate float64) float64 {
	rate *= f.p.Factor
	if f.p.Max > 0 {
		rate = math.Min(rate, f.p.Max)
	}
	return rate
}

// finish turns the trial limit into a stop with its reason.
func (f *fastSearch) finish(err error) (*rundir.Result, error) {
	if errors.Is(err, errTrialLimit) {
		f.res.Stopped = fmt.Sprintf("used all %d trials before reaching %.2g%% precision", f.p.MaxTrials, f.p.Precision*100)
		return f.res, nil
	}
	return f.res, err
}

// ramp goes up from rate by Factor until a trial fails (or down, when
// the first one fails, until one passes); stopped says the search ended
// with its reason in Stopped (the maximum passed, or nothing did). The
// first trial's purpose is purpose (the hint's jump is "hint"), the
// others' rundir.PurposeRamp.
func (f *fastSearch) ramp(rate float64, purpose string) (stopped bool, err error) {
	p, res := &f.p, f.res
	for {
		t, err := f.try(rate, purpose)
		if err != nil {
			return false, err
		}
		if !t.Verdict.Pass {
			res.FirstFail = rate
			f.pr.failed(rate, t.Achieved, purpose)
			if res.LastPass == 0 { // nothing passed yet: ramp down
				return rampDown(res, &f.pr, *p, f.try)
			}
			return false, nil
		}
		res.LastPass = rate
		f.pr.passed(rate)
		if p.Max > 0 && rate >= p.Max {
			res.Stopped = fmt.Sprintf("the maximum rate %g passed: the capacity is above it", p.Max)
			return true, nil
		}
		if next, ok := f.hintAfter(t, rate); ok {
			rate, purpose = next, rundir.PurposeHint
			continue
		}
		rate, purpose = f.above(rate), rundir.PurposeRamp
	}
}

// narrow closes [LastPass, FirstFail) to the precision.
func (f *fastSearch) narrow() error {
	p, res := f.p, f.res
	for res.Precision() > p.Precision {
		next, purpose := f.pr.next(res.LastPass, res.FirstFail)
		t, err := f.try(next, purpose)
		if err != nil {
			return err
		}
		if t.Verdict.Pass {
			res.LastPass = next
			f.pr.passed(next)
		} else {
			res.FirstFail = next
			f.pr.failed(next, t.Achieved, purpose)
		}
	}
	return nil
}

// recheck tests an answer the stages' estimates doubt. When the smallest
// pipeline limit estimated in the trials at the answer is at or above
// ContradictionFactor × the first failing rate, the failures above the
// answer are not explained by any stage's capacity: most often the host
// was busy while they ran (a sweep on a shared machine answered 8 k and
// 40 k against a capacity of 93 k, its estimates reading ~90 k). One trial
// at that rate says which: a pass is repeated with the boundary (settle)
// and contradicts the answer only if every repeat passes too
// (Contradicted, exit status 6: run it again); a failure lets the answer
// stand (a limit the estimates do not see, e.g. a system under test that
// is a black box).
func (f *fastSearch) recheck() error {
	res := f.res
	if res.FirstFail <= 0 || res.LastPass <= 0 {
		return nil
	}
	var limit *rundir.NextLimit // the smallest of the passes at the answer (one may not have converged)
	for _, t := range res.Trials {
		if t.Verdict.Pass && t.Judged() && t.Rate == res.LastPass && t.NextLimit != nil && t.NextLimit.Inconsistent == "" && (limit == nil || t.NextLimit.TuplesPerS < limit.TuplesPerS) {
			limit = t.NextLimit
		}
	}
	rate := ContradictionFactor * res.FirstFail
	if limit == nil || limit.TuplesPerS < rate || (f.p.Max > 0 && rate > f.p.Max) || len(res.Trials) >= f.p.MaxTrials {
		return nil
	}
	_, err := f.try(rate, rundir.PurposeRecheck)
	return err
}

// rampDown tries FirstFail/Factor, /Factor², ... until a rate passes (the
// new LastPass) or the next would be below the floor (p.Min): then it
// says so in res.Stopped and returns true. A failure that fell behind
// measured the capacity: the next probe goes just below what it achieved
// (purpose "hint") before the ramp goes on down from there.
func rampDown(res *rundir.Result, pr *prober, p FastPlan, try func(float64, string) (rundir.Trial, error)) (bool, error) {
	rate, purpose := res.FirstFail/p.Factor, rundir.PurposeRamp
	for {
		if h := pr.hintProbe(); h > 0 && h < res.FirstFail {
			rate, purpose = h, rundir.PurposeHint
		}
		if rate < p.Min {
			res.Stopped = fmt.Sprintf("every rate down to %g failed (the floor is %g: --min-rate)", res.FirstFail, p.Min)
			return true, nil
		}
		t, err := try(rate, purpose)
		if err != nil {
			return false, err
		}
		if t.Verdict.Pass {
			res.LastPass = rate
			pr.passed(rate)
			return false, nil
		}
		res.FirstFail = rate
		pr.failed(rate, t.Achieved, purpose)
		rate, purpose = rate/p.Factor, rundir.PurposeRamp
	}
}

func runOne(ctx context.Context, res *rundir.Result, rate float64, purpose string, run TrialFunc) (rundir.Trial, error) {
	if err := ctx.Err(); err != nil {
		res.Stopped = "interrupted"
		return rundir.Trial{}, err
	}
	t, err := run(ctx, rate, purpose)
	if err != nil {
		return t, err
	}
	t.N, t.Rate, t.Purpose = len(res.Trials)+1, rate, purpose
	res.Trials = append(res.Trials, t)
	return t, nil
}
