package rundiag

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/rundir"
	sendtally "github.com/cloudprofiler-go/cp/sender/tally"
	"github.com/cloudprofiler-go/cp/stage"
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

// Outcome analyses a trial: the agents' stage series joined into
// the pipeline's graph, the limiting stage named over the measured window.
func Outcome(o *rundir.Outcome, relay bool, align Align, opts diagnose.Options) (*diagnose.Diagnosis, error) {
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

// Options are cpsweep diagnose's settings.
type Options struct {
	Confirm int
	Period  time.Duration // 0: the recorded period; else a multiple of it
}

// Run analyses every trial of a run directory, aligned through its TSC
// relation when it has one (Write saves it).
func Run(dir string, o Options) (*diagnose.RunFile, error) {
	run, err := rundir.Open(dir)
	if err != nil {
		return nil, err
	}
	trials, err := run.Trials()
	if err != nil || len(trials) == 0 {
		return nil, fmt.Errorf("%s: no trials/NNN.json (not a run directory, or no trial finished)", dir)
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
	for _, n := range trials {
		tf, err := run.Trial(n)
		if err != nil {
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
		d, err := Outcome(tf.Outcome, relay, AlignWith(rf), diagnose.Options{Confirm: out.Confirm, Overloaded: !tf.Trial.Verdict.Pass})
		if err != nil {
			out.Skipped = append(out.Skipped, fmt.Sprintf("trial %d: %v", tf.Trial.N, err))
			continue
		}
		out.PeriodNs = d.PeriodNs
		t := *tf.Trial
		t.Outcome = tf.Outcome
		verdict.Limit(&t, d) // the same verdict as the sweep's line
		out.Trials = append(out.Trials, diagnose.Trial{N: tf.Trial.N, Rate: tf.Trial.Rate, Purpose: tf.Trial.Purpose, Pass: tf.Trial.Verdict.Pass, Diagnosis: d})
	}
	if len(out.Trials) == 0 {
		return out, fmt.Errorf("no trial could be diagnosed: %s", strings.Join(out.Skipped, "; "))
	}
	return out, nil
}

// Write writes rf as dir/diagnosis.json.
func Write(dir string, rf *diagnose.RunFile) error {
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

// brokerOf is the driver of the broker the trial's data went through ("":
// none), from the receivers' lane endpoints.
func brokerOf(o *rundir.Outcome) string {
	for _, r := range o.Receivers {
		if r == nil {
			continue
		}
		for _, l := range r.Lanes {
			if driver.IsBroker(l.Endpoint) {
				scheme, _, _ := strings.Cut(l.Endpoint, "://")
				return scheme
			}
		}
	}
	return ""
}
