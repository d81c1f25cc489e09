package rundir

import (
	"fmt"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/stage"
)

// AgentSeries is one agent's host accounting over a trial, sample by
// sample, with the pairs of its clocks (TSC, Unix ns) that its stage
// series took: what places a sample on the activity graph's time, which
// is TSC-based.
type AgentSeries struct {
	Node     string // sender0, receiver0, ...
	PeriodNs int64
	Samples  []cpustat.Sample
	TSC      []uint64
	UnixNs   []int64
}

// HostSeries reads every agent's host samples of trial n, in the order
// the sweep names its nodes (receivers, then senders). An agent without
// host accounting is left out; one without a stage series (stage
// accounting off), or whose clock pairs do not pair up, has no pairs, and
// its samples cannot be placed in time (the reader says so).
func (d *Dir) HostSeries(n int) ([]AgentSeries, error) {
	f, err := d.Trial(n)
	if err != nil {
		return nil, err
	}
	if f.Outcome == nil {
		return nil, nil
	}
	var out []AgentSeries
	add := func(node string, host *cpustat.Record, ss *stage.Series) {
		if host == nil || host.Error != "" {
			return
		}
		s := AgentSeries{Node: node, PeriodNs: host.PeriodNs, Samples: host.Samples}
		if ss != nil && len(ss.TSC) == len(ss.UnixNs) {
			s.TSC, s.UnixNs = ss.TSC, ss.UnixNs
		}
		out = append(out, s)
	}
	for i, r := range f.Outcome.Receivers {
		if r != nil {
			add(fmt.Sprintf("receiver%d", i), r.Host, r.StageSeries)
		}
	}
	for i, s := range f.Outcome.Senders {
		if s != nil {
			add(fmt.Sprintf("sender%d", i), s.Host, s.StageSeries)
		}
	}
	return out, nil
}

// ProfiledTrial is the sweep's profiled trial, the one whose logs the
// run directory's profiles hold (ok false: the sweep profiled none).
func (s *Summary) ProfiledTrial() (Trial, bool) {
	if s.Result == nil {
		return Trial{}, false
	}
	for _, t := range s.Result.Trials {
		if t.Purpose == PurposeProfile {
			return t, true
		}
	}
	return Trial{}, false
}
