package servicerate

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/tsc"
)

// The methods, as they appear in results and metrics.
const (
	MethodRaftLib  = "raftlib"
	MethodBusyTime = "busy_time"
	// MethodBacklog is a black box's rate (the transport, a relay, a
	// broker): what it delivered in the periods in which it was
	// backlogged (package diagnose, BoxRate). It has no busy time.
	MethodBacklog = "backlog"
)

// The statuses of an estimate.
const (
	Converged    = "converged"
	NotConverged = "not_converged"
)

// Rate is one stage's estimate by one method. TuplesPerS is nil unless the
// estimate converged: an estimator that does not know says so.
type Rate struct {
	Stage      string     `json:"stage"`
	Kind       stage.Kind `json:"kind"`
	Method     string     `json:"method"`
	TuplesPerS *float64   `json:"tuples_per_s"`
	Status     string     `json:"status"`
	Converged  bool       `json:"converged"`
	// Periods: raftlib, the non-blocking periods seen; busy_time, the
	// stage samples with busy time.
	Periods int `json:"periods"`
	// T: raftlib, the current period T in seconds; busy_time, the
	// sampling period.
	T float64 `json:"T"`
	// Utilisation is the stage's busy fraction over the run.
	Utilisation float64 `json:"utilisation"`
	// Tuples the stage processed over the run: its share of its kind's
	// traffic (Limits).
	Tuples uint64 `json:"tuples"`
	// raftlib only: periods closed with starvation or blocking (not
	// used), periods lost to a full ring, behaviour changes detected and
	// every converged estimate (the phases of a run).
	BlockedPeriods uint64  `json:"blocked_periods,omitempty"`
	DroppedPeriods uint64  `json:"dropped_periods,omitempty"`
	Changes        int     `json:"changes,omitempty"`
	Phases         []Phase `json:"phases,omitempty"`
	// Why says why an estimate that had numbers is not converged: its
	// phases disagree (raftlib), too few periods or too small a share of
	// the stage's tuples qualified (busy_time).
	Why string `json:"why,omitempty"`
	// ImplausiblePeriods (busy_time) counts sampling periods whose busy
	// time exceeded their length, left out: a clock or accounting error.
	ImplausiblePeriods int `json:"implausible_periods,omitempty"`
	// Error (busy_time) is the estimate's own spread: the relative
	// half-width of a 95% interval of its periods' mean rate (0.04:
	// ±4%), by which two stages' limits within their errors are a tie.
	Error float64 `json:"error,omitempty"`
	// InputShare, when set, is the stage's share of the pipeline's input
	// tuples, from the topology (a job's operator after a filter sees a
	// third of them): Limits uses it instead of the share of its kind's
	// traffic, which holds for stages side by side (lanes, threads), not
	// for operators one after another.
	InputShare float64 `json:"input_share,omitempty"`
	// InputShareTrial, when set, is the trial whose input share this is:
	// an operator that fell behind processed less than reached it, so the
	// share it had in the latest earlier passing trial is used.
	InputShareTrial int `json:"input_share_trial,omitempty"`
	// Thread names the thread the stage shares with other stages ("": its
	// own): a period counts as busy by the thread's busy time, and Limits
	// adds the thread's limit, its stages' costs added up.
	Thread string `json:"thread,omitempty"`
}

// Value is the estimate and whether there is one.
func (r Rate) Value() (float64, bool) {
	if r.TuplesPerS == nil {
		return 0, false
	}
	return *r.TuplesPerS, true
}

// Busy-time needs this much busy time before it says a rate: a few
// buckets would give a rate of their noise.
const minBusyNs = 20e6

// busyShare: busy time counts only from the sampling periods in which the
// stage was busy at least this share of the time. A stage idle most of a
// period starts nearly every bucket cold (woken from a nap, its caches
// cold): at 10% utilisation busy time read 0.61-0.95 of the capacity
// measured alone (BENCHMARKS.md, 2026-11-24), a confident wrong answer. A
// stage that is never that busy says not_converged, and the periods of a
// run's warm-up and drain do not count. Nor do periods in which the stage
// finished no tuple (stalled).
const busyShare = 0.5

// Busy time reports only from at least minBusyPeriods qualifying periods
// holding at least minBusyItemShare of the stage's tuples: one period
// (or a sliver of the run) is that period's noise, not the stage's rate.
const (
	minBusyPeriods   = 3
	minBusyItemShare = 0.1
)

// phaseSpread: RaftLib's phases within one run that differ by more than
// this factor (highest over lowest) are not one service rate: the estimate
// is not converged, whatever its last phase says (periods of 1-2 µs saw
// 45-120 M/s within a trial).
const phaseSpread = 1.5

// Tracker estimates the service rate of every stage of a stage.Set by both
// methods, on the set's sampling goroutine (no thread of its own).
type Tracker struct {
	clock  *tsc.Clock
	period float64 // the set's sampling period, s
	mu     sync.Mutex
	st     map[*stage.Account]*tracked
	order  []*stage.Account
	buf    []stage.Period
	t0     uint64
	// reset: the first sample after Reset only drops the periods closed
	// before it.
	reset bool
	// threadBusy is each shared thread's busy ticks over the latest
	// sampling period, its stages' added (reused from sample to sample).
	threadBusy map[string]uint64
}

type tracked struct {
	raft        *RaftLib
	pstats      stage.PeriodStats
	first, last stage.Reading
	firstTSC    uint64
	lastTSC     uint64
	samples     int
	// busy time and tuples of the periods busy at least busyShare
	busyPeriods       int
	busyTicks, tuples uint64
	spread            periodSpread
	// carry: an operator's busy ticks of the periods in a row that
	// finished no tuple, counted with the period that finishes one (its
	// item outlasted a period); other stages' such periods are stalls
	carry       uint64
	implausible int // periods busy longer than they lasted
}

// Track attaches a tracker to set (nil when set is nil: no accounting)
// and makes the set's stages close service-rate periods. Call it before
// the first stage is added.
func Track(set *stage.Set, clock *tsc.Clock) *Tracker {
	if set == nil {
		return nil
	}
	set.EnableServicePeriods()
	t := &Tracker{clock: clock, period: set.Period().Seconds(), st: map[*stage.Account]*tracked{}, threadBusy: map[string]uint64{}}
	set.OnSample(t.sample)
	return t
}

// Reset starts every estimate afresh from the next sample: a long-lived
// process (a job serving its operators) estimates each trial's rates
// apart. The periods closed meanwhile are drained then and dropped.
func (t *Tracker) Reset() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.st, t.order, t.t0 = map[*stage.Account]*tracked{}, nil, 0
	t.reset = true
}

func (t *Tracker) sample(s stage.Snapshot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.t0 == 0 {
		t.t0 = s.TSC
	}
	if t.reset {
		t.reset = false
		for _, a := range s.Accounts {
			if a.PeriodsOn() {
				t.buf, _ = a.DrainPeriods(t.buf[:0])
			}
		}
	}
	t.sumThreads(s)
	for i, a := range s.Accounts {
		if !a.PeriodsOn() {
			continue // a black box: no thread, no busy time
		}
		x := t.st[a]
		if x == nil {
			x = &tracked{raft: NewRaftLib(DefaultParams), first: s.Readings[i], firstTSC: s.TSC}
			t.st[a] = x
			t.order = append(t.order, a)
		}
		t.buf, x.pstats = a.DrainPeriods(t.buf[:0])
		at := int64(t.clock.TicksToNs(s.TSC - t.t0))
		for _, p := range t.buf {
			if p.Ticks > 0 {
				x.raft.Push(float64(p.Tuples)*t.clock.Hz/float64(p.Ticks), at)
			}
		}
		if dt := s.TSC - x.lastTSC; x.samples > 0 && dt > 0 {
			db := busyTicks(a.Kind(), s.Readings[i]) - busyTicks(a.Kind(), x.last)
			// A period busy without finishing a tuple is a stall (an
			// injected one, a preempted thread), not service: it would
			// pull the rate towards 0, or make it 0 when it is the only
			// busy period of a mostly idle stage.
			done := s.Readings[i].Tuples - x.last.Tuples
			warm := db // a stage on a shared thread is warm when the thread is busy
			if th := a.Thread(); th != "" {
				warm = t.threadBusy[th]
			}
			switch {
			case db > dt+dt/100: // busy longer than the period: not a reading to trust
				x.implausible++
				x.carry = 0
			case done > 0 && (float64(warm) >= busyShare*float64(dt) || x.carry > 0):
				x.busyPeriods++
				x.busyTicks += db + x.carry
				x.tuples += done
				x.spread.add(float64(done) / float64(db+x.carry))
				x.carry = 0
			case done == 0 && float64(db) >= busyShare*float64(dt) && a.Kind() == stage.Operator:
				x.carry += db // a long item (a window's batch) finishes in a later period
			default:
				x.carry = 0
			}
		}
		x.last, x.lastTSC = s.Readings[i], s.TSC
		x.samples++
	}
}

// sumThreads adds up, for each shared thread, its stages' busy ticks
// since their previous sample.
func (t *Tracker) sumThreads(s stage.Snapshot) {
	clear(t.threadBusy)
	for i, a := range s.Accounts {
		th := a.Thread()
		if x := t.st[a]; th != "" && x != nil && x.samples > 0 {
			t.threadBusy[th] += busyTicks(a.Kind(), s.Readings[i]) - busyTicks(a.Kind(), x.last)
		}
	}
}

func busyTicks(k stage.Kind, r stage.Reading) uint64 {
	var b uint64
	for j, st := range stage.States(k) {
		if st.Class == stage.Busy {
			b += r.Ticks[j]
		}
	}
	return b
}

// Rates returns every stage's estimates by both methods, in the order the
// stages joined (an empty list from a nil tracker: estimates off).
func (t *Tracker) Rates() []Rate {
	if t == nil {
		return []Rate{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Rate, 0, 2*len(t.order))
	for _, a := range t.order {
		x := t.st[a]
		util := 0.0
		busyNs := t.clock.TicksToNs(busyTicks(a.Kind(), x.last) - busyTicks(a.Kind(), x.first))
		if el := t.clock.TicksToNs(x.lastTSC - x.firstTSC); el > 0 {
			util = busyNs / el
		}
		tuples := x.last.Tuples - x.first.Tuples
		rl := Rate{Stage: a.Name(), Kind: a.Kind(), Thread: a.Thread(), Tuples: tuples, Method: MethodRaftLib, Status: NotConverged, Periods: x.raft.Periods(),
			T: t.clock.TicksToNs(x.pstats.T) / 1e9, Utilisation: util, BlockedPeriods: x.pstats.Blocked,
			DroppedPeriods: x.pstats.Dropped, Changes: x.raft.Changes(), Phases: x.raft.Phases()}
		if v, ok := x.raft.Current(); ok {
			if why := phasesDisagree(rl.Phases); why != "" {
				rl.Why = why
			} else {
				rl.TuplesPerS, rl.Status, rl.Converged = &v, Converged, true
			}
		}
		bt := Rate{Stage: a.Name(), Kind: a.Kind(), Thread: a.Thread(), Tuples: tuples, Method: MethodBusyTime, Status: NotConverged, Periods: x.busyPeriods,
			T: t.period, Utilisation: util, ImplausiblePeriods: x.implausible}
		bt.judge(t.clock.TicksToNs(x.busyTicks), x.tuples)
		if bt.Converged {
			bt.Error = x.spread.relative()
		}
		out = append(out, rl, bt)
	}
	return out
}

// judge sets a busy-time estimate from the busy ns and tuples of its
// qualifying periods (r.Periods of them, of r.Tuples in all).
func (r *Rate) judge(ns float64, tuples uint64) {
	switch {
	case ns < minBusyNs:
	case r.Periods < minBusyPeriods:
		r.Why = fmt.Sprintf("%d sampling period(s) busy enough to read, at least %d needed", r.Periods, minBusyPeriods)
	case r.Tuples > 0 && float64(tuples) < minBusyItemShare*float64(r.Tuples):
		r.Why = fmt.Sprintf("the periods busy enough to read hold %.1f%% of the stage's tuples, at least %.0f%% needed", 100*float64(tuples)/float64(r.Tuples), 100*minBusyItemShare)
	default:
		v := float64(tuples) / (ns / 1e9)
		r.TuplesPerS, r.Status, r.Converged = &v, Converged, true
	}
}

// phasesDisagree says why a run's RaftLib phases are not one service rate
// ("": they agree within phaseSpread).
func phasesDisagree(phases []Phase) string {
	if len(phases) < 2 {
		return ""
	}
	lo, hi := phases[0].TuplesPerS, phases[0].TuplesPerS
	for _, p := range phases[1:] {
		lo, hi = min(lo, p.TuplesPerS), max(hi, p.TuplesPerS)
	}
	if lo <= 0 || hi/lo <= phaseSpread {
		return ""
	}
	return fmt.Sprintf("its %d phases ranged over %.4g to %.4g tuples/s (more than %.2g×): no one service rate", len(phases), lo, hi, phaseSpread)
}

// Limit is the pipeline throughput at which one stage would saturate, by
// one method: its estimate divided by its share of its kind's traffic (a
// lane that carries half the tuples limits the pipeline at twice its own
// rate).
type Limit struct {
	Stage      string  `json:"stage"`
	Method     string  `json:"method"`
	TuplesPerS float64 `json:"tuples_per_s"` // the pipeline's rate at the stage's limit
	Share      float64 `json:"share"`
	// Thread, for a shared thread's limit, is the thread, and Operators
	// the stages whose costs add up on it, in the order their rates came.
	// Stage is the thread, or the one stage that costs it SoleShare of
	// its time or more (stage.SoleShare: what to make faster).
	Thread    string   `json:"thread,omitempty"`
	Operators []string `json:"operators,omitempty"`
	// Error is the estimate's own spread, relative (Rate.Error; a
	// thread's, its operators' largest).
	Error float64 `json:"error,omitempty"`
}

// Limits returns every converged estimate as a pipeline limit, smallest
// first. Stages that carried no traffic have no share and are left out.
func Limits(rates []Rate) []Limit {
	total := map[stage.Kind]uint64{}
	for _, r := range rates {
		if r.Method == MethodBusyTime || r.Method == MethodBacklog { // one per stage
			total[r.Kind] += r.Tuples
		}
	}
	var out []Limit
	for _, r := range rates {
		v, ok := r.Value()
		if !ok || !(v > 0) || r.Tuples == 0 || total[r.Kind] == 0 { // a rate of 0 limits nothing: it is no estimate
			continue
		}
		share := float64(r.Tuples) / float64(total[r.Kind])
		if r.InputShare > 0 {
			share = r.InputShare
		}
		out = append(out, Limit{Stage: r.Stage, Method: r.Method, TuplesPerS: v / share, Share: share, Error: r.Error})
	}
	out = append(out, threadLimits(rates, out)...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].TuplesPerS < out[j].TuplesPerS })
	return out
}

// threadLimits are the limits of the threads that stages share: each of
// its stages costs the thread share/v seconds for each of the pipeline's
// tuples, one after the other, so the thread saturates at 1 / Σ share/v.
// A thread has a limit by a method only when every stage on it has one by
// that method.
func threadLimits(rates []Rate, stages []Limit) []Limit {
	on := map[string][]string{} // thread -> its stages
	var threads []string
	for _, r := range rates {
		if r.Thread == "" || slices.Contains(on[r.Thread], r.Stage) {
			continue
		}
		if on[r.Thread] == nil {
			threads = append(threads, r.Thread)
		}
		on[r.Thread] = append(on[r.Thread], r.Stage)
	}
	var out []Limit
	for _, th := range threads {
		if len(on[th]) < 2 {
			continue
		}
		for _, method := range []string{MethodBusyTime, MethodRaftLib} {
			cost, most, spread, n := 0.0, 0.0, 0.0, 0
			name := th
			for _, l := range stages {
				if l.Method == method && slices.Contains(on[th], l.Stage) {
					cost += 1 / l.TuplesPerS
					spread = max(spread, l.Error)
					n++
					if 1/l.TuplesPerS > most {
						most, name = 1/l.TuplesPerS, l.Stage
					}
				}
			}
			if n < len(on[th]) || cost <= 0 {
				continue
			}
			if most < stage.SoleShare*cost {
				name = th
			}
			out = append(out, Limit{Stage: name, Method: method, TuplesPerS: 1 / cost, Share: 1, Thread: th, Operators: on[th], Error: spread})
		}
	}
	return out
}
