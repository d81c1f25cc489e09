package sweep

import (
	"fmt"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/servicerate"
)

// HintServiceRate is the --hint that starts the search from the stages'
// service-rate estimates.
const HintServiceRate = "service-rate"

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

func appendNamed(out []servicerate.Rate, prefix string, rates []servicerate.Rate) []servicerate.Rate {
	for _, r := range rates {
		r.Stage = prefix + r.Stage
		out = append(out, r)
	}
	return out
}

// NextLimit is the stage a trial's estimates say would limit first, and
// its headroom over the trial's rate.
type NextLimit struct {
	servicerate.Limit
	// Headroom is the limit over the trial's target rate, minus 1 (0.2:
	// 20% more would reach it; below 0: the trial was above it).
	Headroom float64 `json:"headroom"`
	// Other is the other method's limit for the same stage (0: none).
	Other float64 `json:"other_method_tuples_per_s,omitempty"`
}

// nextLimit is the smallest pipeline limit of a trial's estimates.
func nextLimit(rates []servicerate.Rate, rate float64) *NextLimit {
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
	return n
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
	return fmt.Sprintf("next limit: %s at %s (%s%s), headroom %+.0f%% over this trial's rate",
		n.Stage, numfmt.Rate(n.TuplesPerS), n.Method, other, 100*n.Headroom)
}
