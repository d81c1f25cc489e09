package receiver_test

import (
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sender"
	sendtally "github.com/cloudprofiler-go/cp/sender/tally"
	"github.com/cloudprofiler-go/cp/trialcfg"
)

// TestInjectedFaults: each fixture does what it says. A stall of the
// consumer, of a lane or of a sender thread holds the tuples behind it for
// its length (their latency or lateness reaches it), and nothing is lost;
// decode work and a work schedule slow the stage they load.
func TestInjectedFaults(t *testing.T) {
	syn, _ := scenarios.Load("synthetic-100")
	paced := func() sender.Config {
		return sender.Config{
			Sender:          trialcfg.Sender{Threads: 1, BucketSize: 10, Overflow: trialcfg.Block, Idle: trialcfg.Sleep},
			Scenario:        syn,
			Rate:            20_000,
			Duration:        time.Second,
			MaxLateFraction: 1,
		}
	}
	stall := []inject.Stall{{At: 300 * time.Millisecond, For: 600 * time.Millisecond}}
	withStall := func(stage string) []inject.Stall {
		s := append([]inject.Stall(nil), stall...)
		s[0].Stage = stage
		return s
	}
	for _, tc := range []struct {
		name  string
		rc    receiver.Config
		sc    sender.Config
		check func(t *testing.T, r *tally.Result, s *sendtally.Result)
	}{
		{"consumer stall", receiver.Config{Stalls: withStall("consumer")}, paced(), func(t *testing.T, r *tally.Result, _ *sendtally.Result) {
			if r.Latency.Max < int64(500*time.Millisecond) {
				t.Errorf("max latency %v through a 600 ms consumer stall", time.Duration(r.Latency.Max))
			}
		}},
		{"lane stall", receiver.Config{Stalls: withStall("lane0")}, paced(), func(t *testing.T, r *tally.Result, _ *sendtally.Result) {
			if r.Latency.Max < int64(500*time.Millisecond) {
				t.Errorf("max latency %v through a 600 ms lane stall", time.Duration(r.Latency.Max))
			}
		}},
		{"sender thread stall", receiver.Config{}, func() sender.Config { c := paced(); c.Stalls = withStall("thread0"); return c }(),
			func(t *testing.T, _ *tally.Result, s *sendtally.Result) {
				if s.Lateness.Max < int64(500*time.Millisecond) {
					t.Errorf("max lateness %v through a 600 ms thread stall", time.Duration(s.Lateness.Max))
				}
			}},
		{"decode work", receiver.Config{Receiver: trialcfg.Receiver{DecodeWork: time.Millisecond}}, paced(), func(t *testing.T, r *tally.Result, _ *sendtally.Result) {
			// 1 ms a bucket of 10: at most 10 k tuples/s against 20 k sent
			if r.Rate > 12_000 {
				t.Errorf("consumed %.0f tuples/s with 1 ms of decode work per bucket of 10", r.Rate)
			}
		}},
		{"work schedule", receiver.Config{Receiver: trialcfg.Receiver{WorkSchedule: []inject.Step{{At: 0, Work: 0}, {At: 500 * time.Millisecond, Work: 200 * time.Microsecond}}}}, paced(),
			func(t *testing.T, r *tally.Result, _ *sendtally.Result) {
				// 10 k tuples after 0.5 s at most 5 k tuples/s: 2.5 s, not 1
				if r.DurationS < 1.8 {
					t.Errorf("consumed in %.2f s; 200 µs a tuple after 0.5 s needs about 2.5 s", r.DurationS)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := tc.rc
			rc.Schema, rc.EndTimeout = "synthetic", 10*time.Second
			r, s := run(t, rc, tc.sc)
			if !r.Complete || r.Consumed != s.Emitted || s.Emitted == 0 {
				t.Fatalf("consumed %d of %d emitted, complete %v", r.Consumed, s.Emitted, r.Complete)
			}
			tc.check(t, r, s)
			// The result records what was injected, on the side it was.
			if len(r.Injected.Stalls) != len(tc.rc.Stalls) || r.Injected.DecodeWork != tc.rc.DecodeWork ||
				len(r.Injected.WorkSchedule) != len(tc.rc.WorkSchedule) || len(s.Injected.Stalls) != len(tc.sc.Stalls) {
				t.Errorf("recorded %+v (receiver) and %+v (sender)", r.Injected, s.Injected)
			}
		})
	}
}
