package verdict

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/rundir"
)

// Rules are the pass criteria of a trial.
type Rules struct {
	// LatenessBudgets bounds each sender's p99 lateness in slot budgets
	// (one slot = the time between two of a thread's buckets).
	LatenessBudgets float64 `json:"lateness_budgets"`
	// LatenessFloor is the smallest lateness bound, whatever the budget:
	// VMs stall for milliseconds, and that noise must not decide a verdict.
	LatenessFloor time.Duration `json:"lateness_floor_ns"`
	// BacklogGrowth bounds how much the receivers' ring occupancy may grow
	// over the measured window (a Theil–Sen line, see backlogGrowth), as a
	// fraction of capacity.
	BacklogGrowth float64 `json:"backlog_growth"`
	// DelayGrowth bounds how much the queueing delay (the latency trend of
	// consumed tuples) may grow over the window, as a fraction of the
	// window; never less than LatenessFloor. It sees queues in the sockets
	// and the network, which occupancy cannot.
	DelayGrowth float64 `json:"delay_growth"`
	// LatencyP99 is an optional end-to-end objective (0: off).
	LatencyP99 time.Duration `json:"latency_p99_ns,omitempty"`
	// JobKept is the share of the offered rate a job's input may take in
	// less of over the window and still keep up: the search's precision
	// (a shortfall it could not resolve anyway).
	JobKept float64 `json:"job_kept,omitempty"`
}

// DefaultRules are used when a rule is left at zero.
var DefaultRules = Rules{LatenessBudgets: 5, LatenessFloor: 5 * time.Millisecond, BacklogGrowth: 0.10, DelayGrowth: 0.005, JobKept: 0.02}

// Validate checks the rules' ranges (zero means the default).
func (r Rules) Validate() error {
	in := func(v, hi float64) bool { return v >= 0 && v <= hi && !math.IsNaN(v) }
	switch {
	case !in(r.LatenessBudgets, 1e6):
		return fmt.Errorf("--lateness-budgets must be 0 (default) to 1e6, got %v", r.LatenessBudgets)
	case r.LatenessFloor < 0 || r.LatenessFloor > time.Minute:
		return fmt.Errorf("--lateness-floor must be 0 (default) to 1m, got %v", r.LatenessFloor)
	case !in(r.BacklogGrowth, 1):
		return fmt.Errorf("--backlog-growth must be a fraction from 0 (default) to 1, got %v", r.BacklogGrowth)
	case !in(r.JobKept, 1):
		return fmt.Errorf("the share a job's input may fall short of the offered rate by (--precision) must be a fraction from 0 (default) to 1, got %v", r.JobKept)
	case !in(r.DelayGrowth, 1):
		return fmt.Errorf("delay growth must be a fraction from 0 (default) to 1, got %v", r.DelayGrowth)
	case r.LatencyP99 < 0 || r.LatencyP99 > time.Hour:
		return fmt.Errorf("--latency-p99 must be 0 (off) to 1h, got %v", r.LatencyP99)
	}
	return nil
}

func (r Rules) withDefaults() Rules {
	if r.LatenessBudgets <= 0 {
		r.LatenessBudgets = DefaultRules.LatenessBudgets
	}
	if r.LatenessFloor <= 0 {
		r.LatenessFloor = DefaultRules.LatenessFloor
	}
	if r.BacklogGrowth <= 0 {
		r.BacklogGrowth = DefaultRules.BacklogGrowth
	}
	if r.DelayGrowth <= 0 {
		r.DelayGrowth = DefaultRules.DelayGrowth
	}
	if r.JobKept <= 0 {
		r.JobKept = DefaultRules.JobKept
	}
	return r
}

// Rule names, as they appear in verdicts.
const (
	RuleSchedule = "schedule" // senders emitted what the schedule called for
	RuleDelivery = "delivery" // every emitted tuple was received and consumed
	RuleLateness = "lateness" // emission lateness within budget
	RuleBacklog  = "backlog"  // receiver backlog did not grow
	// RuleSystemBacklog: a broker's own backlog (its consumers' lag,
	// summed over every consumer of every receiver) did not grow.
	RuleSystemBacklog = "system-backlog"
	RuleLatency       = "latency"   // optional end-to-end objective
	RuleAgents        = "agents"    // every agent answered and finished
	RuleSendCost      = "send-cost" // every sender accepted its rate (not above its measured send cost)
)

// Judge applies the rules to a trial's outcome.
func Judge(o *rundir.Outcome, rules Rules) rundir.Verdict {
	rules = rules.withDefaults()
	var v rundir.Verdict
	add := func(rule string, pass bool, format string, args ...any) {
		v.Checks = append(v.Checks, rundir.Check{Rule: rule, Pass: pass, Detail: fmt.Sprintf(format, args...)})
	}
	if len(o.Refused) > 0 {
		add(RuleSendCost, false, "%d sender(s) refused the rate: %s", len(o.Refused), o.Refused[0])
		v.Pass = false
		return v
	}
	add(RuleAgents, len(o.Errors) == 0 && len(o.Senders) > 0 && len(o.Receivers) > 0,
		"%d sender and %d receiver result(s); %d error(s)%s", len(o.Senders), len(o.Receivers), len(o.Errors), firstOf(o.Errors))

	var scheduled, emitted, shortfall, dropped, consumed uint64
	incomplete := 0
	worstLate, worstBound := time.Duration(0), time.Duration(0)
	lateOK := true
	for _, s := range o.Senders {
		scheduled += s.ScheduledTups
		emitted += s.Emitted
		shortfall += s.Shortfall
		dropped += s.DroppedTups
		if s.TargetRate > 0 {
			slot := time.Duration(float64(time.Second) * float64(s.BucketSize*s.Threads) / s.TargetRate)
			bound := max(time.Duration(rules.LatenessBudgets*float64(slot)), rules.LatenessFloor)
			p99 := time.Duration(s.Lateness.P99)
			if p99 > bound {
				lateOK = false
			}
			if p99 > worstLate || worstLate == 0 {
				worstLate, worstBound = p99, bound
			}
		}
	}
	add(RuleSchedule, shortfall == 0 && dropped == 0, "%d tuples scheduled, %d emitted, %d behind schedule, %d dropped", scheduled, emitted, shortfall, dropped)

	var latencyP99 int64
	for _, r := range o.Receivers {
		consumed += r.Consumed
		if !r.Complete {
			incomplete++
		}
		latencyP99 = max(latencyP99, r.Latency.P99)
	}
	if o.Job != "" {
		pass, detail := jobDelivery(o, emitted, incomplete)
		add(RuleDelivery, pass, "%s", detail)
	} else {
		add(RuleDelivery, consumed == emitted && incomplete == 0 && len(o.Receivers) > 0,
			"%d emitted, %d consumed (nr_emit %s nr_recv); %d receiver(s) incomplete", emitted, consumed, cmpSign(emitted, consumed), incomplete)
	}
	add(RuleLateness, lateOK, "worst p99 lateness %s (bound %s = max(%g slot budgets, %s))",
		numfmt.Duration(worstLate), numfmt.Duration(worstBound), rules.LatenessBudgets, numfmt.Duration(rules.LatenessFloor))

	addBacklog(o, rules, add)
	addSystemBacklog(o, rules, add)
	if rules.LatencyP99 > 0 {
		add(RuleLatency, time.Duration(latencyP99) <= rules.LatencyP99, "p99 latency %s (objective %s)", numfmt.Ns(float64(latencyP99)), numfmt.Duration(rules.LatencyP99))
	}
	v.Pass = true
	for _, c := range v.Checks {
		v.Pass = v.Pass && c.Pass
	}
	return v
}

// addBacklog judges the receivers' own backlog: their rings' occupancy
// and the queueing delay, over the window.
func addBacklog(o *rundir.Outcome, rules Rules, add func(rule string, pass bool, format string, a ...any)) {
	growth, delay, capacity := backlogGrowth(o)
	limit := math.Max(rules.BacklogGrowth*float64(capacity), 2)
	windowNs := float64(o.Window[1] - o.Window[0])
	delayLimit := time.Duration(math.Max(rules.DelayGrowth*windowNs, float64(rules.LatenessFloor)))
	if o.Job == rundir.JobWindows {
		// A window's latency moves with when its last event fell and when
		// the engine flushed it, up to a window apart: only growth beyond a
		// window is a queue. A job that counts slower than its input falls
		// behind where its lag does not show it (the events wait in its
		// windows, read and acknowledged) and its windows come out later
		// and later: a short trial's quiet period would deliver them all.
		windowLimit := max(delayLimit, expectedWindow(o))
		late := windowLatencyGrowth(o)
		add(RuleBacklog, growth <= limit && late <= windowLimit, "the windows' delay after their end grew %s over the windows out since the window's start (limit %s: a window); over the window ring occupancy grew %.1f buckets (limit %.1f of %d)",
			numfmt.Duration(late), numfmt.Duration(windowLimit), growth, limit, capacity)
	} else {
		add(RuleBacklog, growth <= limit && delay <= delayLimit,
			"over the window the queueing delay grew %s (limit %s) and ring occupancy %.1f buckets (limit %.1f of %d)",
			numfmt.Duration(delay), numfmt.Duration(delayLimit), growth, limit, capacity)
	}

}

// expectedWindow is the windowed job's window as the senders were told
// it (--expect-window), or a second (YSB's trials') when none was.
func expectedWindow(o *rundir.Outcome) time.Duration {
	for _, s := range o.Senders {
		if s != nil && s.ExpectWindowMs > 0 {
			return time.Duration(s.ExpectWindowMs) * time.Millisecond
		}
	}
	return time.Second
}

// addSystemBacklog judges the system's own backlog: the broker's for the
// receivers' consumers, and a job's on its input (docs/sut.md). A lag that
// could not be read fails the rule: the system's backlog is unknown.
func addSystemBacklog(o *rundir.Outcome, rules Rules, add func(rule string, pass bool, format string, a ...any)) {
	grew, limit, consumers, unread, ok := brokerLagGrowth(o, rules)
	jobGrew, _, _, jobUnread, job := jobLagGrowth(o, rules)
	events := o.InEvents(jobGrew)
	switch {
	case ok && job:
		add(RuleSystemBacklog, grew <= limit && unread == 0 && jobGrew <= limit && jobUnread == 0,
			"over the window the job's lag on its input grew %.0f messages%s and the broker's backlog on its output %.0f across %d receiver(s)' consumers (limit %.0f each: %g of a second's messages); %d receiver(s) could not read the job's lag, %d the output's",
			jobGrew, events, grew, consumers, limit, rules.BacklogGrowth, jobUnread, unread)
	case ok:
		add(RuleSystemBacklog, grew <= limit && unread == 0, "over the window the broker's backlog grew %.0f messages across %d receiver(s)' consumers (limit %.0f: %g of a second's messages); %d receiver(s) could not read it",
			grew, consumers, limit, rules.BacklogGrowth, unread)
	case job:
		add(RuleSystemBacklog, jobGrew <= limit && jobUnread == 0, "over the window the job's lag on its input grew %.0f messages%s (limit %.0f: %g of a second's messages); %d receiver(s) could not read it",
			jobGrew, events, limit, rules.BacklogGrowth, jobUnread)
	}
	if taken, counted, ok := inputTaken(o); ok && o.Job != "" {
		offered := offeredRate(o)
		add(RuleSystemBacklog, taken >= offered*(1-rules.JobKept),
			"over the window the job's input took in %s of the %s offered (%s; at most %.0f%% less keeps up: the search's precision)",
			numfmt.Rate(taken), numfmt.Rate(offered), counted, 100*rules.JobKept)
	}
}

// backlogGrowth fits Theil–Sen lines (the median of the slopes between
// every two samples) through every receiver's ring occupancy and latency
// samples within the measured window and returns the growth they predict
// over the window (occupancy summed over receivers, delay the worst
// receiver's), and the total ring capacity.
//
// Not least squares: a sample is an instant, and at millions of tuples a
// second a ring holds a few ms of them, so samples 100 ms apart are mostly
// 0 with a burst caught now and then. One such burst in the last sample
// moved a least-squares line by ~50 buckets of "growth" (the limit is 25.6
// of 256), and the same trials read anything from -133 to +111 buckets
// while their queueing delay did not grow: a failed verdict decided by
// where a burst fell. A backlog that grows raises most pairs' slopes and
// moves the median as it moves a least-squares line; a burst in under a
// third of the samples does not move it (BENCHMARKS.md, 2026-11-25).
func backlogGrowth(o *rundir.Outcome) (buckets float64, delay time.Duration, capacity int) {
	span := float64(o.Window[1]-o.Window[0]) / 1e9
	var occ, lat trend
	for _, r := range o.Receivers {
		capacity += r.RingCapacity
		occ, lat = occ[:0], lat[:0]
		for _, p := range r.Backlog {
			if o.Window[1] > 0 && (p.UnixNs < o.Window[0] || p.UnixNs > o.Window[1]) {
				continue
			}
			x := float64(p.UnixNs-o.Window[0]) / 1e9
			occ = append(occ, point{x, float64(p.Buckets)})
			if p.LatencyNs > 0 {
				lat = append(lat, point{x, float64(p.LatencyNs)})
			}
		}
		buckets += occ.slope() * span
		delay = max(delay, time.Duration(lat.slope()*span))
	}
	return buckets, delay, capacity
}

// windowLatencyGrowth is how much a windowed job's windows' delay grew
// (the worst receiver's Theil–Sen trend over the windows it consumed from
// the measured window's start to its end of run): a window comes out a
// window and a lateness after its events, so the measured window's own
// windows arrive after it, in the quiet period. The delay is from each
// window's end (window_delay_ns): from its latest event (YSB's latency,
// the fallback for results without it) a trial's last window, cut short
// by the senders' end, read as up to a window of growth, and a job that
// kept up at 2 k events/s failed by 1.136 s against a 1 s limit.
func windowLatencyGrowth(o *rundir.Outcome) time.Duration {
	var worst time.Duration
	for _, r := range o.Receivers {
		var lat trend
		for _, p := range r.Backlog {
			y := p.LatencyNs
			if p.WindowDelayNs != nil {
				y = *p.WindowDelayNs
			} else if y <= 0 {
				continue
			}
			if p.UnixNs < o.Window[0] {
				continue
			}
			x := float64(p.UnixNs-o.Window[0]) / 1e9
			if n := len(lat); n == 0 || lat[n-1].y != float64(y) { // a sample per window consumed
				lat = append(lat, point{x, float64(y)})
			}
		}
		if len(lat) > 1 {
			worst = max(worst, time.Duration(lat.slope()*(lat[len(lat)-1].x-lat[0].x)))
		}
	}
	return worst
}

type point struct{ x, y float64 }

// trend is a series of samples in time order.
type trend []point

// trendPoints bounds the samples a slope is taken over (every pair of
// them: ~32 k slopes); a longer series is thinned evenly. A trial's window
// has one sample per 100 ms, so only windows above ~25 s are thinned.
const trendPoints = 256

// slope is the Theil–Sen slope: the median of (y_j - y_i)/(x_j - x_i)
// over every pair of samples (0 with fewer than 3 samples).
func (t trend) slope() float64 {
	if len(t) < 3 {
		return 0
	}
	if len(t) > trendPoints {
		thinned := make(trend, trendPoints)
		for i := range thinned {
			thinned[i] = t[i*(len(t)-1)/(trendPoints-1)]
		}
		t = thinned
	}
	slopes := make([]float64, 0, len(t)*(len(t)-1)/2)
	for i := range t {
		for j := i + 1; j < len(t); j++ {
			if dx := t[j].x - t[i].x; dx > 0 {
				slopes = append(slopes, (t[j].y-t[i].y)/dx)
			}
		}
	}
	if len(slopes) == 0 {
		return 0
	}
	sort.Float64s(slopes)
	n := len(slopes)
	if n%2 == 1 {
		return slopes[n/2]
	}
	return (slopes[n/2-1] + slopes[n/2]) / 2
}

// WindowRate is the receivers' consumption rate inside the measured window
// (from their cumulative counts): what the system actually sustained, not
// stretched by draining buffers after the senders stopped.
func WindowRate(o *rundir.Outcome) float64 {
	if o.Job != "" {
		return jobRate(o)
	}
	var rate float64
	for _, r := range o.Receivers {
		var first, last *tally.BacklogSample
		for i := range r.Backlog {
			p := &r.Backlog[i]
			if p.UnixNs < o.Window[0] || p.UnixNs > o.Window[1] {
				continue
			}
			if first == nil {
				first = p
			}
			last = p
		}
		if first != nil && last != first && last.UnixNs > first.UnixNs {
			rate += float64(last.Consumed-first.Consumed) / (float64(last.UnixNs-first.UnixNs) / 1e9)
		} else {
			rate += r.Rate // too short a window to sample: first to last consumed
		}
	}
	return rate
}

func cmpSign(a, b uint64) string {
	switch {
	case a == b:
		return "=="
	case a > b:
		return ">"
	}
	return "<"
}

func firstOf(errs []string) string {
	if len(errs) == 0 {
		return ""
	}
	return ": " + errs[0]
}
