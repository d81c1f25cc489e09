package sweep

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/limits"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/sweep/search"
	"github.com/cloudprofiler-go/cp/sweep/verdict"
)

// What a sweep prints for people: a line per trial, the estimate of the
// trials left, the final table and the answer.

func (s *Sweep) trialLine(t rundir.Trial) string {
	outcome := "PASS"
	if !t.Verdict.Pass {
		outcome = "FAIL"
	}
	line := fmt.Sprintf("trial %2d  %-9s  %12s  %s  achieved %s  (%.1fs)", t.N, t.Purpose, numfmt.Rate(t.Rate), outcome, numfmt.Rate(t.Achieved), t.Elapsed.Seconds())
	f := t.Verdict.Failed()
	if len(f) == 0 {
		return line
	}
	if !s.Verbose { // one line: the rules that failed, and what limited it
		return line + "  failed: " + t.FailedLine()
	}
	line += "\n          " + strings.Join(f, "\n          ")
	if l := limits.Line(t.LimitingStage, t.LimitingEvidence); l != "" {
		line += "\n          " + l
	}
	return line
}

// estimateLeft guesses the trials (and time) a fast search still needs.
func (s *Sweep) estimateLeft(r *rundir.Result) string {
	if s.Search.Method == "linear" || len(r.Trials) == 0 {
		return ""
	}
	runsEach := s.Search.Fast.Runs
	if runsEach <= 0 {
		runsEach = search.DefaultBoundaryRuns
	}
	// While the boundary is repeated, the repeats left are the estimate
	// (a repeat that fails moves the answer down, which adds runs: a
	// lower bound); after the profiled trial the search is over.
	switch r.Trials[len(r.Trials)-1].Purpose {
	case "profile":
		return ""
	case rundir.PurposeRepeat, rundir.PurposeRecheck, rundir.PurposeBound, rundir.PurposeCandidate:
		return repeatsLeft(r, runsEach)
	}
	lastPass, firstFail := heldInterval(r)
	if firstFail == 0 || lastPass == 0 {
		return ""
	}
	p := s.Search.Fast.Precision
	if p == 0 {
		p = 0.01
	}
	lo, hi := numfmt.RateInterval(lastPass, firstFail)
	if (firstFail-lastPass)/lastPass <= p {
		if runsEach <= 1 {
			return ""
		}
		return fmt.Sprintf("interval [%s, %s) is within %.2g%%: both rates are repeated next, to %d runs each", lo, hi, 100*p, runsEach)
	}
	left := narrowingLeft(lastPass, firstFail, p)
	return fmt.Sprintf("interval [%s, %s): about %d more trial(s), ~%v", lo, hi, left, (time.Duration(left) * s.perTrial(r)).Round(time.Second))
}

// heldInterval is the interval as the search holds it: the lowest failing
// rate, and the highest pass below it (a pass whose repeat failed is
// above); a trial that was not judged does not count.
func heldInterval(r *rundir.Result) (lastPass, firstFail float64) {
	for _, t := range r.Trials {
		if t.Judged() && !t.Verdict.Pass && (firstFail == 0 || t.Rate < firstFail) {
			firstFail = t.Rate
		}
	}
	for _, t := range r.Trials {
		if t.Judged() && t.Verdict.Pass && (firstFail == 0 || t.Rate < firstFail) {
			lastPass = math.Max(lastPass, t.Rate)
		}
	}
	return lastPass, firstFail
}

// narrowingLeft is about how many trials narrow [lastPass, firstFail) to
// the precision p (hints close faster than halving).
func narrowingLeft(lastPass, firstFail, p float64) int {
	return 1 + int(math.Ceil(math.Max(0, math.Log2((firstFail-lastPass)/lastPass/p))/2))
}

// trialOverhead is what a trial takes beside its warm-up and window: the
// agents' start, the end markers and the accounting.
const trialOverhead = 2 * time.Second

// perTrial is the trials' mean length so far, or the plan's.
func (s *Sweep) perTrial(r *rundir.Result) time.Duration {
	var total time.Duration
	for _, t := range r.Trials {
		total += t.Elapsed
	}
	if len(r.Trials) == 0 || total <= 0 {
		return s.Ctrl.Plan.Warmup + s.Ctrl.Plan.Duration + trialOverhead
	}
	return total / time.Duration(len(r.Trials))
}

// aboutLeft says, on the live line of trial n at rate, about how many
// trials the sweep runs in all and how long is left, counting this one
// ("of about 14, ~1m20s left"); a ramp that has not failed yet says how
// long a trial takes.
func (s *Sweep) aboutLeft(r *rundir.Result, n int, rate float64) string {
	per := s.perTrial(r)
	left := -1 // after this trial
	switch s.Search.Method {
	case "linear":
		if l := s.Search.Linear; l.Step > 0 {
			left = int(math.Floor((l.To-rate)/l.Step + 1e-9))
		}
	default:
		runsEach := max(s.Search.Fast.Runs, 1)
		if lastPass, firstFail := heldInterval(r); lastPass > 0 && firstFail > 0 {
			p := s.Search.Fast.Precision
			if p <= 0 {
				p = 0.01
			}
			left = narrowingLeft(lastPass, firstFail, p) + 2*(runsEach-1)
			if (firstFail-lastPass)/lastPass <= p {
				left = 2 * (runsEach - 1)
			}
		}
		if m := s.Search.Fast.MaxTrials; m > 0 && left >= 0 && n+left > m {
			left = max(m-n, 0)
		}
	}
	switch {
	case left < 0 && s.Search.Method != "linear" && s.Search.Fast.MaxTrials > 0:
		return fmt.Sprintf("(of at most %d, ~%v a trial)", s.Search.Fast.MaxTrials, per.Round(time.Second))
	case left < 0:
		return fmt.Sprintf("(~%v a trial)", per.Round(time.Second))
	}
	return fmt.Sprintf("(of about %d, ~%v left)", n+left, (time.Duration(left+1) * per).Round(time.Second))
}

// repeatsLeft says how the boundary repeats stand: the runs so far of the
// rate the latest repeat ran.
func repeatsLeft(r *rundir.Result, runsEach int) string {
	last := r.Trials[len(r.Trials)-1]
	at := search.Tally(r.Trials)[last.Rate]
	switch {
	case !last.Verdict.Pass && at.Passes > 0:
		return fmt.Sprintf("repeating the boundary: %s passed only %d of %d runs: the answer moves below it", numfmt.Rate(last.Rate), at.Passes, at.Runs)
	case at.Runs >= runsEach:
		return ""
	}
	return fmt.Sprintf("repeating the boundary: %s passed %d of %d runs so far (%d asked)", numfmt.Rate(last.Rate), at.Passes, at.Runs, runsEach)
}

// WriteText prints the final table and the answer.
func WriteText(w io.Writer, r *rundir.Summary) {
	if r.Result != nil {
		writeTrialTable(w, r.Result.Trials)
	}
	writeAnswer(w, r, true)
}

// WriteAnswer prints the answer and what bears on it for a person,
// without the trials' table (the console has shown a line a trial;
// trials.csv and the report keep them), each fact on one line: WriteText
// gives the details.
func WriteAnswer(w io.Writer, r *rundir.Summary) { writeAnswer(w, r, false) }

func writeAnswer(w io.Writer, r *rundir.Summary, verbose bool) {
	res := r.Result
	if res == nil {
		fmt.Fprintln(w, "no trial ran")
		return
	}
	switch {
	case r.Disturbed != "":
		fmt.Fprintf(w, "no answer: the host stayed disturbed: %s\n", r.Disturbed)
		if res.LastPass > 0 {
			fmt.Fprintf(w, "(before it, %s passed undisturbed; measure again when the host is quieter, or raise --max-others / --max-steal to accept the noise)\n", numfmt.Rate(res.LastPass))
		}
	case r.Invalid != nil && res.LastPass <= 0:
		fmt.Fprintf(w, "no answer: the sweep failed after %d judged trial(s)\n", len(res.Trials))
	case res.Boundary != nil && res.LastPass > 0:
		// The answer first, in a short line; the uncertainty and the
		// search's resolution below it (the statement is the one the
		// report and summary.json carry, in parts).
		parts := topLevelParts(res.Boundary.Statement)
		fmt.Fprintf(w, "max sustainable throughput: %s (%d trials in %v)%s\n",
			parts[0], len(res.Trials), res.Elapsed.Round(time.Second), profiledNote(r))
		if len(parts) > 1 {
			fmt.Fprintf(w, "  %s\n", strings.Join(parts[1:], "; "))
		}
	case res.LastPass > 0 && res.FirstFail > 0:
		lo, hi := numfmt.RateInterval(res.LastPass, res.FirstFail)
		fmt.Fprintf(w, "max sustainable throughput: [%s, %s) (%.2f%% wide), %d trials in %v%s\n",
			lo, hi, 100*res.Precision(), len(res.Trials), res.Elapsed.Round(time.Second), profiledNote(r))
	case res.LastPass > 0:
		fmt.Fprintf(w, "max sustainable throughput: at least %s (nothing failed), %d trials%s\n", numfmt.Rate(res.LastPass), len(res.Trials), profiledNote(r))
	default:
		fmt.Fprintf(w, "no rate passed (lowest failing %s), %d trials\n", numfmt.Rate(res.FirstFail), len(res.Trials))
	}
	if r.Contradicted != "" {
		fmt.Fprintf(w, "NOT TRUSTWORTHY: %s\n", r.Contradicted)
	}
	if r.Latency != nil {
		fmt.Fprintln(w, r.Latency.Statement())
	}
	switch {
	case r.Colocated != "" && verbose:
		fmt.Fprintf(w, "co-located: %s\n", r.Colocated)
	case r.Colocated != "":
		fmt.Fprintf(w, "co-located: %s\n", verdict.BriefColocation(r.Colocated, r.Unsteady))
	}
	if l := historyLine(r.History); l != "" {
		fmt.Fprintln(w, l)
	}
	if n := verdict.DisturbedRuns(res.Trials); n > 0 {
		fmt.Fprintf(w, "disturbed: %d run(s) repeated because other work on the host disturbed them (trials.json: disturbed)\n", n)
	}
	if res.FirstFail > 0 && r.LimitingStage != "" {
		fmt.Fprintln(w, limits.Line(r.LimitingStage, r.LimitingEvidence))
	}
	if res.Stopped != "" {
		fmt.Fprintf(w, "stopped early: %s\n", res.Stopped)
	}
	if res.Hint != "" {
		fmt.Fprintf(w, "service-rate hint: %s\n", res.Hint)
	}
	if inv := r.Invalid; inv != nil && inv.System {
		fmt.Fprintf(w, "SWEEP FAILED: trial %d at %s could not be judged: the system under test failed: %s\n", inv.N, numfmt.Rate(inv.Rate), inv.Error)
		fmt.Fprintln(w, "the interval above is only what the finished trials showed; bring the system under test back and run the sweep again")
	} else if inv != nil {
		fmt.Fprintf(w, "SWEEP FAILED: trial %d at %s could not be judged: agent %s: %s\n", inv.N, numfmt.Rate(inv.Rate), inv.Agent, inv.Error)
		fmt.Fprintln(w, "the interval above is only what the finished trials showed; fix the agent and run the sweep again (or use --retry-agent)")
	}
	if r.ProfileSkipped != "" {
		fmt.Fprintf(w, "profiled trial skipped: %s\n", r.ProfileSkipped)
	}
	jobLogs := slices.ContainsFunc(r.Agents, func(a protocol.AgentInfo) bool { return a.Role == protocol.RoleJob })
	if line := profiledLine(res, r.ProfiledSearch, jobLogs, verbose); line != "" {
		fmt.Fprintln(w, line)
	}
	if r.Interrupted {
		fmt.Fprintln(w, "interrupted: the finished trials are kept")
	}
	fmt.Fprintf(w, "results: %s\n", r.Dir)
}

// topLevelParts splits a statement at its "; " outside parentheses.
func topLevelParts(s string) []string {
	var parts []string
	depth, from := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ';':
			if depth == 0 && i+1 < len(s) && s[i+1] == ' ' {
				parts = append(parts, s[from:i])
				from = i + 2
			}
		}
	}
	return append(parts, s[from:])
}

// profiledLine says what the profiled trial's verdict means for the
// answer and for its logs. The answer is the search's, found without the
// profiler; a profiled trial below it that fails says that the answer had
// less headroom than the profile costs, which a user must not miss.
//
// jobLogs: a job's operators logged too, each tuple on its own thread: no
// thread of the profiler's holds that cost, so the profiler's threads'
// share does not bound it. Without verbose, a failure below the answer
// is said in one line: what failed and what it means, not why.
func profiledLine(res *rundir.Result, profiledSearch, jobLogs, verbose bool) string {
	var t *rundir.Trial
	for i := range res.Trials {
		if res.Trials[i].Purpose == rundir.PurposeProfile {
			t = &res.Trials[i]
		}
	}
	if t == nil {
		return ""
	}
	var notes []string
	if res.LastPass > 0 {
		notes = append(notes, fmt.Sprintf("%.0f%% of the answer", 100*t.Rate/res.LastPass))
	}
	cores, share, costKnown := t.ProfilerCost()
	if costKnown && verbose {
		// Next to the verdict: what the profile cost is part of judging it.
		notes = append(notes, fmt.Sprintf("the profiler's threads used %.3f cores, %.1f%% of the agents' CPU", cores, 100*share))
	}
	at := numfmt.Rate(t.Rate)
	if len(notes) > 0 {
		at += " (" + strings.Join(notes, "; ") + ")"
	}
	switch {
	case t.Verdict.Pass:
		return "profiled trial at " + at + " passed: its logs are under profiles/ (cpsweep analyze reads them)"
	case res.LastPass > 0 && t.Rate <= res.LastPass && !verbose:
		rules, _, _ := strings.Cut(t.FailedLine(), ";")
		return "profiled trial at " + at + " FAILED (" + rules + "): the answer stands, but the logs' latencies include queueing (-v: why)"
	case res.LastPass > 0 && t.Rate <= res.LastPass && profiledSearch:
		return "profiled trial at " + at + " FAILED (" + strings.Join(t.Verdict.Failed(), "; ") + "):\n" +
			"  the search ran with the same profile and passed above this rate, so the profile's cost is\n" +
			"  not the reason: the host was busier than during the search, and the answer may be\n" +
			"  optimistic (run the sweep again and compare); the logs' latencies include queueing"
	case res.LastPass > 0 && t.Rate <= res.LastPass && jobLogs:
		return "profiled trial at " + at + " FAILED (" + strings.Join(t.Verdict.Failed(), "; ") + "):\n" +
			"  the answer stands (the search ran without the profile), but this run did not keep up, so\n" +
			"  the logs' latencies include queueing. The job's operators logged every tuple on their own\n" +
			"  threads, a cost no profiler thread shows: compare the limiting operator's busy share here with\n" +
			"  the search's trials (trials.json), and log less (a sampling handler, docs/profiler.md)"
	case res.LastPass > 0 && t.Rate <= res.LastPass && costKnown && 2*share < 1-t.Rate/res.LastPass:
		// Twice the threads' share: the calls on the stages' threads cost
		// about as much again (docs/profiler.md, BENCHMARKS.md).
		return "profiled trial at " + at + " FAILED (" + strings.Join(t.Verdict.Failed(), "; ") + "):\n" +
			"  the answer stands (the search ran without the profile), but this run did not keep up, so\n" +
			fmt.Sprintf("  the logs' latencies include queueing. The profile's cost (%.1f%% in its threads, about as much\n", 100*share) +
			fmt.Sprintf("  again in its calls) is well inside the %.0f%% headroom below the answer, so it is not the likely\n", 100*(1-t.Rate/res.LastPass)) +
			"  reason: the host was busier than during the search, or the answer is optimistic\n" +
			"  (run the sweep again and compare)"
	case res.LastPass > 0 && t.Rate <= res.LastPass:
		return "profiled trial at " + at + " FAILED (" + strings.Join(t.Verdict.Failed(), "; ") + "):\n" +
			"  the answer stands (the search ran without the profile), but the pipeline did not keep up\n" +
			"  with every point logged, so the logs' latencies include queueing. Either the profile costs\n" +
			"  more than the answer's headroom (log less: a sampling handler, docs/profiler.md) or the\n" +
			"  answer is optimistic on a busy host (run the sweep again and compare)"
	case !verbose:
		rules, _, _ := strings.Cut(t.FailedLine(), ";")
		return "profiled trial at " + at + " failed, as a trial above the answer may (" + rules + "): its logs show the overloaded pipeline"
	default:
		return "profiled trial at " + at + " failed, as a trial above the answer may (" + strings.Join(t.Verdict.Failed(), "; ") + "): its logs show the overloaded pipeline"
	}
}

// profiledNote marks an answer found with the profiler on.
func profiledNote(r *rundir.Summary) string {
	if r.ProfiledSearch {
		return ", every trial profiled"
	}
	return ""
}

// writeTrialTable is the trials, one line each, and a blank line.
func writeTrialTable(w io.Writer, trials []rundir.Trial) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "trial\tpurpose\ttarget\tachieved\tverdict\tfailed rules")
	for _, t := range trials {
		v := "pass"
		if !t.Verdict.Pass {
			v = "FAIL"
		}
		var rules []string
		for _, c := range t.Verdict.Checks {
			if !c.Pass {
				rules = append(rules, c.Rule)
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", t.N, t.Purpose, numfmt.Rate(t.Rate), numfmt.Rate(t.Achieved), v, strings.Join(rules, ","))
	}
	tw.Flush()
	fmt.Fprintln(w)
}
