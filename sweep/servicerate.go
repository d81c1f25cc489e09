package sweep

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/servicerate"
)

// trialRates gathers every agent's service-rate estimates, the stages
// named by their node (receiver0/consumer, sender1/thread0).
func trialRates(o *Outcome) []servicerate.Rate {
	if o == nil {
		return nil
	}
	var out []servicerate.Rate
	for i, r := range o.Receivers {
		if r != nil {
			out = appendNamed(out, fmt.Sprintf("receiver%d/", i), r.ServiceRates)
		}
	}
	for i, s := range o.Senders {
		if s != nil {
			out = appendNamed(out, fmt.Sprintf("sender%d/", i), s.ServiceRates)
		}
	}
	return out
}

// boxServiceRates turns the diagnosis's black-box rates (buckets per
// second of their backlogged periods) into service rates in tuples, by
// the tuples per bucket each stream carried in the trial. The boxes are
// named as the diagnosis names them (stream0, sut/stream0): they belong
// to no agent.
func boxServiceRates(d *diagnose.Diagnosis, o *Outcome) []servicerate.Rate {
	if d == nil || o == nil {
		return nil
	}
	var out []servicerate.Rate
	for _, b := range d.BoxRates {
		kind, ok := diagnose.BlackBox(b.Stage)
		if !ok {
			continue
		}
		tuples, buckets := streamTraffic(o, b.Stage)
		r := servicerate.Rate{Stage: b.Stage, Kind: kind, Method: servicerate.MethodBacklog, Status: servicerate.NotConverged,
			Periods: b.Periods, T: float64(d.PeriodNs) / 1e9, Utilisation: float64(b.Periods) / float64(max(b.Total, 1)), Tuples: tuples, Why: b.Why}
		if b.PerS > 0 && buckets > 0 {
			v := b.PerS * float64(tuples) / float64(buckets)
			r.TuplesPerS, r.Status, r.Converged = &v, servicerate.Converged, true
		}
		out = append(out, r)
	}
	return out
}

// streamTraffic is what the receivers counted of the stream a black box
// carries ("sut/stream3": stream 3), in tuples and buckets.
func streamTraffic(o *Outcome, box string) (tuples, buckets uint64) {
	name := box[strings.LastIndex(box, "/")+1:]
	id, err := strconv.ParseUint(strings.TrimPrefix(name, "stream"), 10, 32)
	if err != nil {
		return 0, 0
	}
	for _, r := range o.Receivers {
		if r == nil {
			continue
		}
		for _, st := range r.Streams {
			if uint64(st.Stream) == id {
				tuples += st.ReceivedTuples
				buckets += st.Buckets
			}
		}
	}
	return tuples, buckets
}

func appendNamed(out []servicerate.Rate, prefix string, rates []servicerate.Rate) []servicerate.Rate {
	for _, r := range rates {
		r.Stage = prefix + r.Stage
		out = append(out, r)
	}
	return out
}

// hostCPUNextLimit gives a trial's next limit to the host's CPUs when the
// stage it names was held back by them, by the rule that names a failing
// trial's limiting stage: a transport whose I/O threads waited runnable
// delivers what the CPU let it, not what it could, in a trial that passed
// as in one that failed.
func hostCPUNextLimit(t *Trial) {
	n := t.NextLimit
	if n == nil || n.Inconsistent != "" || !t.Judged() {
		return
	}
	if why, short := hostCPUBehind(t, n.Stage); why != "" {
		n.Through, n.Stage, n.HostEvidence, n.HeldBy = n.Stage, HostCPU, why, short
	}
}

// inconsistentMargin: a limit within this share of what the trials showed
// is noise, not a contradiction.
const inconsistentMargin = 0.05

// nextLimit is the smallest pipeline limit of a trial's estimates, checked
// against the trial (passed or not, at rate), the highest rate the sweep
// has sustained so far, this trial included (highestPass), and the lowest
// that has failed (0: none).
func nextLimit(rates []servicerate.Rate, rate float64, passed bool, highestPass, lowestFail float64) *NextLimit {
	limits := servicerate.Limits(rates)
	if len(limits) == 0 || rate <= 0 {
		return nil
	}
	n := &NextLimit{Limit: limits[0], Headroom: limits[0].TuplesPerS/rate - 1}
	for _, l := range limits[1:] {
		if l.Stage == n.Stage && l.Method != n.Method {
			n.Other = l.TuplesPerS
			break
		}
	}
	n.Inconsistent = limitContradiction(n, highestPass, 0)
	if n.Inconsistent == "" && !passed && n.Headroom > inconsistentMargin {
		n.Inconsistent = fmt.Sprintf("%s gives %s headroom of %+.0f%% (%s), but this trial failed at %s", n.Method, n.Stage, 100*n.Headroom, numfmt.Rate(n.TuplesPerS), numfmt.Rate(rate))
	}
	if n.Inconsistent == "" {
		n.Inconsistent = limitContradiction(n, 0, lowestFail)
	}
	return n
}

// contradiction says how the sweep's trials contradict the limit ("":
// they do not): it lies below a rate the pipeline sustained, or above one
// at which it failed (the stage may well be that fast, but the pipeline's
// next limit is not above a rate it already failed at).
func limitContradiction(n *NextLimit, sustained, failed float64) string {
	switch {
	case sustained > 0 && n.TuplesPerS < sustained*(1-inconsistentMargin):
		return fmt.Sprintf("%s says %s would limit at %s, but %s passed", n.Method, n.Stage, numfmt.Rate(n.TuplesPerS), numfmt.Rate(sustained))
	case failed > 0 && n.TuplesPerS > failed*(1+inconsistentMargin):
		return fmt.Sprintf("%s says %s would limit at %s, but the pipeline failed at %s", n.Method, n.Stage, numfmt.Rate(n.TuplesPerS), numfmt.Rate(failed))
	}
	return ""
}

// nextLimitLine says it for the trial's progress line.
func nextLimitLine(t Trial) string {
	n := t.NextLimit
	if n == nil {
		if len(t.ServiceRates) > 0 {
			return "next limit: no stage's service rate converged (not_converged)"
		}
		return ""
	}
	other := ""
	if n.Other > 0 {
		m := servicerate.MethodBusyTime
		if n.Method == servicerate.MethodBusyTime {
			m = servicerate.MethodRaftLib
		}
		other = fmt.Sprintf("; %s %s", m, numfmt.Rate(n.Other))
	}
	if n.Inconsistent != "" {
		return fmt.Sprintf("next limit: inconsistent: %s (%s %s%s): not a limit", n.Inconsistent, n.Method, numfmt.Rate(n.TuplesPerS), other)
	}
	through := ""
	if n.Through != "" {
		through = fmt.Sprintf(" of %s, held back by the host's CPUs: %s", n.Through, n.HeldBy)
	}
	return fmt.Sprintf("next limit: %s at %s (%s%s%s), headroom %+.0f%% over this trial's rate",
		n.Stage, numfmt.Rate(n.TuplesPerS), n.Method, through, other, 100*n.Headroom)
}

// searched says whether a trial is the search's evidence: judged, and
// not the profiled trial (which ran with the profiler on).
func searched(t Trial) bool { return t.Judged() && t.Purpose != rundir.PurposeProfile }

// lowestFail is the lowest rate of a judged failing trial (0: none).
func lowestFail(trials []Trial) float64 {
	l := 0.0
	for _, t := range trials {
		if !t.Verdict.Pass && searched(t) && (l == 0 || t.Rate < l) {
			l = t.Rate
		}
	}
	return l
}

// highestPass is the highest rate that the pipeline sustained: judged
// trials at it passed, and none failed (0: none). A rate that passed once
// and failed when the boundary repeated it was not sustained, and a limit
// below it is no contradiction.
func highestPass(trials []Trial) float64 {
	failed := map[float64]bool{}
	for _, t := range trials {
		if !t.Verdict.Pass && searched(t) {
			failed[t.Rate] = true
		}
	}
	h := 0.0
	for _, t := range trials {
		if t.Verdict.Pass && searched(t) && !failed[t.Rate] {
			h = max(h, t.Rate)
		}
	}
	return h
}

// recheckLimits judges every trial's next limit again against all the
// trials so far: a limit printed during the ramp, consistent with what
// had run by then, that a later pass or an earlier failure now
// contradicts is marked inconsistent in the results (its progress line
// was printed before the evidence came), so that trials.json and the
// report never keep a limit the sweep itself disproved.
func recheckLimits(trials []Trial) {
	sustained, failed := highestPass(trials), lowestFail(trials)
	for i := range trials {
		if n := trials[i].NextLimit; n != nil && n.Inconsistent == "" {
			if c := limitContradiction(n, sustained, failed); c != "" {
				n.Inconsistent = c + " (a later trial)"
			}
		}
	}
}
