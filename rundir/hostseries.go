package rundir

import (
	"fmt"
	"path/filepath"

	"github.com/cloudprofiler-go/cp/cpustat"
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

// trialSeries is the part of trials/NNN.json that HostSeries reads.
type trialSeries struct {
	Outcome struct {
		Senders   []*agentSeriesJSON `json:"senders"`
		Receivers []*agentSeriesJSON `json:"receivers"`
	} `json:"outcome"`
}

type agentSeriesJSON struct {
	StageSeries *struct {
		TSC    []uint64 `json:"tsc"`
		UnixNs []int64  `json:"unix_ns"`
	} `json:"stage_series"`
	Host *cpustat.Record `json:"host"`
}

// HostSeries reads every agent's host samples of trial n, in the order
// the sweep names its nodes (receivers, then senders). An agent without
// host accounting is left out; one without a stage series (stage
// accounting off), or whose clock pairs do not pair up, has no pairs, and
// its samples cannot be placed in time (the reader says so).
func (d *Dir) HostSeries(n int) ([]AgentSeries, error) {
	var t trialSeries
	if err := readJSONFile(filepath.Join(d.Path, "trials", fmt.Sprintf("%03d.json", n)), &t); err != nil {
		return nil, err
	}
	var out []AgentSeries
	add := func(role string, agents []*agentSeriesJSON) {
		for i, a := range agents {
			if a == nil || a.Host == nil || a.Host.Error != "" {
				continue
			}
			s := AgentSeries{Node: fmt.Sprintf("%s%d", role, i), PeriodNs: a.Host.PeriodNs, Samples: a.Host.Samples}
			if ss := a.StageSeries; ss != nil && len(ss.TSC) == len(ss.UnixNs) {
				s.TSC, s.UnixNs = ss.TSC, ss.UnixNs
			}
			out = append(out, s)
		}
	}
	add("receiver", t.Outcome.Receivers)
	add("sender", t.Outcome.Senders)
	return out, nil
}

// ProfiledTrial is the sweep's profiled trial, the one whose logs the
// run directory's profiles hold (ok false: the sweep profiled none).
func (s *Summary) ProfiledTrial() (TrialRecord, bool) {
	for _, t := range s.Result.Trials {
		if t.Purpose == "profile" {
			return t, true
		}
	}
	return TrialRecord{}, false
}
