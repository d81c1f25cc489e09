package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/internal/testkit/cref"
)

// TestBenchCost: what the harness costs in CPU (issue 32). For each paced
// rate (0.2, 2 and 5 M tuples/s, and unpaced) and bucket (1 and 100
// tuples of 100 bytes), dgsend into dgrecv on loopback and the plain C
// pair (cref-send, which busy-waits for each slot, into cref-recv) with
// the same messages at the same rate, interleaved; every process's user +
// system time from its exit status, per million tuples, and ours by
// thread (from the agents' host accounting). Targets: at 2 M/s in buckets
// of 100 and at 0.2 M/s in buckets of 1, both of ours together at most
// 0.5 core; unpaced, CPU per tuple at most 1.1x the C pair's.
func TestBenchCost(t *testing.T) {
	benchOnly(t)
	progs, err := cref.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const seconds = 3.0
	for _, bucket := range []int{1, 100} {
		size := 24 + 100*bucket // the wire's message for bucket tuples of 100 bytes
		for _, rate := range []float64{0.2e6, 2e6, 5e6, 0} {
			tuples := int(rate * seconds)
			if rate == 0 {
				tuples = map[int]int{1: 3_000_000, 100: 10_000_000}[bucket]
			}
			msgs := tuples / bucket
			var oursCores, cCores, oursPerM, cPerM, achieved []float64
			var threads string
			for rep := 0; rep < repeats(); rep++ {
				// --no-rate-check: 5 M single-tuple messages a second is above
				// what one thread can send here (dgsend refuses it otherwise);
				// the point is what trying costs, as for the C sender.
				pr := &Pair{Bin: binDir, RecvArgs: []string{"--schema", "synthetic", "--expect-streams", "1"},
					SendArgs: sendArgs("--rate", fmt.Sprint(rate), "--bucket", fmt.Sprint(bucket), "--count", fmt.Sprint(tuples), "--duration", "0", "--no-rate-check"),
					Timeout:  2 * time.Minute}
				pr.Run(t)
				wall := pr.Send.DurationS
				achieved = append(achieved, float64(tuples)/max(wall, 1e-9))
				ours := procCPU(pr.SendProc) + procCPU(pr.RecvProc)
				oursCores, oursPerM = append(oursCores, ours/max(wall, 1e-9)), append(oursPerM, ours/float64(tuples)*1e6)
				threads = threadsOf("dgsend", pr.Send.Host) + "; " + threadsOf("dgrecv", pr.Recv.Host)

				r, err := progs.Receive(context.Background(), size, msgs, 2*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				s, err := progs.SendAt(context.Background(), r.Endpoint, size, msgs, rate/float64(bucket))
				if err != nil {
					t.Fatal(err)
				}
				rr, err := r.Wait()
				if err != nil {
					t.Fatal(err)
				}
				c := s.ProcessCPU + rr.ProcessCPU
				cCores, cPerM = append(cCores, c/time.Since(start).Seconds()), append(cPerM, c/float64(tuples)*1e6)
			}
			name := fmt.Sprintf("%.1fM/s", rate/1e6)
			if rate == 0 {
				name = "unpaced"
			}
			target := ""
			switch {
			case rate == 2e6 && bucket == 100, rate == 0.2e6 && bucket == 1:
				target = fmt.Sprintf("; target <= 0.5 core: %s", verdict(median(oursCores) <= 0.5))
			case rate == 0:
				target = fmt.Sprintf("; target ours/C <= 1.1: %s", verdict(median(oursPerM) <= 1.1*median(cPerM)))
			}
			t.Logf("COST %s bucket=%d: dgsend+dgrecv %.2f s CPU per M tuples (%.2f cores, achieved %.2fM/s), C pair %.2f s (%.2f cores): ours/C %.2f (median of %d)%s; ours by thread: %s",
				name, bucket, median(oursPerM), median(oursCores), median(achieved)/1e6, median(cPerM), median(cCores), median(oursPerM)/median(cPerM), len(oursPerM), target, threads)
		}
	}
}

// procCPU is an exited process's user plus system time in seconds.
func procCPU(p *Proc) float64 {
	if p == nil || p.Cmd.ProcessState == nil {
		return 0
	}
	return (p.Cmd.ProcessState.UserTime() + p.Cmd.ProcessState.SystemTime()).Seconds()
}

// threadsOf lists a process's thread roles and the cores each used.
func threadsOf(name string, h *cpustat.Record) string {
	if h == nil {
		return name + " (no accounting)"
	}
	var parts []string
	for _, th := range h.Summary.Threads {
		parts = append(parts, fmt.Sprintf("%s %.2f", th.Name, th.Cores))
	}
	return fmt.Sprintf("%s %.2f cores (%s)", name, h.Summary.Process, strings.Join(parts, ", "))
}
