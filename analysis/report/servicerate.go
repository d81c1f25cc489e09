package report

import (
	"fmt"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/limits"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/servicerate"
)

// rateSection compares every stage's service-rate estimates in one trial
// with the sweep's answer.
type rateSection struct {
	Trial, Answer string
	Rows          []rateRow
}

type rateRow struct {
	Stage, Method, Estimate, Limit, Ratio, Status, Utilisation string
}

// rateSectionOf uses the trial whose next limit explains the answer (the
// agreement line's), else the latest passing trial at the answer (its
// stages ran at the highest sustained rate), else the latest trial with
// estimates.
func rateSectionOf(d *rundir.Dir) *rateSection {
	s := d.Summary
	if s == nil || len(s.Result.Trials) == 0 {
		return nil
	}
	var pick, atAnswer *rundir.Trial
	for i := range s.Result.Trials {
		t := &s.Result.Trials[i]
		if len(t.ServiceRates) == 0 {
			continue
		}
		pick = t
		if t.Verdict.Pass && t.Rate == s.Result.LastPass {
			atAnswer = t
		}
	}
	if atAnswer != nil {
		pick = atAnswer
	}
	if explains := limits.RateTrial(s); explains != nil {
		pick = explains
	}
	if pick == nil {
		return nil
	}
	answer := s.Result.LastPass
	sec := &rateSection{Trial: fmt.Sprintf("trial %d (%s, %s)", pick.N, pick.Purpose, numfmt.Rate(pick.Rate)), Answer: "none"}
	if answer > 0 {
		sec.Answer = numfmt.Rate(answer)
	}
	limits := map[[2]string]float64{}
	for _, l := range servicerate.Limits(pick.ServiceRates) {
		limits[[2]string{l.Stage, l.Method}] = l.TuplesPerS
	}
	for _, r := range pick.ServiceRates {
		// A stage that was mostly idle has too few busy periods to read:
		// its row says so in words, with why, not a raw status and dashes.
		row := rateRow{Stage: r.Stage, Method: r.Method, Status: notConverged(r), Estimate: "no estimate", Limit: "", Ratio: "",
			Utilisation: fmt.Sprintf("%.2f", r.Utilisation)}
		if v, ok := r.Value(); ok {
			row.Status = "converged"
			row.Estimate = numfmt.Rate(v)
			if l, ok := limits[[2]string{r.Stage, r.Method}]; ok {
				row.Limit = numfmt.Rate(l)
				if answer > 0 {
					row.Ratio = fmt.Sprintf("%.2f", answer/l)
				}
			}
		}
		sec.Rows = append(sec.Rows, row)
	}
	return sec
}

// notConverged says why a stage has no estimate, for a reader.
func notConverged(r servicerate.Rate) string {
	if r.Why != "" {
		return "not enough busy time to estimate: " + r.Why
	}
	return "not enough busy time to estimate (the stage was mostly idle or starved)"
}
