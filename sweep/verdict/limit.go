package verdict

import (
	"fmt"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/limits"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/stage"
)

// Limit is the one verdict on what limited a trial, from its
// stage diagnosis, its lateness and its hosts: the sweep's line, the
// answer, trials.json, diagnosis.json and the report all take it from
// here, so they never name two different limits for one trial. It sets the
// trial's limiting stage and evidence, and the diagnosis's to match.
func Limit(t *rundir.Trial, d *diagnose.Diagnosis) {
	t.LimitingStage, t.LimitingEvidence = d.Limiting, d.Evidence
	if name, why := harnessLimit(t); name != "" {
		t.LimitingStage, t.LimitingEvidence = name, why
		d.Limiting, d.Evidence = name, why
		return
	}
	if d.Limiting == "none" && !t.Verdict.Pass {
		if name, why := lateOnItsOwn(t); name != "" {
			t.LimitingStage, t.LimitingEvidence = name, why
		} else if name, why := limitingMostPeriods(d); name != "" {
			t.LimitingStage, t.LimitingEvidence = name, why
		}
	}
	if !t.Verdict.Pass {
		unexplained := t.Outcome != nil && (t.LimitingStage == "none" || isJobBox(d, t))
		host := limits.TrialHostCPU(t)
		if gc, why := limits.TrialGC(t); gc != "" && (unexplained || host != "") {
			// the collector's CPU is what filled the host: name the cause
			t.LimitingStage, t.LimitingEvidence = gc, why
			if host != "" {
				t.LimitingEvidence += "; the host's CPUs were full too (" + host + ")"
			}
		} else if host != "" {
			t.LimitingStage, t.LimitingEvidence = diagnose.HostCPU, host
		} else if unexplained {
			// a job's limit, seen from outside: its broker, its threads, its lag
			grew, read := JobLagGrew(t.Outcome)
			if broker, why := limits.TrialBroker(t); broker != "" {
				t.LimitingStage, t.LimitingEvidence = broker, why
			} else if why := limits.TrialSUT(t, grew, read); why != "" {
				t.LimitingStage, t.LimitingEvidence = limits.SUT, why
			} else if t.LimitingStage != "none" {
				t.LimitingStage, t.LimitingEvidence = limits.SUT, "its input's backlog grew while the harness kept up ("+t.LimitingEvidence+")"
			}
		} else if diagnose.IsBroker(t.LimitingStage) {
			// the broker the job drains, named by its topic: whose CPU it was
			if p := limits.SUTProcesses(t); p != "" {
				t.LimitingEvidence += "; " + p
			}
		}
	}
	d.Limiting, d.Evidence = t.LimitingStage, t.LimitingEvidence
}

// harnessLimit names what limited a failed trial of a job whose failing
// rules are only the harness's own (the senders' lateness or send cost,
// the receivers' backlog): a sender thread late on its own, or the host's
// CPU; never the job, which kept up by every rule of its own ("": the
// trial is not such a one, or neither is to blame, e.g. a sender blocked
// by the job's broker, whose lateness is the system's).
func harnessLimit(t *rundir.Trial) (string, string) {
	if t.Verdict.Pass || t.Outcome == nil || t.Outcome.Job == "" {
		return "", ""
	}
	var failed []string
	for _, c := range t.Verdict.Checks {
		switch {
		case c.Pass:
		case c.Rule == RuleLateness || c.Rule == RuleSendCost || c.Rule == RuleBacklog:
			failed = append(failed, c.Rule)
		default:
			return "", "" // a rule of the system's failed too
		}
	}
	if len(failed) == 0 {
		return "", ""
	}
	note := fmt.Sprintf("; only the harness's own rules failed (%s): the job kept up by its own", strings.Join(failed, ", "))
	if host := limits.TrialHostCPU(t); host != "" { // a full host made the thread late
		return diagnose.HostCPU, host + note
	}
	if name, why := lateOnItsOwn(t); name != "" {
		return name, why + note
	}
	return "", ""
}

// isJobBox says whether the diagnosis named the black box a job's output
// streams make (its input's lag as their queue): a stage that means
// nothing to a user ("jetstream/stream65280"), which is the job. The
// broker named by the topic the job reads (a job that says its topics)
// is not: the senders feed it and the job drains it.
func isJobBox(d *diagnose.Diagnosis, t *rundir.Trial) bool {
	if t.Outcome.Job == "" || diagnose.IsBroker(t.LimitingStage) {
		return false
	}
	for _, m := range d.Modules {
		if m.Name == t.LimitingStage {
			return m.Kind == stage.SUT
		}
	}
	return false
}

// limitingMostPeriods names, for a failed trial that no stage limited
// over its measured window, the stage confirmed limiting in the most
// periods of the whole trial, when it is at least a quarter of them: a
// windowed job's window operator works on the measured window's events a
// window and a lateness after them, so over the measured window it is
// busy only part of the time, and saturated in the periods after.
func limitingMostPeriods(d *diagnose.Diagnosis) (string, string) {
	best := -1
	for i, m := range d.Summary {
		if m.Limiting > 0 && (best < 0 || m.Limiting > d.Summary[best].Limiting) {
			best = i
		}
	}
	if best < 0 || 4*d.Summary[best].Limiting < len(d.Snapshots) {
		return "", ""
	}
	m := d.Summary[best]
	return m.Stage, fmt.Sprintf("%s: limiting in %d of the trial's %d periods (none over its measured window alone)", m.Stage, m.Limiting, len(d.Snapshots))
}

// lateOnItsOwn names the sender thread behind a trial that failed on
// lateness while no stage limited: the latest thread, when a full socket
// held it up less than 5% of the window (its slots were late because it
// woke up late, not because anything after it was slow).
func lateOnItsOwn(t *rundir.Trial) (string, string) {
	failed := false
	for _, c := range t.Verdict.Checks {
		failed = failed || (!c.Pass && c.Rule == RuleLateness)
	}
	if !failed || t.Outcome == nil {
		return "", ""
	}
	var name, why string
	var worst int64
	for i, s := range t.Outcome.Senders {
		if s == nil || s.StageSeries == nil {
			continue
		}
		blocked := map[string]float64{}
		for _, tot := range s.StageSeries.Totals(t.Outcome.Window[0], t.Outcome.Window[1]) {
			blocked[tot.Name] = tot.Fraction(stage.Blocked)
		}
		for _, st := range s.Streams {
			th := fmt.Sprintf("thread%d", st.Thread)
			if st.P99Lateness <= worst || blocked[th] >= diagnose.OverloadedBlocked {
				continue
			}
			worst, name = st.P99Lateness, th
			if len(t.Outcome.Senders) > 1 {
				name = fmt.Sprintf("sender%d/%s", i, th)
			}
			why = fmt.Sprintf("%s: late on its own: p99 lateness %v while blocked %.1f%%; no stage saturated", name,
				time.Duration(st.P99Lateness).Round(10*time.Microsecond), 100*blocked[th])
		}
	}
	return name, why
}
