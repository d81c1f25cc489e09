package verdict

import (
	"fmt"

	"github.com/cloudprofiler-go/cp/rundir"
)

// jobDelivery judges delivery through a job (docs/sut.md): what the job
// owes is exact, the tuples the senders' declared filter kept (every
// tuple emitted without one), and it must arrive as tuples or as the
// counts of windows, no more, no less. The detail names the difference.
func jobDelivery(o *Outcome, emitted uint64, incomplete int) (bool, string) {
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
	var got, earlier, forged uint64
	for _, r := range o.Receivers {
		earlier += r.Earlier
		forged += r.Forged
		if o.Job == rundir.JobWindows {
			got += r.WindowCount
		} else {
			got += r.Consumed
		}
	}
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
	return got == owed && forged == 0 && incomplete == 0 && len(o.Receivers) > 0, detail
}

// jobRate is the input rate a job kept up with: what the senders emitted
// per second, less the growth of the job's lag on its input (messages of a
// bucket each) over the window. Its output's rate is no measure of it: a
// filter keeps a share, a windowed count writes a window per key.
func jobRate(o *Outcome) float64 {
	var emitted float64
	for _, s := range o.Senders {
		if s != nil && s.DurationS > 0 {
			emitted += float64(s.Emitted) / s.DurationS
		}
	}
	span := float64(o.Window[1]-o.Window[0]) / 1e9
	grew, _, _, _, ok := jobLagGrowth(o, Rules{})
	if ok && span > 0 && grew > 0 {
		bucket := 1
		if len(o.Senders) > 0 && o.Senders[0] != nil && o.Senders[0].BucketSize > 0 {
			bucket = o.Senders[0].BucketSize
		}
		emitted -= grew / span * float64(bucket)
	}
	return max(emitted, 0)
}
