package limits

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/servicerate"
)

// NextHostCPU gives a trial's next limit to the host's CPUs when the
// stage it names was held back by them, by the rule that names a failing
// trial's limiting stage: a transport whose I/O threads waited runnable
// delivers what the CPU let it, not what it could, in a trial that passed
// as in one that failed.
func NextHostCPU(t *rundir.Trial) {
	n := t.NextLimit
	if n == nil || n.Inconsistent != "" || !t.Judged() {
		return
	}
	if why, short := HostCPUBehind(t, n.Stage); why != "" {
		n.Through, n.Stage, n.HostEvidence, n.HeldBy = n.Stage, diagnose.HostCPU, why, short
	}
}

// inconsistentMargin: a limit within this share of what the trials showed
// is noise, not a contradiction.
const inconsistentMargin = 0.05

// Next is the smallest pipeline limit of a trial's estimates, checked
// against the trial itself (passed or not, at rate), the rates the sweep
// has sustained so far (passes, this trial included) and the lowest that
// has failed (0: none). A pass of another trial contradicts it only when
// repeated: a limit below a rate that passed once is kept, and said to
// sit under a noisy boundary.
func Next(rates []servicerate.Rate, rate float64, passed bool, passes Passes, lowestFail float64) *rundir.NextLimit {
	limits := servicerate.Limits(rates)
	if len(limits) == 0 || rate <= 0 {
		return nil
	}
	n := &rundir.NextLimit{Limit: limits[0], Headroom: limits[0].TuplesPerS/rate - 1}
	for _, l := range limits[1:] {
		if l.Stage == n.Stage && l.Method != n.Method {
			n.Other = l.TuplesPerS
			break
		}
	}
	if passed {
		passes.Repeated = max(passes.Repeated, rate) // its own trial sustained the rate it measured at
	}
	n.Inconsistent = Contradiction(n, passes.Repeated, 0)
	if n.Inconsistent == "" && !passed && n.Headroom > inconsistentMargin {
		n.Inconsistent = fmt.Sprintf("%s gives %s headroom of %+.0f%% (%s), but this trial failed at %s", n.Method, n.Stage, 100*n.Headroom, numfmt.Rate(n.TuplesPerS), numfmt.Rate(rate))
	}
	if n.Inconsistent == "" {
		n.Inconsistent = Contradiction(n, 0, lowestFail)
	}
	if n.Inconsistent == "" {
		n.Noisy = noisy(n, passes.Once)
	}
	n.Tie = tied(limits)
	return n
}

// tied are the limits of other stages, by the smallest limit's method,
// within the two estimates' spreads of it (none when neither knows its
// spread): two operators of equal capacity measure a few percent apart,
// and the lower is no more the limit than the other. A stage on the
// smallest limit's thread is part of it, not tied with it.
func tied(limits []servicerate.Limit) []servicerate.Limit {
	first := limits[0]
	var out []servicerate.Limit
	for _, l := range limits[1:] {
		margin := first.Error + l.Error
		if l.Method != first.Method || l.Stage == first.Stage || margin <= 0 || l.TuplesPerS > first.TuplesPerS*(1+margin) ||
			slices.Contains(first.Operators, l.Stage) || slices.Contains(l.Operators, first.Stage) || (l.Thread != "" && l.Thread == first.Thread) ||
			slices.ContainsFunc(out, func(o servicerate.Limit) bool { return o.Stage == l.Stage }) {
			continue
		}
		out = append(out, l)
	}
	return out
}

// noisy says that a rate above the limit passed once and was not
// repeated ("": none did): the boundary is noisy there, which one pass
// cannot tell from a wrong estimate.
func noisy(n *rundir.NextLimit, once float64) string {
	if once > 0 && n.TuplesPerS < once*(1-inconsistentMargin) {
		return fmt.Sprintf("%s passed once above it, not repeated", numfmt.Rate(once))
	}
	return ""
}

// Contradiction says how the sweep's trials contradict the limit ("":
// they do not): it lies below a rate the pipeline sustained, or above one
// at which it failed (the stage may well be that fast, but the pipeline's
// next limit is not above a rate it already failed at).
func Contradiction(n *rundir.NextLimit, sustained, failed float64) string {
	switch {
	case sustained > 0 && n.TuplesPerS < sustained*(1-inconsistentMargin):
		return fmt.Sprintf("%s says %s would limit at %s, but %s passed", n.Method, n.Stage, numfmt.Rate(n.TuplesPerS), numfmt.Rate(sustained))
	case failed > 0 && n.TuplesPerS > failed*(1+inconsistentMargin):
		return fmt.Sprintf("%s says %s would limit at %s, but the pipeline failed at %s", n.Method, n.Stage, numfmt.Rate(n.TuplesPerS), numfmt.Rate(failed))
	}
	return ""
}

// Searched says whether a trial is the search's evidence: judged, and
// not the profiled trial (which ran with the profiler on).
func Searched(t rundir.Trial) bool { return t.Judged() && t.Purpose != rundir.PurposeProfile }

// LowestFail is the lowest rate of a judged failing trial (0: none).
func LowestFail(trials []rundir.Trial) float64 {
	l := 0.0
	for _, t := range trials {
		if !t.Verdict.Pass && Searched(t) && (l == 0 || t.Rate < l) {
			l = t.Rate
		}
	}
	return l
}

// Passes are the highest rates the sweep's judged trials passed at and
// never failed at: Repeated, passed more than once; Once, above it, passed
// once (0: none).
type Passes struct{ Repeated, Once float64 }

// HighestPasses reads them from the trials. A rate that passed once and
// failed when the boundary repeated it was not sustained at all.
func HighestPasses(trials []rundir.Trial) Passes {
	failed, passed := map[float64]bool{}, map[float64]int{}
	for _, t := range trials {
		switch {
		case !Searched(t):
		case t.Verdict.Pass:
			passed[t.Rate]++
		default:
			failed[t.Rate] = true
		}
	}
	var p Passes
	for r, n := range passed {
		switch {
		case failed[r]:
		case n > 1:
			p.Repeated = max(p.Repeated, r)
		default:
			p.Once = max(p.Once, r)
		}
	}
	if p.Once <= p.Repeated {
		p.Once = 0
	}
	return p
}

// Recheck judges every trial's next limit again against all the
// trials so far: a limit printed during the ramp, consistent with what
// had run by then, that a later repeated pass or an earlier failure now
// contradicts is marked inconsistent in the results (its progress line
// was printed before the evidence came), and one under a rate that later
// passed once is marked noisy, so that trials.json and the report never
// keep a limit the sweep itself disproved.
func Recheck(trials []rundir.Trial) {
	passes, failed := HighestPasses(trials), LowestFail(trials)
	for i := range trials {
		if n := trials[i].NextLimit; n != nil && n.Inconsistent == "" {
			if c := Contradiction(n, passes.Repeated, failed); c != "" {
				n.Inconsistent, n.Noisy = c+" (a later trial)", ""
			} else if n.Noisy == "" {
				n.Noisy = noisy(n, passes.Once)
			}
		}
	}
}

// TrialHostCPU says why a failing trial was limited by the host's CPUs
// ("": it was not): they were saturated, or a hot thread (an emission
// thread, a lane, the consumer) waited runnable a large share of the time
// while the stage diagnosis found no stage, or found a stage whose own
// thread could not run. The evidence says who used the cores.
func TrialHostCPU(t *rundir.Trial) string {
	named := t.LimitingStage
	if named == "none" || strings.HasPrefix(t.LimitingEvidence, "late on its own") {
		named = ""
	}
	why, _ := HostCPUBehind(t, named)
	return why
}

// HostCPUBehind is the one rule by which any analysis's answer for a trial
// (the diagnosis's limiting stage, the service rates' next limit) gives way
// to the host's CPUs ("": it does not): the CPUs were saturated and a hot
// thread waited runnable, or that waiting thread is the named stage's own
// (the transport's are libzmq's I/O threads), or nothing was named. named
// is a stage as the analysis spells it ("thread0", "receiver0/lane0",
// "stream0"; "": none). why says who used the cores; short is its point:
// the thread that waited to run, else how busy the host was.
func HostCPUBehind(t *rundir.Trial, named string) (why, short string) {
	if len(t.Hosts) == 0 {
		return "", ""
	}
	held, ok := diagnose.HostCPUHeld(t.Hosts, named)
	if !ok {
		return "", ""
	}
	var who []string
	for _, h := range t.Hosts {
		p := fmt.Sprintf("%s %.2f cores", h.Node, h.Process)
		if len(h.Threads) > 0 {
			p += fmt.Sprintf(" (%s %.2f)", h.Threads[0].Name, h.Threads[0].Cores)
		}
		who = append(who, p)
	}
	others, sut := 0.0, 0.0
	for _, v := range cpustat.HostViews(t.Hosts) {
		others, sut = max(others, v.Others), sut+v.SUT
	}
	if sut > 0 { // its cores are part of the busy share: the parts add up
		who = append(who, fmt.Sprintf("the system under test %.2f cores", sut))
	}
	short = fmt.Sprintf("host busy %.0f%% of %d CPUs", 100*held.Busy, t.Hosts[0].CPUs)
	why = fmt.Sprintf("%s: %s, other processes %.0f%%", short, strings.Join(who, ", "), 100*others)
	if held.Wait >= diagnose.HotThreadWait {
		short = fmt.Sprintf("%s waited runnable %.0f%% of the time", held.Waiter, 100*held.Wait)
		why += "; " + short
	}
	return why, short
}

// SUT names the system under test as a trial's limit when nothing of
// the harness's own accounting was, and the job fell behind its input,
// read from outside (--sut-process).
const SUT = "the system under test"

// SaturatedThread is the share of the time at and above which a thread
// of the system under test counts as saturated: running, or runnable and
// waiting for a core on a busy host (it wanted one all along). A thread
// cannot use more than one core, and the last few percent go to time the
// host accounting's samples miss.
const SaturatedThread = 0.9

// minLagGrowth is the growth of the job's input lag, in messages, that
// says the job fell behind (below it: noise of the lag's reads).
const minLagGrowth = 10

// jobOutputShort says whether the trial failed its delivery rule: the
// job's output was not what it owed.
func jobOutputShort(t *rundir.Trial) bool {
	for _, c := range t.Verdict.Checks {
		if c.Rule == "delivery" && !c.Pass {
			return true
		}
	}
	return false
}

// TrialSUT says why a failing trial that no stage of the harness's own
// accounting limited was limited by the system under test ("": nothing
// says so): a thread of its processes saturated (the busiest on any host,
// at SaturatedThread of a core or more), or the job's lag on its input
// grew (lagGrew, when the receivers read it: lagRead), or its output was
// short (the delivery rule failed: a job that reads ahead holds its
// backlog where the broker's lag cannot see it), while none of its
// threads was saturated, which a job whose work moves between threads
// (a Go program's goroutines) shows, as does one that waits on another
// system. The evidence names the thread, or the busiest process, and the
// lag's growth.
func TrialSUT(t *rundir.Trial, lagGrew float64, lagRead bool) string {
	var thread cpustat.SUTThreadShare
	for _, h := range t.Hosts {
		for _, th := range h.SUTThreads {
			if th.Cores+th.Runqueue > thread.Cores+thread.Runqueue {
				thread = th
			}
		}
	}
	procs := sutProcesses(t)
	lag := ""
	if lagRead && lagGrew >= minLagGrowth {
		lag = fmt.Sprintf("its input lag grew %s messages%s", numfmt.Count(uint64(lagGrew)), t.Outcome.InEvents(lagGrew))
	} else if short := jobOutputShort(t); short {
		lag = "its output was short" // a job that reads ahead holds its backlog where the broker's lag cannot see it
	}
	switch {
	case thread.Cores+thread.Runqueue >= SaturatedThread:
		why := fmt.Sprintf("%s busy %.0f%% of a core", thread.Name(), 100*min(thread.Cores, 1))
		if thread.Runqueue >= 0.05 {
			why += fmt.Sprintf(" and waiting to run %.0f%% of the time: it wanted a core %.0f%% of the time", 100*thread.Runqueue, 100*min(thread.Cores+thread.Runqueue, 1))
		}
		if lag != "" {
			why += "; " + lag
		}
		return why
	case lag != "" && len(procs) > 0:
		return fmt.Sprintf("%s while the harness kept up; %s, no thread saturated (the busiest %.0f%% of a core): a part of it that runs one at a time, or what it waits on",
			lag, processCores(procs), 100*thread.Cores)
	}
	return ""
}

// SUTProcesses says what the system under test's processes used in the
// trial, busiest first ("": none was named with --sut-process): beside a
// broker named as the limit, whether its own process was the busy one.
func SUTProcesses(t *rundir.Trial) string {
	procs := sutProcesses(t)
	if len(procs) == 0 {
		return ""
	}
	return processCores(procs)
}

// sutProcesses are the system under test's processes of a trial by pid,
// each as the agent that saw it busiest saw it (agents on one host see
// the same processes).
func sutProcesses(t *rundir.Trial) map[int]cpustat.SUTProcessShare {
	procs := map[int]cpustat.SUTProcessShare{}
	for _, h := range t.Hosts {
		for _, p := range h.SUTProcesses {
			if p.Cores > procs[p.PID].Cores {
				procs[p.PID] = p
			}
		}
	}
	return procs
}

// processCores says what each of the system under test's processes used,
// busiest first: "cpjob 1.00 cores (3 busy threads), nats-server 0.20 (4)".
func processCores(procs map[int]cpustat.SUTProcessShare) string {
	list := make([]cpustat.SUTProcessShare, 0, len(procs))
	for _, p := range procs {
		list = append(list, p)
	}
	slices.SortFunc(list, func(a, b cpustat.SUTProcessShare) int { return cmp.Compare(b.Cores, a.Cores) })
	for len(list) > 1 && list[len(list)-1].Cores < 0.005 { // an idle process (another nats-server) says nothing
		list = list[:len(list)-1]
	}
	var parts []string
	for i, p := range list[:min(len(list), 3)] {
		if i == 0 {
			parts = append(parts, fmt.Sprintf("%s used %.2f cores (%d busy thread(s))", p.Process, p.Cores, p.Busy))
		} else {
			parts = append(parts, fmt.Sprintf("%s %.2f (%d)", p.Process, p.Cores, p.Busy))
		}
	}
	return strings.Join(parts, ", ")
}
