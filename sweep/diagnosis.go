package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/limits"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/rundir"
	sendtally "github.com/cloudprofiler-go/cp/sender/tally"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/sweep/protocol"
	"github.com/cloudprofiler-go/cp/sweep/verdict"
	"github.com/cloudprofiler-go/cp/tsc/probing"
)

// Align maps a node's TSC value into the reference node's (false: it
// cannot, the wall clocks are used for that sample).
type Align func(node string, tsc uint64) (float64, bool)

// AlignWith is the alignment of a run's TSC relation (nil: none), by the
// one rule of a point's translation (probing.Points), as the analyses'
// join translates.
func AlignWith(rf *probing.RelationFile) Align {
	if rf == nil {
		return nil
	}
	names := make([]string, len(rf.Nodes))
	for i, n := range rf.Nodes {
		names[i] = n.Name
	}
	pts := rf.PointsFor(names)
	return func(node string, v uint64) (float64, bool) {
		i, ok := pts.Index(node)
		if !ok {
			return 0, false
		}
		b, ok := pts.At(i, v)
		return b.Value, ok
	}
}

// Processes turns results into the diagnosis's processes, named as the
// TSC relation names the agents (sender<i>, receiver<i>, job<i>).
func Processes(senders []*sendtally.Result, receivers []*tally.Result, jobs []*protocol.JobResult) []diagnose.Process {
	var out []diagnose.Process
	for i, r := range receivers {
		if r == nil {
			continue
		}
		p := diagnose.Process{Node: fmt.Sprintf("receiver%d", i), Role: protocol.RoleReceiver, Series: r.StageSeries, Lanes: map[uint32]int{}}
		for _, s := range r.Streams {
			p.Lanes[s.Stream] = s.Lane
		}
		for _, b := range r.Backlog { // a job's lag on its input, where read
			if b.JobLag != nil && *b.JobLag >= 0 {
				p.InputLag = append(p.InputLag, [2]int64{b.UnixNs, *b.JobLag})
			}
		}
		out = append(out, p)
	}
	for i, s := range senders {
		if s == nil {
			continue
		}
		p := diagnose.Process{Node: fmt.Sprintf("sender%d", i), Role: protocol.RoleSender, Series: s.StageSeries, Streams: map[string]uint32{}}
		for _, st := range s.Streams {
			p.Streams[fmt.Sprintf("thread%d", st.Thread)] = st.Stream
		}
		out = append(out, p)
	}
	for i, j := range jobs {
		if j == nil {
			continue
		}
		node := j.Node
		if node == "" { // a run directory from before the sweep named them
			node = fmt.Sprintf("job%d", i)
		}
		out = append(out, diagnose.Process{Node: node, Role: protocol.RoleJob, Series: j.StageSeries, Job: j.Name, Edges: j.Edges, Reads: j.Reads, Writes: j.Writes})
	}
	return out
}

// DiagnoseOutcome analyses a trial: the agents' stage series joined into
// the pipeline's graph, the limiting stage named over the measured window.
func DiagnoseOutcome(o *rundir.Outcome, relay bool, align Align, opts diagnose.Options) (*diagnose.Diagnosis, error) {
	procs := Processes(o.Senders, o.Receivers, o.Jobs)
	if len(procs) == 0 {
		return nil, errors.New("no results")
	}
	for _, p := range procs {
		if p.Series == nil {
			return nil, fmt.Errorf("%s has no stage series (stage accounting was off)", p.Node)
		}
	}
	// A broker the data went through is the system under test: its
	// streams are its black-box stage, their queue its backlog.
	sut := brokerOf(o)
	tl, err := diagnose.BuildTimeline(diagnose.Input{Processes: procs, Relay: relay || sut != "", SUTName: sut, Align: align})
	if err != nil {
		return nil, err
	}
	if opts.Window == ([2]int64{}) {
		opts.Window = o.Window
	}
	if opts.Window == ([2]int64{}) { // a run of its own: the senders' window after the warm-up
		for _, s := range o.Senders {
			if s == nil || s.StartUnixNs == 0 {
				continue
			}
			from, to := s.StartUnixNs+s.WarmupNs, s.StartUnixNs+int64(s.DurationS*1e9)
			if opts.Window[0] == 0 || from < opts.Window[0] {
				opts.Window[0] = from
			}
			opts.Window[1] = max(opts.Window[1], to)
		}
	}
	return diagnose.Analyze(tl, opts), nil
}

// diagnoseTrial names a judged trial's limiting stage (wall-clock
// alignment: the TSC relation is made after the last trial); the
// diagnosis is nil when there is none.
func (s *Sweep) diagnoseTrial(t *rundir.Trial) *diagnose.Diagnosis {
	if t.Outcome == nil || s.Ctrl.Plan.StagePeriod == 0 {
		return nil
	}
	d, err := DiagnoseOutcome(t.Outcome, s.Ctrl.Plan.Relay, nil, diagnose.Options{Overloaded: !t.Verdict.Pass})
	if err != nil {
		t.LimitingEvidence = "not diagnosed: " + err.Error()
		return nil
	}
	t.Busy = d.WindowBusy
	verdictOfLimit(t, d)
	return d
}

// verdictOfLimit is the one verdict on what limited a trial, from its
// stage diagnosis, its lateness and its hosts: the sweep's line, the
// answer, trials.json, diagnosis.json and the report all take it from
// here, so they never name two different limits for one trial. It sets the
// trial's limiting stage and evidence, and the diagnosis's to match.
func verdictOfLimit(t *rundir.Trial, d *diagnose.Diagnosis) {
	t.LimitingStage, t.LimitingEvidence = d.Limiting, d.Evidence
	if d.Limiting == "none" && !t.Verdict.Pass {
		if name, why := lateOnItsOwn(t); name != "" {
			t.LimitingStage, t.LimitingEvidence = name, why
		} else if name, why := limitingMostPeriods(d); name != "" {
			t.LimitingStage, t.LimitingEvidence = name, why
		}
	}
	if !t.Verdict.Pass {
		if why := limits.TrialHostCPU(t); why != "" {
			t.LimitingStage, t.LimitingEvidence = diagnose.HostCPU, why
		} else if t.Outcome != nil && (t.LimitingStage == "none" || isJobBox(d, t)) {
			// a job's limit, seen from outside: its threads, its lag
			grew, read := verdict.JobLagGrew(t.Outcome)
			if why := limits.TrialSUT(t, grew, read); why != "" {
				t.LimitingStage, t.LimitingEvidence = limits.SUT, why
			} else if t.LimitingStage != "none" {
				t.LimitingStage, t.LimitingEvidence = limits.SUT, "its input's backlog grew while the harness kept up ("+t.LimitingEvidence+")"
			}
		}
	}
	d.Limiting, d.Evidence = t.LimitingStage, t.LimitingEvidence
}

// isJobBox says whether the diagnosis named the black box a job's output
// streams make (its input's lag as their queue): a stage that means
// nothing to a user ("jetstream/stream65280"), which is the job.
func isJobBox(d *diagnose.Diagnosis, t *rundir.Trial) bool {
	if t.Outcome.Job == "" {
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
		failed = failed || (!c.Pass && c.Rule == verdict.RuleLateness)
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

// diagnoseRun writes diagnosis.json once every trial is on disk, aligned
// through the TSC relation when there is one. A trial that cannot be
// diagnosed is listed in the file; only a failed write is an error.
func (s *Sweep) diagnoseRun() error {
	if s.Ctrl.Plan.StagePeriod == 0 || s.Out == nil {
		return nil
	}
	rf, err := DiagnoseRun(s.Out.Dir, DiagnoseOptions{})
	if rf == nil {
		s.logf("diagnosis: %v\n", err)
		return nil
	}
	return WriteDiagnosis(s.Out.Dir, rf)
}

// DiagnoseOptions are cpsweep diagnose's settings.
type DiagnoseOptions struct {
	Confirm int
	Period  time.Duration // 0: the recorded period; else a multiple of it
}

// DiagnoseRun analyses every trial of a run directory, aligned through
// its TSC relation when it has one (WriteDiagnosis saves it).
func DiagnoseRun(dir string, o DiagnoseOptions) (*diagnose.RunFile, error) {
	files, err := rundir.TrialFiles(dir)
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("%s: no trials/NNN.json (not a run directory, or no trial finished)", dir)
	}
	sort.Strings(files)
	run, err := rundir.Open(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(rundir.Path(dir, rundir.RelationFile)); err == nil && run.Relation == nil {
		return nil, fmt.Errorf("%s: %s: %s", dir, rundir.RelationFile, strings.Join(run.Problems, "; ")) // a damaged relation aligns nothing
	}
	rf := run.Relation
	relay := run.Summary != nil && run.Summary.PlanFacts().Relay
	out := &diagnose.RunFile{FormatVersion: diagnose.FormatVersion, Confirm: max(o.Confirm, 1), Trials: []diagnose.Trial{}}
	if o.Confirm <= 0 {
		out.Confirm = diagnose.DefaultConfirm
	}
	for _, f := range files {
		var tf rundir.TrialFile
		if err := rundir.ReadJSON(f, &tf); err != nil {
			return nil, err
		}
		if tf.Trial == nil { // an invalid trial: never judged
			if tf.Invalid != nil {
				out.Skipped = append(out.Skipped, fmt.Sprintf("trial %d: invalid (%s)", tf.Invalid.N, tf.Invalid.Error))
			}
			continue
		}
		if tf.Outcome == nil {
			out.Skipped = append(out.Skipped, fmt.Sprintf("trial %d: no outcome", tf.Trial.N))
			continue
		}
		if o.Period > 0 {
			if err := Resample(tf.Outcome, o.Period); err != nil {
				return nil, fmt.Errorf("trial %d: %w", tf.Trial.N, err)
			}
		}
		d, err := DiagnoseOutcome(tf.Outcome, relay, AlignWith(rf), diagnose.Options{Confirm: out.Confirm, Overloaded: !tf.Trial.Verdict.Pass})
		if err != nil {
			out.Skipped = append(out.Skipped, fmt.Sprintf("trial %d: %v", tf.Trial.N, err))
			continue
		}
		out.PeriodNs = d.PeriodNs
		t := *tf.Trial
		t.Outcome = tf.Outcome
		verdictOfLimit(&t, d) // the same verdict as the sweep's line
		out.Trials = append(out.Trials, diagnose.Trial{N: tf.Trial.N, Rate: tf.Trial.Rate, Purpose: tf.Trial.Purpose, Pass: tf.Trial.Verdict.Pass, Diagnosis: d})
	}
	if len(out.Trials) == 0 {
		return out, fmt.Errorf("no trial could be diagnosed: %s", strings.Join(out.Skipped, "; "))
	}
	return out, nil
}

// WriteDiagnosis writes rf as dir/diagnosis.json.
func WriteDiagnosis(dir string, rf *diagnose.RunFile) error {
	b, err := json.MarshalIndent(rf, "", " ")
	if err != nil {
		return err
	}
	return rundir.WriteFile(dir, rundir.DiagnosisFile, append(b, '\n'))
}

// Resample keeps every k-th sample of each series so that snapshots are
// period apart (counters are cumulative: exact).
func Resample(o *rundir.Outcome, period time.Duration) error {
	var all []*stage.Series
	for _, s := range o.Senders {
		if s != nil && s.StageSeries != nil {
			all = append(all, s.StageSeries)
		}
	}
	for _, r := range o.Receivers {
		if r != nil && r.StageSeries != nil {
			all = append(all, r.StageSeries)
		}
	}
	for _, j := range o.Jobs {
		if j != nil && j.StageSeries != nil {
			all = append(all, j.StageSeries)
		}
	}
	for _, s := range all {
		if err := s.Resample(period.Nanoseconds()); err != nil {
			return err
		}
	}
	return nil
}
