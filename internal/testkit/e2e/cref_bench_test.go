package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/internal/testkit/cref"
)

// TestBenchEmissionVsC: one process sends 100-byte synthetic tuples
// unpaced to the plain C receiver on loopback; the reference is the plain
// C sender with the same message sizes into the same receiver (issue 16).
// Per repeat, interleaved: C, dgsend unpaced, dgsend unpaced with one cgo
// call per bucket (--send-batch 1: the gain of batching, same run), dgsend
// paced at 90% and at 95% of that unpaced rate. Every rate is the C receiver's (first to last
// message). Targets: unbatched >= 0.8x C, buckets of 100 >= 0.95x C, the
// paced loop at 90% load keeping its schedule and at >= 0.95 of the
// unpaced one at 95%.
func TestBenchEmissionVsC(t *testing.T) {
	benchOnly(t)
	progs, err := cref.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n := max(repeats(), 5)
	for _, tc := range []struct {
		bucket, size, msgs int
		target             float64
	}{{1, 124, 3_000_000, 0.8}, {100, 10024, 60_000, 0.95}} {
		var c, ours, ratios, paced90, paced95, cCPU, ourCPU, single, singleCPU []float64
		for rep := 0; rep < n; rep++ {
			var cs cref.Result
			cr := viaCReceiver(t, progs, tc.size, tc.msgs, func(ep string) (err error) {
				cs, err = progs.Send(context.Background(), ep, tc.size, tc.msgs)
				return err
			})
			var us dgsendResult
			unpaced := viaCReceiver(t, progs, tc.size, tc.msgs, func(ep string) (err error) {
				us, err = dgsendTo(ep, tc.bucket, 0, tc.msgs*tc.bucket)
				return err
			}) * float64(tc.bucket)
			// The same with one cgo call per bucket (--send-batch 1): what
			// handing libzmq a batch per call gains, in the same run.
			var ss dgsendResult
			one := viaCReceiver(t, progs, tc.size, tc.msgs, func(ep string) (err error) {
				ss, err = dgsendTo(ep, tc.bucket, 0, tc.msgs*tc.bucket, "--send-batch", "1")
				return err
			}) * float64(tc.bucket)
			single, singleCPU = append(single, one/(cr*float64(tc.bucket))), append(singleCPU, ss.CPUPerBucket)
			c, ours = append(c, cr*float64(tc.bucket)), append(ours, unpaced)
			ratios = append(ratios, unpaced/(cr*float64(tc.bucket)))
			cCPU, ourCPU = append(cCPU, cs.CPUPerMessage), append(ourCPU, us.CPUPerBucket)
			for _, frac := range []float64{0.90, 0.95} {
				var ps dgsendResult
				p := viaCReceiver(t, progs, tc.size, tc.msgs, func(ep string) (err error) {
					ps, err = dgsendTo(ep, tc.bucket, frac*unpaced, tc.msgs*tc.bucket)
					return err
				}) * float64(tc.bucket)
				t.Logf("bucket %d rep %d: paced at %.0f%% of %.3fM: %.3fM at the receiver (%.3f of unpaced), late slots %.1f%%, shortfall %d",
					tc.bucket, rep, 100*frac, unpaced/1e6, p/1e6, p/unpaced, 100*ps.LateFraction, ps.Shortfall)
				if frac == 0.90 {
					paced90 = append(paced90, p/(frac*unpaced))
				} else {
					paced95 = append(paced95, p/unpaced)
				}
			}
			t.Logf("bucket %d rep %d: C %.3fM, dgsend %.3fM tuples/s: %.3fx (one call per bucket: %.3fx); sending thread's CPU per message: C %.0f ns, dgsend %.0f ns (one call per bucket: %.0f ns)",
				tc.bucket, rep, c[rep]/1e6, unpaced/1e6, ratios[rep], single[rep], cs.CPUPerMessage, us.CPUPerBucket, ss.CPUPerBucket)
		}
		r := median(ratios)
		t.Logf("EMISSION vs C bucket=%d (%d-byte messages): dgsend %.3fM [%s], C %.3fM [%s] tuples/s; ours/C median of %d interleaved %.3f (target %.2f: %s); "+
			"sending thread's CPU per message: dgsend %.0f ns, C %.0f ns (C/ours %.3f); with one cgo call per bucket (--send-batch 1): ours/C %.3f, %.0f ns; "+
			"paced at 90%% achieved %.3f of its rate; paced at 95%% / unpaced %.3f (target 0.95: %s)",
			tc.bucket, tc.size, median(ours)/1e6, fmtRates(ours), median(c)/1e6, fmtRates(c), n, r, tc.target, verdict(r >= tc.target),
			median(ourCPU), median(cCPU), median(cCPU)/median(ourCPU), median(single), median(singleCPU), median(paced90), median(paced95), verdict(median(paced95) >= 0.95))
		record(t, "emission_vs_c", map[string]any{"bucket": tc.bucket, "message_bytes": tc.size, "ours": ours, "c": c, "ratios": ratios,
			"ratio_median": r, "paced90_over_target": paced90, "paced95_over_unpaced": paced95, "c_cpu_ns": cCPU, "our_cpu_ns": ourCPU,
			"one_call_per_bucket_ratios": single, "one_call_per_bucket_cpu_ns": singleCPU})
	}
}

// viaCReceiver starts the C receiver for msgs messages of size bytes, runs
// send to its endpoint and returns the receiver's message rate.
func viaCReceiver(t *testing.T, progs cref.Programs, size, msgs int, send func(endpoint string) error) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := progs.Receive(ctx, size, msgs, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := send(r.Endpoint); err != nil {
		t.Fatal(err)
	}
	got, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return got.Rate
}

// dgsendResult is the part of dgsend's result the comparison reads.
type dgsendResult struct {
	Achieved     float64  `json:"achieved_rate_tuples_per_s"`
	CPUPerBucket float64  `json:"emission_cpu_ns_per_bucket"`
	LateFraction float64  `json:"late_slot_fraction"`
	Shortfall    uint64   `json:"shortfall_tuples"`
	Errors       []string `json:"errors"`
}

// dgsendTo sends count tuples of synthetic-100 in buckets at rate (0:
// unpaced) to endpoint.
func dgsendTo(endpoint string, bucket int, rate float64, count int, extra ...string) (dgsendResult, error) {
	var res dgsendResult
	args := append([]string{"--connect", endpoint, "--scenario", "synthetic-100", "--threads", "1",
		"--bucket", fmt.Sprint(bucket), "--rate", fmt.Sprintf("%.0f", rate), "--count", fmt.Sprint(count), "--duration", "0",
		"--metrics-addr", "", "--json", "--no-rate-check"}, extra...)
	p, err := Start(filepath.Join(binDir, "dgsend"), args...)
	if err != nil {
		return res, err
	}
	waitErr := p.Wait(2 * time.Minute)
	if err := json.Unmarshal(p.Stdout.Bytes(), &res); err != nil {
		return res, fmt.Errorf("dgsend (%v) output: %w\n%s", waitErr, err, p.Stderr.String())
	}
	if waitErr != nil {
		// The C receiver exits after its count of data messages, so the end
		// marker after them may find it gone: that error alone is not the
		// sender's (the receiver counted every message it measures).
		for _, e := range res.Errors {
			if !strings.Contains(e, "end marker") {
				return res, fmt.Errorf("dgsend: %w: %s", waitErr, strings.Join(res.Errors, "; "))
			}
		}
	}
	return res, nil
}
