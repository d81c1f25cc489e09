package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/wire/jsonev"
)

// TestBenchJSONCost: what one JSON event a message costs dgsend. Into
// core NATS on loopback, unpaced, one thread, interleaved, medians of
// repeats(): the emission thread's CPU per message sending ad events as
// JSON against the same events in buckets of one; and dgsend's JSON rate
// against nats.go publishing the same event's bytes in a loop of its
// own (the native client doing the same work, without patching).
func TestBenchJSONCost(t *testing.T) {
	benchOnly(t)
	addr, _ := realserver.NATS(t)
	const n = 500_000
	event := jsonEvent(t)
	var bucketCPU, jsonCPU, ours, native []float64
	for i := 0; i < repeats(); i++ {
		b, err := dgsendTo(fmt.Sprintf("nats://%s/cost.bucket.%d", addr, i), 1, 0, n, "--scenario", "ad-event")
		if err != nil {
			t.Fatal(err)
		}
		j, err := dgsendTo(fmt.Sprintf("nats://%s/cost.json.%d?format=json", addr, i), 1, 0, n, "--scenario", "ad-event")
		if err != nil {
			t.Fatal(err)
		}
		nat, err := nativePublish(addr, fmt.Sprintf("cost.native.%d", i), event, n)
		if err != nil {
			t.Fatal(err)
		}
		bucketCPU, jsonCPU = append(bucketCPU, b.CPUPerBucket), append(jsonCPU, j.CPUPerBucket)
		ours, native = append(ours, j.Achieved), append(native, nat)
	}
	cpuRatio, rateRatio := median(jsonCPU)/median(bucketCPU), median(ours)/median(native)
	t.Logf("JSON COST: %d-byte ad events, one a message, into core NATS: dgsend's CPU %.0f ns a message in JSON, %.0f in a bucket of one (JSON/bucket %.2f); dgsend %s msgs/s, nats.go's own loop %s msgs/s (medians of %d); ours/native %.2f (target >= 0.9) %s",
		len(event), median(jsonCPU), median(bucketCPU), cpuRatio, fmtRates(ours), fmtRates(native), len(ours), rateRatio, verdict(rateRatio >= 0.9))
	record(t, "json_cost", map[string]any{"event_bytes": len(event), "json_cpu_ns": jsonCPU, "bucket_cpu_ns": bucketCPU, "ours_msgs_per_s": ours, "native_msgs_per_s": native, "ratio": rateRatio})
}

// jsonEvent is one ad event as dgsend sends it in JSON.
func jsonEvent(t *testing.T) []byte {
	t.Helper()
	s, err := scenarios.Load("ad-event")
	if err != nil {
		t.Fatal(err)
	}
	enc, err := s.Generate()
	if err != nil {
		t.Fatal(err)
	}
	b, err := scenarios.Templates(enc[:1], 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := scenarios.JSONTemplates(b, scenarios.SchemaAdEvent, jsonev.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	ev[0].Patch(0, 42, time.Now().UnixNano())
	return ev[0].Msg
}

// nativePublish is nats.go publishing msg n times as fast as it can
// (messages/s, to the flush of the last).
func nativePublish(addr, subject string, msg []byte, n int) (float64, error) {
	nc, err := nats.Connect("nats://" + addr)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := nc.Publish(subject, msg); err != nil {
			return 0, err
		}
	}
	if err := nc.Flush(); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
