package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/servicerate"
)

// A system under test in the middle has a service rate of its own: what
// it delivered while backlogged. A sweep through a relay that forwards
// 2000 buckets of 100 a second, started above that, must say so in the
// failing trials' next limits (sut/stream0, backlog, 200 k/s), and no
// next limit it prints may be contradicted by its trials.
func TestSweepMeasuresARelaysServiceRate(t *testing.T) {
	const perSec, bucket = 2000, 100
	r := startSlowRelay(t, perSec)
	recv, snd := startAgents(t, "--connect", fmt.Sprintf("tcp://127.0.0.1:%d", r.out))
	sweepRelay := func() sweepReport {
		rep, _ := runSweepAllowing(t, 4*time.Minute, []int{6}, "--sender", agentAddr(t, snd), "--receiver", agentAddr(t, recv),
			"--relay-input", fmt.Sprintf("tcp://127.0.0.1:%d", r.in), "--start", "400k", "--bucket", fmt.Sprint(bucket),
			"--duration", "1s", "--warmup", "300ms", "--precision", "0.05", "--boundary-runs", "1", "--max-trials", "8")
		return rep
	}
	rep := sweepRelay()
	// The suite beside this test can make dgsend's own thread late (22 ms
	// at 67 k/s in one CI run) or fill the host's CPUs (other processes
	// 69%); the sweep then rightly names that thread or the host CPU, not
	// the relay. That is the instrument reporting a disturbed host, not a
	// wrong measurement of the relay: sweep once more, and fail if the
	// second sweep does not name the relay either.
	if strings.HasPrefix(rep.Limiting, "thread") || rep.Limiting == "host CPU" {
		t.Logf("first sweep limited by the harness's own %q (%s); sweeping again", rep.Limiting, rep.Evidence)
		rep = sweepRelay()
	}
	want := float64(perSec * bucket)
	seen := 0
	for _, tr := range rep.Result.Trials {
		n := tr.NextLimit
		if n == nil || n.Inconsistent != "" {
			continue
		}
		if n.Stage != "sut/stream0" || n.Method != servicerate.MethodBacklog {
			t.Errorf("trial at %.0f: next limit %s (%s) %.0f, want the relay's backlog rate", tr.Rate, n.Stage, n.Method, n.TuplesPerS)
			continue
		}
		// The relay never forwards faster than its schedule (+5% for the
		// measurement), but runs in this test's own process: on a host busy
		// with the rest of the suite it is starved and really forwards
		// less (147 k/s of 200 k/s in one CI run, where the sweep's answer
		// was 143 k/s). So the rate named must lie between what the sweep
		// saw pass and the schedule; the exact figure is the relay row's
		// benchmark (TestBenchRelayRow).
		if n.TuplesPerS > 1.05*want || n.TuplesPerS < 0.95*rep.Result.LastPass {
			t.Errorf("trial at %.0f: the relay's backlog rate %.0f, want between the answer %.0f (-5%%) and the relay's schedule %.0f (+5%%)", tr.Rate, n.TuplesPerS, rep.Result.LastPass, want)
		}
		if tr.Verdict.Pass && n.TuplesPerS < 0.95*tr.Rate {
			t.Errorf("trial at %.0f passed, yet its next limit says %.0f", tr.Rate, n.TuplesPerS)
		}
		seen++
	}
	if seen == 0 {
		t.Fatalf("no trial named the relay's rate; limited by %q (%s); trials %+v", rep.Limiting, rep.Evidence, rep.Result.Trials)
	}
	if rep.Limiting != "sut/stream0" {
		t.Errorf("limited by %q (%s), want the relay", rep.Limiting, rep.Evidence)
	}
	t.Logf("answer %.0f (relay %.0f), %d next limits named the relay", rep.Result.LastPass, want, seen)
}
