package e2e

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/servicerate"
	"github.com/cloudprofiler-go/cp/sweep"
	"github.com/cloudprofiler-go/cp/tsc"
)

// Service rates against isolated ground truth (issue #14): for --work of
// 1, 10 and 100 µs, the consumer's capacity measured alone (cpsweep
// capacity, in process), then runs at about 0.8 of it (and 0.1) with
// dgsend and dgrecv on loopback, the consumer pinned to a CPU of its own
// (dgrecv --cpus 0,1: lane on 0, consumer on 1; dgsend --cpus 0), and the
// consumer's estimates compared with the capacity. CP_BENCH=1 only;
// CP_BENCH_SR_RUNS runs per point (default 10), CP_BENCH_SR_UTIL the
// utilisations (default "0.8 0.1" as one of them).
func TestBenchServiceRateVsCapacity(t *testing.T) {
	benchOnly(t)
	runs := 10
	if n, err := strconv.Atoi(os.Getenv("CP_BENCH_SR_RUNS")); err == nil && n > 0 {
		runs = n
	}
	utils := []float64{0.8, 0.1}
	if u, err := strconv.ParseFloat(os.Getenv("CP_BENCH_SR_UTIL"), 64); err == nil && u > 0 {
		utils = []float64{u}
	}
	clock, err := tsc.NewClock(100 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		work   time.Duration
		bucket int
	}{{time.Microsecond, 100}, {10 * time.Microsecond, 10}, {100 * time.Microsecond, 1}} {
		capRes, err := sweep.MeasureCapacity(sweep.CapacityPlan{Stage: sweep.CapacityConsumer, Work: c.work, Bucket: c.bucket,
			Scenario: "synthetic-100", Duration: 2 * time.Second, Repeats: 3, Clock: clock, Logf: t.Logf})
		if err != nil {
			t.Fatalf("work %v: capacity: %v", c.work, err)
		}
		truth := capRes.TuplesPerS
		for _, u := range utils {
			var rl, bt []float64
			rlIn, rlNC, rlFar := 0, 0, 0
			for i := 0; i < runs; i++ {
				pr := &Pair{Bin: binDir,
					RecvArgs: []string{"--schema", "synthetic", "--expect-streams", "1", "--work", c.work.String(), "--cpus", "0,1"},
					SendArgs: sendArgs("--rate", fmt.Sprintf("%.0f", u*truth), "--bucket", strconv.Itoa(c.bucket), "--duration", "5s", "--cpus", "0")}
				pr.Run(t)
				r, b, ok := consumerRates(pr.Recv.ServiceRates)
				if !ok {
					t.Fatalf("work %v: no consumer estimates in dgrecv's result", c.work)
				}
				if v, conv := r.Value(); conv {
					rl = append(rl, v/truth)
					if math.Abs(v/truth-1) <= 0.10 {
						rlIn++
					}
					if math.Abs(v/truth-1) > 0.5 {
						rlFar++
					}
				} else {
					rlNC++
				}
				if v, conv := b.Value(); conv {
					bt = append(bt, v/truth)
				}
				t.Logf("work %v util %.1f run %d: raftlib %s, busy_time %s (capacity %.0f; consumer utilisation %.2f)",
					c.work, u, i+1, ratioOf(r, truth), ratioOf(b, truth), truth, b.Utilisation)
			}
			btMed := math.NaN()
			if len(bt) > 0 {
				btMed = median(bt)
			}
			if u >= 0.5 {
				t.Logf("work %v at %.1f: raftlib within ±10%% in %d of %d runs (target >= 8: %s), %d not converged; busy_time median %.3f of the capacity (target ±5%%: %s)",
					c.work, u, rlIn, runs, verdict(rlIn*10 >= 8*runs), rlNC, btMed, verdict(math.Abs(btMed-1) <= 0.05))
			} else {
				t.Logf("work %v at %.1f: raftlib within ±20%% or not_converged, never >50%% off: %d converged, %d not, %d more than 50%% off (%s); busy_time median %.3f",
					c.work, u, len(rl), rlNC, rlFar, verdict(rlFar == 0), btMed)
			}
			record(t, "service_rate_vs_capacity", map[string]any{"work_ns": c.work.Nanoseconds(), "bucket": c.bucket, "utilisation": u,
				"capacity": truth, "raftlib_ratios": rl, "raftlib_not_converged": rlNC, "busy_time_ratios": bt})
		}
	}
}

func consumerRates(rates []servicerate.Rate) (raft, busy servicerate.Rate, ok bool) {
	n := 0
	for _, r := range rates {
		if r.Stage != "consumer" {
			continue
		}
		n++
		if r.Method == servicerate.MethodRaftLib {
			raft = r
		} else {
			busy = r
		}
	}
	return raft, busy, n == 2
}

func ratioOf(r servicerate.Rate, truth float64) string {
	if v, ok := r.Value(); ok {
		return fmt.Sprintf("%.3f", v/truth)
	}
	return r.Status
}
