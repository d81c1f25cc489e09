package limits

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/servicerate"
)

// TrialRates gathers a trial's service-rate estimates: every agent's, the
// stages named by their node (receiver0/consumer, sender1/thread0), a
// job's operators by the job (ysb/join), and the black boxes' of the
// diagnosis d (nil: none).
func TrialRates(o *rundir.Outcome, d *diagnose.Diagnosis) []servicerate.Rate {
	return append(agentRates(o), boxServiceRates(d, o)...)
}

// agentRates are the agents' estimates, named.
func agentRates(o *rundir.Outcome) []servicerate.Rate {
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
	for _, j := range o.Jobs { // named as the diagnosis names its operators
		if j != nil {
			out = appendNamed(out, j.Name+"/", withInputShares(j))
		}
	}
	return out
}

// withInputShares sets each operator's share of the job's input: its
// tuples over those of the operators that read the input (no edge into
// them), whose copies side by side add up to it.
func withInputShares(j *protocol.JobResult) []servicerate.Rate {
	fed := map[string]bool{}
	for _, e := range j.Edges {
		fed[e[1]] = true
	}
	var input uint64
	for _, r := range j.ServiceRates {
		if r.Method == servicerate.MethodBusyTime && !fed[r.Stage] {
			input += r.Tuples
		}
	}
	out := append([]servicerate.Rate(nil), j.ServiceRates...)
	for i := range out {
		if input > 0 && out[i].Tuples > 0 {
			out[i].InputShare = float64(out[i].Tuples) / float64(input)
		}
	}
	return out
}

// shareMargin: a share this much below the reference's is the
// operator's lag, not the job's topology.
const shareMargin = 0.05

// KeptShares gives each of a trial's job operators the share of the
// input it had in the latest earlier judged trial that passed, when that
// was larger: an operator at its capacity processes less than reaches it
// (a window at 3.12 k views/s behind a join of 3.29 k read a share of
// 0.19, not YSB's 0.33, and its limit in events/s came out 70% too high),
// and a window whose last batch of a trial closes after the trial read
// 0.23 in a trial that passed, while in a trial that kept up everything
// that reached an operator was processed.
func KeptShares(rates []servicerate.Rate, earlier []rundir.Trial) []servicerate.Rate {
	var ref *rundir.Trial
	for i := len(earlier) - 1; i >= 0 && ref == nil; i-- {
		if earlier[i].Verdict.Pass && Searched(earlier[i]) {
			ref = &earlier[i]
		}
	}
	if ref == nil {
		return rates
	}
	shares := map[string]float64{}
	for _, r := range ref.ServiceRates {
		shares[r.Stage] = max(shares[r.Stage], r.InputShare)
	}
	for i := range rates {
		r := &rates[i]
		if s := shares[r.Stage]; r.InputShare > 0 && s > r.InputShare*(1+shareMargin) {
			r.InputShare, r.InputShareTrial = s, ref.N
		}
	}
	return rates
}

// boxServiceRates turns the diagnosis's black-box rates (buckets per
// second of their backlogged periods) into service rates in tuples, by
// the tuples per bucket each stream carried in the trial. The boxes are
// named as the diagnosis names them (stream0, sut/stream0): they belong
// to no agent.
func boxServiceRates(d *diagnose.Diagnosis, o *rundir.Outcome) []servicerate.Rate {
	if d == nil || o == nil || o.Job != "" {
		// A job's output streams carry what it writes (a filter's share,
		// a window a key), not what it can take: their rate is no limit
		// of its input's ("backlog says jetstream/stream65280 would limit
		// at 33.80 /s", a rate no trial ran).
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
func streamTraffic(o *rundir.Outcome, box string) (tuples, buckets uint64) {
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
		if r.Thread != "" {
			r.Thread = prefix + r.Thread
		}
		out = append(out, r)
	}
	return out
}
