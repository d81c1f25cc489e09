package verdict

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
	"github.com/cloudprofiler-go/cp/stage"

	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/scenarios"
)

// jobDelivery judges delivery through a job (docs/sut.md): what the job
// owes is exact, the tuples the senders' declared filter kept (every
// tuple emitted without one), and it must arrive as tuples or as the
// counts of windows, no more, no less. The detail names the difference.
func jobDelivery(o *rundir.Outcome, emitted uint64, incomplete int) (bool, string) {
	owed, filter := emitted, ""
	declared := len(o.Senders) > 0
	var matched uint64
	for _, s := range o.Senders {
		declared = declared && s.Expect != ""
		matched += s.Matched
		filter = s.Expect
	}
	what := fmt.Sprintf("every one of the %d emitted", emitted)
	if declared {
		owed, what = matched, fmt.Sprintf("the %d of %d emitted that %q keeps", matched, emitted, filter)
	}
	idsExact, beyond, ids := identityDelivery(o)
	var got, earlier, forged, rewritten uint64
	for _, r := range o.Receivers {
		earlier += r.Earlier
		forged += r.Forged
		rewritten += r.Rewritten
		if o.Job == rundir.JobWindows {
			got += r.WindowCount
		} else {
			got += r.Consumed
		}
	}
	got -= min(beyond, got) // consumed, but never owed
	how := "tuples consumed"
	if o.Job == rundir.JobWindows {
		how = "counted in the windows consumed"
	}
	diff := "exact"
	switch {
	case got < owed:
		diff = fmt.Sprintf("%d missing", owed-got)
	case got > owed:
		diff = fmt.Sprintf("%d more than owed", got-owed)
	}
	detail := fmt.Sprintf("the job owes %s; %d %s: %s; %d receiver(s) incomplete", what, got, how, diff, incomplete)
	if earlier > 0 {
		detail += fmt.Sprintf("; %d tuple(s) of an earlier trial arrived late (not counted)", earlier)
	}
	if forged > 0 {
		detail += fmt.Sprintf("; %d tuple(s) with an identity never sent (forged: a stream no sender has, or intended after it arrived; not counted)", forged)
	}
	if rewritten > 0 {
		detail += fmt.Sprintf("; %d tuple(s) with their intended time rewritten (intended time rewritten: the job changed the time its sender sealed, so their latency would be the job's word; not counted)", rewritten)
	}
	detail += ids
	malformed, bad := malformedOutput(o)
	detail += bad
	windowsExact, windows := windowDelivery(o)
	detail += windows
	return got == owed && idsExact && windowsExact && forged == 0 && rewritten == 0 && malformed == 0 && incomplete == 0 && len(o.Receivers) > 0, detail
}

// malformedOutput counts the job's output messages the receivers could
// not take (a window with a negative count, or one no int64 holds, a
// tuple cut short): each is output the job got wrong, so it fails
// delivery, named with its reasons, whatever the counts say.
func malformedOutput(o *rundir.Outcome) (uint64, string) {
	var n uint64
	var latest string
	reasons := map[string]uint64{}
	for _, r := range o.Receivers {
		n += r.Malformed
		if r.MalformedLatest != "" {
			latest = r.MalformedLatest
		}
		for why, k := range r.MalformedBy {
			if k > 0 {
				reasons[why] += k
			}
		}
	}
	if n == 0 {
		return 0, ""
	}
	named := make([]string, 0, len(reasons))
	for _, why := range slices.Sorted(maps.Keys(reasons)) {
		named = append(named, fmt.Sprintf("%d %s", reasons[why], why))
	}
	if latest != "" {
		latest = "; the latest: " + termsafe.Escape(latest)
	}
	return n, fmt.Sprintf("; %d malformed message(s) in the job's output, not counted (%s%s)", n, strings.Join(named, ", "), latest)
}

// identityDelivery judges a map's or filter's output per identity: each
// owed tuple once, none again, none the declared filter drops, none
// beyond what its stream's sender sent, and every one checked (the
// receivers' identity budget). It says whether all of that holds, and a
// clause for the detail ("" when the receivers judged no identity: a
// windowed job, or none arrived), with how many identities beyond their
// senders' reach the receivers consumed (not owed: the caller takes them
// off what arrived).
func identityDelivery(o *rundir.Outcome) (bool, uint64, string) {
	if o.Job != rundir.JobTuples {
		return true, 0, ""
	}
	sent := map[uint32]uint64{} // per stream: the sequence numbers its sender used
	for _, s := range o.Senders {
		if s == nil {
			continue
		}
		for _, st := range s.Streams {
			sent[st.Stream] = st.Tuples + st.Dropped*uint64(max(s.BucketSize, 1))
		}
	}
	var dup, unowed, unchecked, beyond uint64
	atLeast, judged := false, false
	for _, r := range o.Receivers {
		for _, id := range r.Identities {
			judged = true
			dup += id.Duplicates
			unowed += id.Unowed
			unchecked += id.Unchecked
			horizon, ok := sent[id.Stream]
			if !ok || id.Next <= horizon {
				continue
			}
			n := uint64(0)
			for _, seq := range id.Highest {
				if seq >= horizon {
					n++
				}
			}
			beyond += n
			atLeast = atLeast || n == uint64(len(id.Highest))
		}
	}
	if !judged {
		return true, 0, ""
	}
	var wrong []string
	if dup > 0 {
		wrong = append(wrong, fmt.Sprintf("%d duplicated (not consumed)", dup))
	}
	if unowed > 0 {
		wrong = append(wrong, fmt.Sprintf("%d that the declared filter drops (invented, not consumed)", unowed))
	}
	if beyond > 0 {
		least := ""
		if atLeast {
			least = "at least "
		}
		wrong = append(wrong, fmt.Sprintf("%s%d with an identity beyond what its sender sent (invented, not counted)", least, beyond))
	}
	if unchecked > 0 {
		wrong = append(wrong, fmt.Sprintf("%d not checked (beyond the receiver's identity budget of %d M a trial: shorten the trial or lower the rate)", unchecked, tally.MaxIdentities>>20))
	}
	if len(wrong) == 0 {
		return true, 0, "; per identity: each owed tuple once, none invented"
	}
	return false, beyond, "; per identity: " + strings.Join(wrong, "; ")
}

// windowDiffsNamed is how many differing windows the detail names.
const windowDiffsNamed = 3

// windowDelivery compares, per key and window, what the senders say each
// window owes (a declared window: --expect-window) with the counts the
// receivers consumed: the sums can agree while a count is in the wrong
// window or key. It says whether every window is exact, and a clause for
// the detail ("" with no window declared).
func windowDelivery(o *rundir.Outcome) (bool, string) {
	if o.Job != rundir.JobWindows || len(o.Senders) == 0 {
		return true, ""
	}
	owed := map[scenarios.WindowKey]uint64{}
	for _, s := range o.Senders {
		if s == nil || s.ExpectWindowMs == 0 {
			return true, ""
		}
		for _, w := range s.ExpectedWindows {
			owed[w.WindowKey] += w.Count
		}
	}
	got := map[scenarios.WindowKey]uint64{}
	var notTallied uint64
	for _, r := range o.Receivers {
		notTallied += r.WindowsNotTallied
		for _, w := range r.Windows {
			got[w.WindowKey] += w.Count
		}
	}
	if notTallied > 0 {
		return false, fmt.Sprintf("; per key and window: not compared, the receivers could tally no more than %d windows (%d count(s) beyond)", tally.MaxWindows, notTallied)
	}
	var diffs []scenarios.WindowCount // the key's window, and its count as consumed
	for k, n := range owed {
		if got[k] != n {
			diffs = append(diffs, scenarios.WindowCount{WindowKey: k, Count: got[k]})
		}
	}
	extra := 0 // windows written and never owed
	for k, n := range got {
		if _, ok := owed[k]; !ok {
			diffs = append(diffs, scenarios.WindowCount{WindowKey: k, Count: n})
			extra++
		}
	}
	if len(diffs) == 0 {
		return true, fmt.Sprintf("; per key and window: all %d exact", len(owed))
	}
	slices.SortFunc(diffs, scenarios.CompareWindows)
	named := make([]string, 0, windowDiffsNamed)
	for _, d := range diffs[:min(len(diffs), windowDiffsNamed)] {
		end := time.UnixMilli(d.EndMs).UTC().Format("15:04:05.000")
		named = append(named, fmt.Sprintf("%s's window ending %s counted %d, owes %d", d.Key, end, d.Count, owed[d.WindowKey]))
	}
	more := ""
	if len(diffs) > windowDiffsNamed {
		more = fmt.Sprintf("; %d more", len(diffs)-windowDiffsNamed)
	}
	return false, fmt.Sprintf("; per key and window: %d of %d differ (%s%s)%s", len(diffs), len(owed)+extra, strings.Join(named, "; "), more, foreignKeys(owed, got))
}

// foreignKeys says so when no key of the job's windows is a key the
// senders sent ("": some are): a job keyed by another field than the one
// declared differs in every window, and "401 of 401 differ" alone did not
// say why.
func foreignKeys(owed, got map[scenarios.WindowKey]uint64) string {
	sent := map[string]bool{}
	for k := range owed {
		sent[k.Key] = true
	}
	theirs := map[string]bool{}
	for k := range got {
		if sent[k.Key] {
			return ""
		}
		theirs[k.Key] = true
	}
	if len(theirs) == 0 || len(sent) == 0 {
		return ""
	}
	first := func(keys map[string]bool) string { return slices.Min(slices.Collect(maps.Keys(keys))) }
	return fmt.Sprintf("; none of the job's %d keys is a key the senders sent (the job's: %q, ...; the senders': %q, ...): is its output keyed by another field than the one declared (key= of the output's mapping, --events-key)?",
		len(theirs), first(theirs), first(sent))
}

// jobRate is the input rate a job kept up with: what the senders emitted
// per second, less the growth of the job's lag on its input (messages of a
// bucket each) over the window, and never more than what its input
// operator took in (the lag misses what the job's client fetched and holds
// unprocessed). Its output's rate is no measure of it: a filter keeps a
// share, a windowed count writes a window per key.
func jobRate(o *rundir.Outcome) float64 {
	offered := offeredRate(o)
	kept := offered
	span := float64(o.Window[1]-o.Window[0]) / 1e9
	grew, _, _, _, ok := jobLagGrowth(o, Rules{})
	if ok && span > 0 && grew > 0 {
		kept -= grew / span * float64(bucketSize(o))
	}
	if taken, _, ok := inputTaken(o); ok {
		kept = min(kept, taken)
	}
	return max(kept, 0)
}

// offeredRate is what the senders emitted per second.
func offeredRate(o *rundir.Outcome) float64 {
	var emitted float64
	for _, s := range o.Senders {
		if s != nil && s.DurationS > 0 {
			emitted += float64(s.Emitted) / s.DurationS
		}
	}
	return emitted
}

// bucketSize is the senders' tuples (events) per bucket (message).
func bucketSize(o *rundir.Outcome) int {
	if len(o.Senders) > 0 && o.Senders[0] != nil && o.Senders[0].BucketSize > 0 {
		return o.Senders[0].BucketSize
	}
	return 1
}

// inputTaken is the rate at which the job's input operators
// (stage.InputOperator and its copies) took in tuples over the window,
// from their buckets between the first and the last stage sample inside
// it; counted says how many (messages, or records by a job's metrics). ok is false unless exactly one job accounts
// an input operator (a second job's input would be the first's output).
func inputTaken(o *rundir.Outcome) (perS float64, counted string, ok bool) {
	jobs := 0
	for _, j := range o.Jobs {
		if j == nil || j.StageSeries == nil {
			continue
		}
		s := j.StageSeries
		var n uint64
		found := false
		for _, t := range s.Totals(o.Window[0], o.Window[1]) {
			if t.Name == stage.InputOperator || strings.HasPrefix(t.Name, stage.InputOperator+".") {
				n, found = n+t.Items, true
			}
		}
		if !found {
			continue
		}
		jobs++
		lo := sort.Search(len(s.UnixNs), func(i int) bool { return s.UnixNs[i] >= o.Window[0] })
		hi := sort.Search(len(s.UnixNs), func(i int) bool { return s.UnixNs[i] > o.Window[1] }) - 1
		if hi <= lo {
			return 0, "", false
		}
		per, unit := float64(bucketSize(o)), "messages" // a job agent counts batches
		if j.ItemsAreRecords {
			per, unit = 1, "records" // a job's metrics count records
		}
		perS, counted = float64(n)*per/(float64(s.UnixNs[hi]-s.UnixNs[lo])/1e9), fmt.Sprintf("%d %s", n, unit)
	}
	return perS, counted, jobs == 1
}

// WrongOutput says how a trial of a job failed on its output alone: its
// delivery rule failed while every other rule passed (the senders kept
// their schedule, the receivers kept up, the job's lag did not grow), the
// job had caught up by the trial's end, and its output holds what no
// slowness makes (nothing at all, a tuple twice or invented, a time
// rewritten, a malformed message, a window counted above what it owes).
// Such a job is wrong, not slow ("": the trial says nothing of the kind;
// a job that is short of tuples may have dropped late ones).
func WrongOutput(o *rundir.Outcome, v rundir.Verdict) string {
	if o == nil || o.Job == "" || v.Pass || len(o.Receivers) == 0 || !slownessCannotExplain(o) {
		return ""
	}
	for _, r := range o.Receivers {
		if !strings.HasPrefix(r.Reason, tally.ReasonJobCaughtUp) {
			return "" // the job had not caught up: what is missing may still be on its way
		}
	}
	why := ""
	for _, c := range v.Checks {
		switch {
		case c.Pass:
		case c.Rule != RuleDelivery:
			return "" // slow, late or backlogged somewhere: a rate may still pass
		default:
			why = c.Detail
		}
	}
	return why
}

// slownessCannotExplain says whether a job's output holds what a job that
// is only slow cannot write: nothing at all, more than it owes (a tuple
// twice, one invented or the filter's to drop, a window counted too
// high or never owed), a rewritten time, a forged identity or a malformed
// message. A slow job only falls short: late events dropped, windows
// counted low.
func slownessCannotExplain(o *rundir.Outcome) bool {
	var got uint64
	for _, r := range o.Receivers {
		if r.Forged+r.Rewritten+r.Malformed > 0 {
			return true
		}
		got += r.Consumed + r.WindowCount
		for _, id := range r.Identities {
			if id.Duplicates+id.Unowed > 0 {
				return true
			}
		}
	}
	if got == 0 {
		return true
	}
	if _, beyond, _ := identityDelivery(o); beyond > 0 {
		return true
	}
	owed := map[scenarios.WindowKey]uint64{}
	for _, s := range o.Senders {
		if s != nil {
			for _, w := range s.ExpectedWindows {
				owed[w.WindowKey] += w.Count
			}
		}
	}
	if len(owed) == 0 {
		return false
	}
	counted := map[scenarios.WindowKey]uint64{}
	for _, r := range o.Receivers {
		for _, w := range r.Windows {
			counted[w.WindowKey] += w.Count
		}
	}
	for k, n := range counted {
		if n > owed[k] {
			return true
		}
	}
	return false
}

// WrongOutputError ends a sweep whose job's output was wrong while it
// kept up: no rate can pass.
type WrongOutputError struct {
	Rate float64
	Why  string
}

func (e *WrongOutputError) Error() string {
	return fmt.Sprintf("the job's output is wrong at %s, not too slow (it kept up and nothing was backlogged): %s", numfmt.Rate(e.Rate), e.Why)
}
