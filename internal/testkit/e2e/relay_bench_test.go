package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"
)

// slowRelay is a system under test in the middle that forwards at most
// perSec messages a second (PULL in, PUSH out): a black box of known
// capacity, as a service that spends a fixed time on each message would
// be. It sleeps, so its own CPU does not make the host the limit.
type slowRelay struct {
	ctx     *zmq.Context
	in, out int
	wg      sync.WaitGroup
}

func startSlowRelay(t *testing.T, perSec float64) *slowRelay {
	t.Helper()
	r := &slowRelay{in: mustPort(t), out: mustPort(t)}
	var err error
	if r.ctx, err = zmq.NewContext(); err != nil {
		t.Fatal(err)
	}
	front, err1 := r.ctx.NewSocket(zmq.PULL)
	back, err2 := r.ctx.NewSocket(zmq.PUSH)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		sock *zmq.Socket
		port int
	}{{front, r.in}, {back, r.out}} {
		if err := s.sock.Bind(fmt.Sprintf("tcp://127.0.0.1:%d", s.port)); err != nil {
			t.Fatal(err)
		}
	}
	period := time.Duration(float64(time.Second) / perSec)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() { front.SetLinger(0); back.SetLinger(0); front.Close(); back.Close() }()
		next := time.Now()
		for {
			msg, err := front.RecvMessageBytes(0)
			if err != nil {
				return // the context ended
			}
			// One message per period on average: a sleep that overshoots
			// (by up to a millisecond here) is made up by the next
			// messages; only an idle gap restarts the schedule, so that a
			// backlog never drains in a burst of more than 10 ms' worth.
			if now := time.Now(); now.Sub(next) > 10*time.Millisecond {
				next = now
			}
			next = next.Add(period)
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
			if _, err := back.SendMessage(msg); err != nil {
				return
			}
		}
	}()
	t.Cleanup(r.stop)
	return r
}

func (r *slowRelay) stop() {
	if r.ctx != nil {
		_ = r.ctx.Term()
		r.wg.Wait()
		r.ctx = nil
	}
}

// TestBenchRelayRow is issue 31's relay row: ten sweeps (CP_BENCH_RELAY_SWEEPS) through a relay
// that forwards 3000 buckets of 100 a second (300 k tuples/s), each
// profiled at the limit and analysed with the activity graph. It prints
// what each analysis named, each of which should name the system under
// test (sut/stream0): the diagnosis by its queue, the service rates by
// what it delivered while backlogged, the graph by the time buckets spent
// in flight to a lane that waited for them; and every trial's next limit,
// counting those the trials contradicted.
func TestBenchRelayRow(t *testing.T) {
	benchOnly(t)
	const perSec, bucket = 3000, 100
	profile := filepath.Join(moduleDir(t), "profiles", "default.yaml")
	n := 10
	if _, err := fmt.Sscan(os.Getenv("CP_BENCH_RELAY_SWEEPS"), &n); err != nil || n < 1 {
		n = 10
	}
	right := map[string]int{}
	limits, contradicted := 0, 0
	for i := 1; i <= n; i++ {
		r := startSlowRelay(t, perSec)
		recv, snd := startAgents(t, "--connect", fmt.Sprintf("tcp://127.0.0.1:%d", r.out))
		rep, _ := runSweepAllowing(t, 15*time.Minute, []int{6, 7}, "--sender", agentAddr(t, snd), "--receiver", agentAddr(t, recv),
			"--relay-input", fmt.Sprintf("tcp://127.0.0.1:%d", r.in), "--start", "50k", "--bucket", fmt.Sprint(bucket),
			"--duration", "2s", "--warmup", "500ms", "--clock", "--profile", profile, "--profile-at", "limit", "--name", fmt.Sprintf("relay-%d", i))
		r.stop()
		_ = recv.Cmd.Process.Kill()
		_ = snd.Cmd.Process.Kill()
		for _, tr := range rep.Result.Trials {
			next := "no next limit"
			if n := tr.NextLimit; n != nil {
				limits++
				next = fmt.Sprintf("next limit %s %.1f k/s (%s)", n.Stage, n.TuplesPerS/1e3, n.Method)
				if n.Inconsistent != "" {
					contradicted++
					next = "next limit inconsistent: " + n.Inconsistent
				}
			}
			t.Logf("RELAY sweep %d: %s %.1f k/s achieved %.1f k/s pass %v %s; %s", i, tr.Purpose, tr.Rate/1e3, tr.Achieved/1e3, tr.Verdict.Pass, failedRules(tr.Verdict.Checks), next)
		}
		named := map[string]string{"diagnosis": rep.Limiting}
		agreement := ""
		if rep.Dir != "" {
			if _, _, pag := pagTop(t, rep.Dir); pag.Agreement != nil {
				for _, e := range pag.Agreement.Explanations {
					named[e.Analysis] = e.Stage
				}
				agreement = pag.Agreement.Statement
			}
		}
		for _, a := range []string{"diagnosis", "service rates", "activity graph"} {
			if strings.HasPrefix(named[a], "sut/") || strings.HasPrefix(named[a], "receiver0/sut/") {
				right[a]++
			}
		}
		t.Logf("RELAY sweep %d: answer %.1f k/s (relay %d k/s); diagnosis %q (%s); service rates %q; graph %q; %s", i, rep.Result.LastPass/1e3,
			perSec*bucket/1000, named["diagnosis"], rep.Evidence, named["service rates"], named["activity graph"], agreement)
	}
	t.Logf("RELAY next limits: %d trials had one, %d of them inconsistent with the sweep's trials (not printed as limits)", limits, contradicted)
	for _, a := range []string{"diagnosis", "service rates", "activity graph"} {
		t.Logf("RELAY %s named the relay in %d of %d sweeps (target >= 9 of 10: %s)", a, right[a], n, verdict(10*right[a] >= 9*n))
	}
}
