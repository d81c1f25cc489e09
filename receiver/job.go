package receiver

import (
	"fmt"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/scenarios"

	"github.com/cloudprofiler-go/cp/objfactory"
	"github.com/cloudprofiler-go/cp/trialcfg"
	"github.com/cloudprofiler-go/cp/tsc"
)

// A job between the senders and the receiver (a stream processor,
// docs/sut.md) writes output streams of its own: they go on from trial to
// trial, are never ended by a marker per trial, and may still carry an
// earlier trial's last windows. This file holds what the receiver does
// differently for them.

// jobMode says whether the receiver reads a job's output (JobInput set).
func (c *Config) jobMode() bool { return c.JobInput != "" }

// jobTrial says whether the run is a sweep's trial of a job: it ends by
// the job's lag and its quiet output, not by end markers.
func (c *Config) jobTrial() bool { return c.jobMode() && !c.SendersEnd.IsZero() }

// jobProblems are what is wrong with a job's settings (Validate).
func (c *Config) jobProblems() []string {
	var problems []string
	if c.JobInput != "" {
		if e, err := driver.Parse(c.JobInput); err != nil {
			problems = append(problems, fmt.Sprintf("job input: %v", err))
		} else if e.Group == "" {
			problems = append(problems, fmt.Sprintf("job input %s: name the job's consumer group (?group=NAME): its lag is what is read", e.Where()))
		}
	}
	if c.Owed != nil {
		if err := c.Owed.Validate(); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if c.Senders < 0 || c.Senders > 256 || c.SenderThreads < 0 || c.SenderThreads > 256 {
		problems = append(problems, fmt.Sprintf("senders and their threads must be 0 to 256 each, got %d and %d", c.Senders, c.SenderThreads))
	}
	return problems
}

// judgesJob sets up what a sweep's trial of a job judges (New): the
// trial's start, and for a map's or filter's output its identities.
func (r *Receiver) judgesJob() {
	cfg := &r.cfg
	if !cfg.jobMode() || cfg.TrialStart.IsZero() {
		return
	}
	r.trialStartNs = cfg.TrialStart.UnixNano()
	if cfg.Senders > 0 && cfg.Schema != scenarios.SchemaWindow && !cfg.Drain {
		r.ids = newIdentities(cfg.Senders, cfg.SenderThreads, cfg.Owed)
	}
}

// jobQuiet is how long a job's output must be quiet to end a trial.
func (c *Config) jobQuiet() time.Duration {
	if c.JobQuiet > 0 {
		return c.JobQuiet
	}
	return trialcfg.DefaultJobQuiet
}

// JobStuckAfter is the least time a job's lag must stay the same, its
// output quiet, after the senders' end, for the job to count as gone
// (with the job's quiet time, the longer of the two).
const JobStuckAfter = 5 * time.Second

// jobEnd returns why a trial of a job ends now, or "": once the senders'
// schedule is over, the job's lag on its input (read after that) is 0 and
// its output has been quiet for the quiet time. A job that does not catch
// up within the end timeout after that ends the run too; the trial's
// rules then judge what arrived.
func (e *endWatch) jobEnd(r *Receiver, now time.Time) string {
	cfg := &r.cfg
	if now.Before(cfg.SendersEnd) {
		return ""
	}
	quietSince := e.lastSeenAt
	if e.lastSeen == 0 || quietSince.Before(cfg.SendersEnd) {
		quietSince = cfg.SendersEnd
	}
	lag, readAt := r.jobLag.read()
	if lag != e.lag || e.lagMovedAt.IsZero() {
		e.lag, e.lagMovedAt = lag, now
	}
	fresh := !readAt.Before(cfg.SendersEnd)
	quiet := now.Sub(quietSince)
	stuck := max(cfg.jobQuiet(), JobStuckAfter)
	switch {
	case lag == 0 && fresh && quiet >= cfg.jobQuiet():
		return fmt.Sprintf("%s (lag 0 on its input) and its output was quiet for %v", tally.ReasonJobCaughtUp, cfg.jobQuiet())
	case lag != 0 && fresh && quiet >= stuck && now.Sub(e.lagMovedAt) >= stuck:
		// Not a job too slow for the rate (its lag would fall): a job
		// gone, or an input that cannot be read. The trial says nothing
		// about a rate.
		if lag < 0 {
			r.jobFailure.Store(fmt.Sprintf("the job's lag on its input %s could not be read for %v after the senders' end (the input or its group gone?)", cfg.JobInput, stuck))
		} else {
			r.jobFailure.Store(fmt.Sprintf("the job made no progress: its lag on its input stayed at %d for %v after the senders' end and it wrote nothing (is it running?)", lag, stuck))
		}
		return "the job made no progress on its input"
	case now.Sub(cfg.SendersEnd) >= cfg.jobQuiet()+cfg.EndTimeout:
		return fmt.Sprintf("the job did not catch up within %v of the senders' end (its lag on its input: %d; output quiet for %v)",
			(cfg.jobQuiet() + cfg.EndTimeout).Round(time.Millisecond), lag, quiet.Round(time.Millisecond))
	}
	return ""
}

// jobStatus judges a job's output stream, which has no end marker in a
// trial: complete when every bucket from the first expected to the last
// seen arrived once.
func jobStatus(sr *tally.StreamResult) {
	switch {
	case sr.GapBuckets > 0:
		sr.Status = fmt.Sprintf("job output: %d bucket(s) never arrived (sequence %d to %d)", sr.GapBuckets, sr.FirstSeq, sr.NextSeq)
	case sr.Duplicates > 0 || sr.Stale > 0:
		sr.Status = fmt.Sprintf("job output: %d duplicate and %d stale bucket(s)", sr.Duplicates, sr.Stale)
	default:
		sr.Status, sr.Complete = fmt.Sprintf("job output: buckets %d to %d in sequence", sr.FirstSeq, sr.NextSeq), true
	}
}

// EarlierSlack is how far before a trial's start a bucket's first tuple
// may say it was meant to be sent and still be the trial's. A sender
// stamps its first bucket at the trial's start on its TSC-derived clock,
// which runs apart from the wall clock the start was given in by the
// calibration's error since the agent started (measured here: 0.9 µs
// over 3 s, TestClockStaysNearTheWallClock; 45 ns was seen to set a
// correct bucket aside). An earlier trial's last tuple was meant to be sent at
// least the sweep's lead before this one's start (sweep: 1.5 s at the
// least, TestEarlierSlackIsBelowTheTrialsGap), so the slack can be wide.
const EarlierSlack = 100 * time.Millisecond

// earlierTrial says whether a bucket is an earlier trial's (its first
// tuple was meant to be sent more than EarlierSlack before this trial
// began): counted, not consumed.
func (r *Receiver) earlierTrial(intendedNs int64) bool {
	return r.trialStartNs != 0 && intendedNs < r.trialStartNs-int64(EarlierSlack)
}

// FutureSlack is how far after its arrival a job's output tuple may say
// it was meant to be sent (the hosts' clocks apart) before it counts as
// forged: no sender sends before a tuple's intended time.
const FutureSlack = time.Second

// screen drops from a job's output bucket the tuples whose identity was
// never sent (forged: a stream no sender of the trial has, or an intended
// time after the bucket's arrival) or whose intended time is not the one
// its sender sealed (rewritten: the latency would be the job's word), and
// counts them on the stream; of a map's or filter's output also those
// whose identity came before or that the declared filter drops (r.ids
// counts them). A kept tuple's intended time is its sender's, unsealed.
// It keeps the bucket's order and its backing array.
func (r *Receiver) screen(st *stream, b *objfactory.Bucket) {
	keep := b.Tuples[:0]
	future := r.cfg.Clock.UnixNano(tsc.ReadFast()) + int64(FutureSlack)
	windows := r.cfg.Schema == scenarios.SchemaWindow
	for i := range b.Tuples {
		t := &b.Tuples[i]
		if t.Window.NoIdentity { // nothing to check: its count is judged per key and window
			keep = append(keep, *t)
			continue
		}
		sender, thread := t.ID>>56, (t.ID>>48)&0xff
		if sender >= uint64(r.cfg.Senders) || thread >= uint64(r.cfg.SenderThreads) || t.IntendedNs > future {
			st.forged.Add(1)
			continue
		}
		intended, ok := r.cfg.Seal.Unseal(t.ID, t.IntendedNs)
		if !ok && !windows { // a window's highest id and latest time are two tuples': only its time is cleared
			st.rewritten.Add(1)
			continue
		}
		t.IntendedNs = intended
		if r.ids != nil && !r.ids.take(t.ID) {
			continue
		}
		keep = append(keep, *t)
	}
	b.Tuples = keep
}
