package sweep

import (
	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/sweep/rundiag"
	"github.com/cloudprofiler-go/cp/sweep/verdict"
)

// diagnoseTrial names a judged trial's limiting stage (wall-clock
// alignment: the TSC relation is made after the last trial); the
// diagnosis is nil when there is none.
func (s *Sweep) diagnoseTrial(t *rundir.Trial) *diagnose.Diagnosis {
	if t.Outcome == nil || s.Ctrl.Plan.StagePeriod == 0 {
		return nil
	}
	d, err := rundiag.Outcome(t.Outcome, s.Ctrl.Plan.Relay, nil, diagnose.Options{Overloaded: !t.Verdict.Pass})
	if err != nil {
		t.LimitingEvidence = "not diagnosed: " + err.Error()
		return nil
	}
	t.Busy = d.WindowBusy
	verdict.Limit(t, d)
	return d
}

// diagnoseRun writes diagnosis.json once every trial is on disk, aligned
// through the TSC relation when there is one. A trial that cannot be
// diagnosed is listed in the file; only a failed write is an error.
func (s *Sweep) diagnoseRun() error {
	if s.Ctrl.Plan.StagePeriod == 0 || s.Out == nil {
		return nil
	}
	rf, err := rundiag.Run(s.Out.Dir, rundiag.Options{})
	if rf == nil {
		s.logf("diagnosis: %v\n", err)
		return nil
	}
	return rundiag.Write(s.Out.Dir, rf)
}
