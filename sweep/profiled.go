package sweep

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/rundir"
)

// profile runs the profiled trial when it was asked for and can run, and
// says why not otherwise; its error is a profile that did not come back.
func (s *Sweep) profile(ctx context.Context, res *rundir.Result, run func(context.Context, float64, string) (rundir.Trial, error), interrupted, failed bool) error {
	var err error
	switch {
	case s.Profile == nil:
	case interrupted:
		s.report.ProfileSkipped = "the sweep was interrupted"
	case failed:
		s.report.ProfileSkipped = "the sweep ended with an error"
	case res.LastPass <= 0 && s.ProfileRate <= 0:
		s.report.ProfileSkipped = "no rate passed, so there is no rate to profile at (--profile-rate sets one)"
	default:
		if err = s.profiledTrial(ctx, res, run); err != nil {
			s.report.ProfileSkipped = err.Error()
		}
	}
	if s.report.ProfileSkipped != "" {
		s.logf("profiled trial skipped: %s\n", s.report.ProfileSkipped)
	}
	return err
}

// LimitOverload is the least overload of a profiled trial at the limit
// (--profile-at limit), over the answer: the first failing rate may lie
// within the boundary's noise of the answer, where a run is as likely to
// keep up as not and its graph says little.
const LimitOverload = 1.1

// profiledTrial runs the profiled trial and collects every agent's logs;
// it returns why either failed (the sweep's answer stands, but the user
// asked for the logs, so Execute returns it as an error).
func (s *Sweep) profiledTrial(ctx context.Context, res *rundir.Result, run func(context.Context, float64, string) (rundir.Trial, error)) error {
	at := s.ProfileAt
	if at <= 0 {
		at = 0.9
	}
	rate := res.LastPass * at
	switch {
	case s.ProfileRate > 0:
		rate = s.ProfileRate
		s.logf("profiled trial at %s (--profile-rate)\n", numfmt.Rate(rate))
	case s.ProfileAtLimit:
		rate = max(res.FirstFail, LimitOverload*res.LastPass)
		s.logf("profiled trial at %s, at the limit (the first failing rate, at least %.0f%% of the answer): its activity graph shows what limits the overloaded run\n", numfmt.Rate(rate), 100*LimitOverload)
	case s.Verbose: // the trial's own line says "profile"; the summary, what it ran at
		s.logf("profiled trial at %s (%.0f%% of the highest passing rate)\n", numfmt.Rate(rate), 100*at)
	}
	s.Ctrl.TrialProfile = s.Profile
	t, err := run(ctx, rate, rundir.PurposeProfile)
	s.Ctrl.TrialProfile = nil
	if err != nil {
		return fmt.Errorf("the profiled trial could not run: %w", err)
	}
	res.Trials = append(res.Trials, t)
	names := s.Ctrl.NodeNames()
	keys := make([]string, 0, len(names))
	for name := range names {
		keys = append(keys, name)
	}
	sort.Strings(keys)
	var errs []error
	for _, name := range keys {
		files, err := names[name].FetchProfile(ctx, s.Out.NodeProfiles(name))
		if err != nil {
			errs = append(errs, fmt.Errorf("collect profile of %s: %w", name, err))
			continue
		}
		if s.Verbose {
			s.logf("collected %d profile files from %s\n", len(files), name)
		}
	}
	return errors.Join(errs...)
}
