package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/sweep/remote"
	"github.com/cloudprofiler-go/cp/sweep/search"
)

// TestSweepRecordsAgentFailures: a receiver that fails its trials ends
// the sweep with an agent error (exit status 5), the trial recorded as
// invalid with its retries, and the profiled trial skipped with the
// reason; one that fails once is retried and the sweep answers.
func TestSweepRecordsAgentFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		recv     string
		retry    time.Duration
		retries  int
		wantErr  bool
		wantLog  []string
		lastPass float64
		skipped  string
		wantExit int // when there is no agent error: ExitAnswer unless set
	}{
		{name: "fails, no retry", recv: "fail", wantErr: true, wantLog: []string{"INVALID", "profiled trial skipped: the sweep ended with an error"},
			skipped: "ended with an error"},
		{name: "fails every retry", recv: "fail", retry: 2 * time.Second, retries: MaxAgentRetries, wantErr: true,
			wantLog: []string{"INVALID", "waiting up to 2s for the agents"}, skipped: "ended with an error"},
		{name: "fails once, retried", recv: "failonce", retry: 2 * time.Second, lastPass: 1000,
			wantLog: []string{"INVALID", "waiting up to 2s", "PASS", "collected 1 profile files from receiver0"}},
		{name: "profile not collected", recv: "noprofile", lastPass: 1000, wantExit: ExitError,
			wantLog: []string{"PASS", "profiled trial skipped: collect profile of receiver0", "no profiled trial's logs"},
			skipped: "collect profile of receiver0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recv, send := newFake(t, protocol.RoleReceiver, tc.recv), newFake(t, protocol.RoleSender, "ok")
			var log bytes.Buffer
			s := &Sweep{Ctrl: &Controller{Senders: []*remote.Agent{send.client()}, Receivers: []*remote.Agent{recv.client()}, Plan: testPlan(t), AgentTimeout: time.Second},
				Search: Search{Method: "linear", Linear: search.LinearPlan{From: 1000, To: 1000, Step: 1000}}, Name: "faults", Results: t.TempDir(),
				Log: &log, Verbose: true, RetryAgent: tc.retry, Profile: &profiler.Handlers{Default: profiler.Config{Handler: "buffered", Path: "x.log"}}}
			report, err := s.Execute(context.Background())
			var ae *AgentError
			if tc.wantErr != errors.As(err, &ae) {
				t.Fatalf("error %v, want an agent error: %v\n%s", err, tc.wantErr, log.String())
			}
			want := tc.wantExit
			if tc.wantErr {
				want = ExitAgentFailure
			}
			if code := ExitCode(report, err); code != want {
				t.Errorf("exit status %d, want %d (error %v)", code, want, err)
			}
			for _, want := range tc.wantLog {
				if !strings.Contains(log.String(), want) {
					t.Errorf("progress lacks %q:\n%s", want, log.String())
				}
			}
			if !strings.Contains(report.ProfileSkipped, tc.skipped) || (tc.skipped == "") != (report.ProfileSkipped == "") {
				t.Errorf("profile skipped %q, want %q", report.ProfileSkipped, tc.skipped)
			}
			var text bytes.Buffer
			WriteText(&text, report)
			if !tc.wantErr {
				if report.Invalid != nil || report.Result.LastPass != tc.lastPass {
					t.Fatalf("report %+v result %+v", report.Invalid, report.Result)
				}
				return
			}
			inv := report.Invalid
			if inv == nil || inv.N != 1 || inv.Rate != 1000 || inv.Retries != tc.retries || !strings.Contains(inv.Error, "address in use") || inv.Agent != recv.client().Addr {
				t.Fatalf("invalid trial %+v", inv)
			}
			var saved struct{ Invalid *rundir.InvalidTrial }
			b, err := os.ReadFile(filepath.Join(report.Dir, "trials", "001.json"))
			if err != nil || json.Unmarshal(b, &saved) != nil || saved.Invalid == nil || saved.Invalid.Retries != tc.retries {
				t.Errorf("trials/001.json: %v %s", err, b)
			}
			for _, want := range []string{"SWEEP FAILED: trial 1", "could not be judged", "profiled trial skipped"} {
				if !strings.Contains(text.String(), want) {
					t.Errorf("report text lacks %q:\n%s", want, text.String())
				}
			}
		})
	}
}

// TestProgressEstimateIsTrue: the line after a trial says what the search
// will do next, and nothing after the boundary's repeats or the profiled
// trial.
func TestProgressEstimateIsTrue(t *testing.T) {
	tr := func(rate float64, pass bool, purpose string) rundir.Trial {
		return rundir.Trial{Rate: rate, Verdict: rundir.Verdict{Pass: pass}, Purpose: purpose, Elapsed: time.Second}
	}
	s := &Sweep{Search: Search{Method: "fast", Fast: search.FastPlan{Precision: 0.01}}}
	for _, tc := range []struct {
		name   string
		trials []rundir.Trial
		want   string // "" = no line
	}{
		{"ramping", []rundir.Trial{tr(1000, true, "ramp")}, ""},
		{"wide interval", []rundir.Trial{tr(1000, true, "ramp"), tr(2000, false, "ramp")}, "interval [1.000 k/s, 2.000 k/s): about 5 more trial(s)"},
		{"narrow: repeats next", []rundir.Trial{tr(1000, true, "ramp"), tr(1005, false, "close")}, "within 1%: both rates are repeated next, to 3 runs each"},
		{"repeating", []rundir.Trial{tr(1000, true, "ramp"), tr(1005, false, "close"), tr(1000, true, "repeat")}, "1.000 k/s passed 2 of 2 runs so far (3 asked)"},
		{"after the repeats", []rundir.Trial{tr(1000, true, "ramp"), tr(1005, false, "close"), tr(1000, true, "repeat"), tr(1005, false, "repeat"),
			tr(1000, true, "repeat"), tr(1005, false, "repeat")}, ""},
		{"after the profiled trial", []rundir.Trial{tr(1000, true, "ramp"), tr(1005, false, "close"), tr(900, true, "profile")}, ""},
		{"a new candidate's first run", []rundir.Trial{tr(500, true, "ramp"), tr(1000, true, "ramp"), tr(1005, false, "close"),
			tr(1000, false, "repeat"), tr(980, true, "candidate")}, "980.0 /s passed 1 of 1 runs so far (3 asked)"},
		{"a failed repeat moves the answer down", []rundir.Trial{tr(500, true, "ramp"), tr(1000, true, "ramp"), tr(1005, false, "close"),
			tr(1000, false, "repeat")}, "1.000 k/s passed only 1 of 2 runs: the answer moves below it"},
		{"bounds that differ only in the fifth digit", []rundir.Trial{tr(17_001, true, "ramp"), tr(17_004, false, "close")}, "[17.001 k/s, 17.004 k/s)"},
	} {
		got := s.estimateLeft(&rundir.Result{Trials: tc.trials})
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestProfileSearch: with ProfileSearch every trial of the search runs
// with the handlers, and the report says that its answer was found
// profiled; without, only the profiled trial after the search does.
func TestProfileSearch(t *testing.T) {
	for _, profiled := range []bool{false, true} {
		recv, send := newFake(t, protocol.RoleReceiver, "ok"), newFake(t, protocol.RoleSender, "ok")
		var log bytes.Buffer
		s := &Sweep{Ctrl: &Controller{Senders: []*remote.Agent{send.client()}, Receivers: []*remote.Agent{recv.client()}, Plan: testPlan(t), AgentTimeout: time.Second},
			Search: Search{Method: "linear", Linear: search.LinearPlan{From: 1000, To: 2000, Step: 1000}}, Name: "profiled", Results: t.TempDir(),
			Log: &log, Profile: &profiler.Handlers{Default: profiler.Config{Handler: "buffered", Path: "x.log"}}, ProfileSearch: profiled}
		report, err := s.Execute(context.Background())
		if err != nil {
			t.Fatalf("profiled search %v: %v\n%s", profiled, err, log.String())
		}
		trials := len(report.Result.Trials) // the search's and the profiled trial
		want := 1
		if profiled {
			want = trials
		}
		for _, f := range []*fakeAgent{send, recv} {
			if f.profiled != want || f.started != trials {
				t.Errorf("profiled search %v: %s agent profiled %d of %d trials, want %d", profiled, f.role, f.profiled, f.started, want)
			}
		}
		var text bytes.Buffer
		WriteText(&text, report)
		if report.ProfiledSearch != profiled || strings.Contains(text.String(), "every trial profiled") != profiled {
			t.Errorf("profiled search %v: report says %v:\n%s", profiled, report.ProfiledSearch, text.String())
		}
	}
}

// TestProfiledTrialRate: the profiled trial runs at --profile-at × the
// answer, at --profile-rate, or at the limit: the first failing rate, and
// at least LimitOverload × the answer (here nothing failed up to 2 k/s).
func TestProfiledTrialRate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		at    float64
		limit bool
		rate  float64
		want  float64
		log   string
	}{
		{"a fraction of the answer", 0.5, false, 0, 1000, "50% of the highest passing rate"},
		{"a rate", 0.9, false, 1500, 1500, "--profile-rate"},
		{"the limit", 0.9, true, 0, 2000 * LimitOverload, "at the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recv, send := newFake(t, protocol.RoleReceiver, "ok"), newFake(t, protocol.RoleSender, "ok")
			var log bytes.Buffer
			s := &Sweep{Ctrl: &Controller{Senders: []*remote.Agent{send.client()}, Receivers: []*remote.Agent{recv.client()}, Plan: testPlan(t), AgentTimeout: time.Second},
				Search: Search{Method: "linear", Linear: search.LinearPlan{From: 1000, To: 2000, Step: 1000}}, Name: "at", Results: t.TempDir(), Log: &log, Verbose: true,
				Profile: &profiler.Handlers{Default: profiler.Config{Handler: "buffered", Path: "x.log"}}, ProfileAt: tc.at, ProfileAtLimit: tc.limit, ProfileRate: tc.rate}
			report, err := s.Execute(context.Background())
			if err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			last := report.Result.Trials[len(report.Result.Trials)-1]
			if last.Purpose != "profile" || math.Abs(last.Rate-tc.want) > 1e-6 || !strings.Contains(log.String(), tc.log) {
				t.Errorf("profiled trial %s at %.0f, want %.0f; log:\n%s", last.Purpose, last.Rate, tc.want, log.String())
			}
		})
	}
}
