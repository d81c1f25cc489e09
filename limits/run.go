package limits

import (
	"fmt"
	"slices"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/rundir"
)

// Answer is what limited the sweep's answer: the limiting stage of
// the latest of the search's trials at the first failing rate. The
// profiled trial may run at that rate too, but with the profiler on: it
// is not the search's evidence, and its diagnosis is not the answer's.
func Answer(trials []rundir.Trial, firstFail float64) (stage, evidence string) {
	for _, t := range trials {
		if !t.Verdict.Pass && t.Rate == firstFail && t.LimitingStage != "" && Searched(t) {
			stage, evidence = t.LimitingStage, t.LimitingEvidence
		}
	}
	return stage, evidence
}

// Explanations are the diagnosis's and the service rates' answers to what
// limits the run (limits.Agree adds the activity graph's): the stage the
// diagnosis named for the first failing trial above the answer, and the
// smallest consistent next limit of the trials that bracket the answer
// (those at the answer that passed, and those that failed above it up to
// the first rate that always failed, the rates between having passed
// some runs and failed others; the profiled trial is not the search's). A black
// box has a rate only where it was backlogged, which below its capacity it
// is not, so its limit is most often seen at the failing rate; rateTrial
// says which trial the named limit came from.
func Explanations(s *rundir.Summary) (diagnosis, rates, rateDetail, rateTrial string) {
	diagnosis = s.LimitingStage
	t := RateTrial(s)
	if t == nil {
		return diagnosis, "", "", ""
	}
	n := t.NextLimit
	rateDetail = fmt.Sprintf("%s limit %.0f tuples/s", n.Method, n.TuplesPerS)
	if n.Through != "" {
		rateDetail += fmt.Sprintf(" of %s, held back by the host's CPUs", n.Through)
	}
	switch {
	case t.Verdict.Pass:
		rateTrial = "at the answer"
	case t.Rate == s.Result.FirstFail: // the diagnosis's trial's rate
		rateTrial = "at the first failing rate above the answer"
	case t.Rate > s.Result.FirstFail: // none nearer the answer had one
		rateTrial = "at a failing rate above the first, " + numfmt.Rate(t.Rate)
	default: // a rate between, that passed some runs and failed others
		rateTrial = "at a failing rate above the answer, " + numfmt.Rate(t.Rate)
	}
	return diagnosis, n.Stage, rateDetail, rateTrial
}

// RateTrial is the trial whose next limit is the service rates'
// explanation of the answer (Explanations; nil: none had a consistent
// one): the smallest among the trials that bracket the answer. When none
// of those had one, the failing trial nearest above them that did: a
// black box backlogged in only a period or two at the first failing rate
// shows its rate further up, and the label names that rate.
func RateTrial(s *rundir.Summary) *rundir.Trial {
	var best, above *rundir.Trial
	for i := range s.Result.Trials {
		t := &s.Result.Trials[i]
		if t.Purpose == rundir.PurposeProfile || t.NextLimit == nil || t.NextLimit.Inconsistent != "" || t.NextLimit.TuplesPerS <= 0 {
			continue
		}
		atAnswer := t.Rate == s.Result.LastPass && t.Verdict.Pass
		atFail := !t.Verdict.Pass && t.Rate > s.Result.LastPass && t.Rate <= s.Result.FirstFail
		if (atAnswer || atFail) && (best == nil || t.NextLimit.TuplesPerS < best.NextLimit.TuplesPerS) {
			best = t
		}
		if !t.Verdict.Pass && t.Rate > s.Result.FirstFail && s.Result.FirstFail > 0 && (above == nil || t.Rate < above.Rate) {
			above = t
		}
	}
	if best == nil {
		return above
	}
	return best
}

// ThreadOperators are the operators on the thread named stage, by the
// summary's trials' service rates (nil: stage is no shared thread).
func ThreadOperators(s *rundir.Summary, stage string) []string {
	var out []string
	for _, t := range s.Result.Trials {
		for _, r := range t.ServiceRates {
			if r.Thread == stage && stage != "" && !slices.Contains(out, r.Stage) {
				out = append(out, r.Stage)
			}
		}
	}
	return out
}

// RateTied are the stages tied with the service rates' explanation
// (Explanations), by RateTrial's next limit.
func RateTied(s *rundir.Summary) []string {
	t := RateTrial(s)
	if t == nil {
		return nil
	}
	var out []string
	for _, l := range t.NextLimit.Tie {
		out = append(out, l.Stage)
	}
	return out
}
