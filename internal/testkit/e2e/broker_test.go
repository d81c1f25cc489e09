package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
	"github.com/cloudprofiler-go/cp/sweep"
)

// TestSweepThroughNATS: a sweep with --sut runs its local agents through
// a real NATS server, core and JetStream; every trial passes at low rates,
// and the receiver's lanes consume their own subjects.
func TestSweepThroughNATS(t *testing.T) {
	addr, _ := realserver.NATS(t)
	for _, sut := range []string{"nats://" + addr + "/cp.core", "jetstream://" + addr + "/cp.js?storage=file"} {
		rep, p := runSweep(t, 2*time.Minute, "--sut", sut, "--lanes", "2", "--threads", "2",
			"--search", "linear", "--from", "20k", "--to", "40k", "--step", "20k", "--duration", "1s", "--warmup", "200ms", "--lateness-floor", "100ms")
		if len(rep.Result.Trials) != 2 {
			t.Fatalf("%s: %d trials\n%s", sut, len(rep.Result.Trials), p.Stderr.String())
		}
		for i, tr := range rep.Result.Trials {
			if !tr.Verdict.Pass {
				t.Errorf("%s: trial %d failed: %s", sut, i+1, failedRules(tr.Verdict.Checks))
			}
		}
		// the broker is the diagnosis's black-box stage, named after it
		drv, _, _ := strings.Cut(sut, "://")
		if d, err := os.ReadFile(filepath.Join(rep.Dir, "diagnosis.json")); err != nil || !strings.Contains(string(d), `"`+drv+`/stream`) {
			t.Errorf("%s: diagnosis.json has no %s/stream<N> stage (%v)", sut, drv, err)
		}
		// and summary.json says which system was in the path, so no reader
		// parses the topology line
		if b, err := os.ReadFile(filepath.Join(rep.Dir, "summary.json")); err != nil || !strings.Contains(string(b), `"black_box": "`+drv+`"`) {
			t.Errorf("%s: summary.json does not name the black box %q (%v)", sut, drv, err)
		}
		base, _, _ := strings.Cut(sut, "?")
		if out := p.Stderr.String(); !strings.Contains(out, base+".0") || !strings.Contains(out, base+".1") {
			t.Errorf("%s: the lanes' subjects %s.0 and .1 are not in the sweep's topology line:\n%s", sut, base, out)
		}
	}
}

// TestSweepSaysTheBrokerFailed: the broker killed mid-trial makes the
// trial invalid and ends the sweep with exit status 8, naming the broker;
// no rate is reported as failed or passed.
func TestSweepSaysTheBrokerFailed(t *testing.T) {
	addr, stop := realserver.NATS(t)
	results := t.TempDir()
	sw, err := Start(filepath.Join(binDir, "cpsweep"), "--sut", "nats://"+addr+"/cp.gone", "--results", results, hostTolerant[0], hostTolerant[1], hostTolerant[2], hostTolerant[3],
		"--duration", "20s", "--warmup", "0s", "--search", "linear", "--from", "10k", "--to", "10k", "--step", "10k")
	if err != nil {
		t.Fatal(err)
	}
	if !sw.WaitForLine("sweep \"sweep\": senders", 30*time.Second) {
		t.Fatalf("the sweep did not start:\n%s", sw.Stderr.String())
	}
	time.Sleep(3 * time.Second) // inside the trial's 20 s
	stop()
	err = sw.Wait(60 * time.Second)
	if code := ExitCode(err); code != sweep.ExitSystemFailed {
		t.Fatalf("cpsweep exited %d (%v), want %d:\n%s\n%s", code, err, sweep.ExitSystemFailed, sw.Stdout.String(), sw.Stderr.String())
	}
	out := sw.Stdout.String() + sw.Stderr.String()
	for _, want := range []string{"INVALID", "the system under test failed", "nats://" + addr, "no answer"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "no rate passed") || strings.Contains(out, "max sustainable") {
		t.Errorf("a broker failure was reported as a capacity answer:\n%s", out)
	}
}

// TestSweepThroughRedis: the same sweep through Redis Streams, two lanes
// on keys of their own, acknowledged reads.
func TestSweepThroughRedis(t *testing.T) {
	addr, _ := realserver.Redis(t)
	rep, p := runSweep(t, 2*time.Minute, "--sut", "redis://"+addr+"/cp?ack=explicit", "--lanes", "2", "--threads", "2",
		"--search", "linear", "--from", "20k", "--to", "40k", "--step", "20k", "--duration", "1s", "--warmup", "200ms", "--lateness-floor", "100ms")
	if len(rep.Result.Trials) != 2 || !rep.Result.Trials[0].Verdict.Pass || !rep.Result.Trials[1].Verdict.Pass {
		t.Fatalf("redis sweep: %+v\n%s", rep.Result.Trials, p.Stderr.String())
	}
	for _, c := range rep.Result.Trials[1].Verdict.Checks {
		if c.Rule == "system-backlog" {
			return
		}
	}
	t.Errorf("no system-backlog rule in a trial through Redis: %+v", rep.Result.Trials[1].Verdict.Checks)
}

// TestRedisFullStreamIsLoss: a stream capped by maxlen, read by a consumer
// slower than the rate (20 µs of work per tuple), loses the trimmed
// entries: the trial fails delivery with the missing count, it is not a
// broker failure.
func TestRedisFullStreamIsLoss(t *testing.T) {
	addr, _ := realserver.Redis(t)
	rep, p := runSweepAllowing(t, 2*time.Minute, []int{sweep.ExitNoRatePassed}, "--sut", "redis://"+addr+"/cp?maxlen=100", "--work", "20us",
		"--search", "linear", "--from", "200k", "--to", "200k", "--step", "10k", "--duration", "2s", "--warmup", "200ms", "--lateness-floor", "1s")
	if len(rep.Result.Trials) != 1 || rep.Result.Trials[0].Verdict.Pass {
		t.Fatalf("trials %+v\n%s", rep.Result.Trials, p.Stderr.String())
	}
	if f := failedRules(rep.Result.Trials[0].Verdict.Checks); !strings.Contains(f, "delivery") || !strings.Contains(f, "nr_emit > nr_recv") {
		t.Errorf("failed rules %q: want the loss in delivery", f)
	}
}

// TestRedisGroupDeletedIsSystemFailure: the consumer group destroyed
// mid-trial (an operator's mistake, a failover) makes the trial invalid
// and the sweep end with exit 8, naming the broker.
func TestRedisGroupDeletedIsSystemFailure(t *testing.T) {
	addr, _ := realserver.Redis(t)
	sw, err := Start(filepath.Join(binDir, "cpsweep"), "--sut", "redis://"+addr+"/cp", "--results", t.TempDir(), hostTolerant[0], hostTolerant[1], hostTolerant[2], hostTolerant[3],
		"--duration", "20s", "--warmup", "0s", "--search", "linear", "--from", "10k", "--to", "10k", "--step", "10k")
	if err != nil {
		t.Fatal(err)
	}
	if !sw.WaitForLine("sweep \"sweep\": senders", 30*time.Second) {
		t.Fatalf("the sweep did not start:\n%s", sw.Stderr.String())
	}
	time.Sleep(3 * time.Second)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if err := c.XGroupDestroy(context.Background(), "cp", "cp").Err(); err != nil {
		t.Fatalf("destroy the group: %v", err)
	}
	err = sw.Wait(60 * time.Second)
	if code := ExitCode(err); code != sweep.ExitSystemFailed {
		t.Fatalf("cpsweep exited %d, want %d:\n%s\n%s", code, sweep.ExitSystemFailed, sw.Stdout.String(), sw.Stderr.String())
	}
	if out := sw.Stdout.String(); !strings.Contains(out, "the system under test failed") || !strings.Contains(out, "NOGROUP") {
		t.Errorf("output does not name the failure:\n%s", out)
	}
}

// TestSweepThroughKafkaFake: the Kafka driver's conformance through a
// whole sweep, against franz-go's in-process fake cluster (one goroutine
// serves it: this checks behaviour, it measures nothing), acks=all with
// idempotence, two lanes on topics of their own.
func TestSweepThroughKafkaFake(t *testing.T) {
	rep, p := runSweep(t, 2*time.Minute, "--sut", "kafka://"+realserver.FakeKafka(t)+"/cp", "--lanes", "2", "--threads", "2",
		"--search", "linear", "--from", "10k", "--to", "20k", "--step", "10k", "--duration", "1s", "--warmup", "200ms", "--lateness-floor", "200ms")
	if len(rep.Result.Trials) != 2 || !rep.Result.Trials[0].Verdict.Pass || !rep.Result.Trials[1].Verdict.Pass {
		t.Fatalf("kafka sweep: %+v\n%s", rep.Result.Trials, p.Stderr.String())
	}
}
