package e2e

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nats-io/nats.go"

	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/wire/jsonev"
)

// TestBenchJSONCost: what one JSON event a message costs dgsend. Into
// core NATS on loopback, unpaced, one thread, interleaved, medians of
// repeats(): the emission thread's CPU per message sending ad events as
// JSON against the same events in buckets of one; and dgsend against
// nats.go's own publish loop doing the same work, publishing the same
// messages: each event with an id and the time of its making, written
// into its digits as a careful native generator would (strconv, no
// allocation). The bare loop, publishing one event's bytes over and over,
// is measured beside it as the stricter reference. Rates are wall clock
// (they move 10-15% here); the CPU per message, on the publishing thread
// alone, is the steadier figure.
func TestBenchJSONCost(t *testing.T) {
	benchOnly(t)
	addr, _ := realserver.NATS(t)
	const n = 1_000_000
	event := jsonEvent(t)
	var bucketCPU, jsonCPU, ours []float64
	var same, bare nativeRun
	for i := 0; i < repeats(); i++ {
		b, err := dgsendTo(fmt.Sprintf("nats://%s/cost.bucket.%d", addr, i), 1, 0, n, "--scenario", "ad-event")
		if err != nil {
			t.Fatal(err)
		}
		j, err := dgsendTo(fmt.Sprintf("nats://%s/cost.json.%d?format=json", addr, i), 1, 0, n, "--scenario", "ad-event")
		if err != nil {
			t.Fatal(err)
		}
		if err := same.publish(addr, fmt.Sprintf("cost.same.%d", i), event, n, true); err != nil {
			t.Fatal(err)
		}
		if err := bare.publish(addr, fmt.Sprintf("cost.bare.%d", i), event, n, false); err != nil {
			t.Fatal(err)
		}
		bucketCPU, jsonCPU = append(bucketCPU, b.CPUPerBucket), append(jsonCPU, j.CPUPerBucket)
		ours = append(ours, j.Achieved)
	}
	cpuRatio := median(jsonCPU) / median(bucketCPU)
	rateSame, rateBare := median(ours)/median(same.rates), median(ours)/median(bare.rates)
	cpuSame, cpuBare := median(same.cpu)/median(jsonCPU), median(bare.cpu)/median(jsonCPU)
	t.Logf("JSON COST: %d-byte ad events, one a message, into core NATS (medians of %d): dgsend's CPU %.0f ns a message in JSON, %.0f in a bucket of one (JSON/bucket %.2f)",
		len(event), len(ours), median(jsonCPU), median(bucketCPU), cpuRatio)
	t.Logf("JSON COST: against nats.go publishing the same messages (an id and a time written into each): dgsend %s msgs/s, native %s msgs/s, ours/native %.2f; the publishing thread's CPU a message %.0f ns ours, %.0f native, native/ours %.2f (target >= 0.9) %s",
		fmtRates(ours), fmtRates(same.rates), rateSame, median(jsonCPU), median(same.cpu), cpuSame, verdict(rateSame >= 0.9 && cpuSame >= 0.9))
	t.Logf("JSON COST: against nats.go's bare loop (one event's bytes over and over, no id or time written): native %s msgs/s, ours/native %.2f; its thread's CPU a message %.0f ns, native/ours %.2f",
		fmtRates(bare.rates), rateBare, median(bare.cpu), cpuBare)
	record(t, "json_cost", map[string]any{"event_bytes": len(event), "json_cpu_ns": jsonCPU, "bucket_cpu_ns": bucketCPU,
		"ours_msgs_per_s": ours, "native_same_msgs_per_s": same.rates, "native_same_cpu_ns": same.cpu,
		"native_bare_msgs_per_s": bare.rates, "native_bare_cpu_ns": bare.cpu, "ratio_same": rateSame, "cpu_ratio_same": cpuSame, "ratio_bare": rateBare})
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

// nativeRun collects nats.go's own publish loop's runs: messages/s to the
// flush of the last, and the publishing thread's CPU a message (ns).
type nativeRun struct{ rates, cpu []float64 }

// publish runs nats.go publishing n copies of event as fast as it can;
// with stamp, each copy first gets its own id and the time of its making
// in the digits of cp_id, cp_intended_ns and event_time.
func (r *nativeRun) publish(addr, subject string, event []byte, n int, stamp bool) error {
	nc, err := nats.Connect("nats://" + addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	msg := append([]byte(nil), event...)
	fields := []digitField{{name: "cp_id"}, {name: "cp_intended_ns"}, {name: "event_time"}}
	for i := range fields {
		if err := fields[i].find(msg); err != nil {
			return err
		}
	}
	// One locked thread: its CPU is the loop's alone (nats.go's flusher
	// runs elsewhere, as beside dgsend's emission thread).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var ru0, ru1 unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru0)
	start := time.Now()
	var scratch [20]byte
	for i := 0; i < n; i++ {
		if stamp {
			now := time.Now().UnixNano()
			fields[0].put(msg, strconv.AppendUint(scratch[:0], uint64(i), 10))
			fields[1].put(msg, strconv.AppendInt(scratch[:0], now, 10))
			fields[2].put(msg, strconv.AppendInt(scratch[:0], now/1e6, 10))
		}
		if err := nc.Publish(subject, msg); err != nil {
			return err
		}
	}
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru1)
	if err := nc.Flush(); err != nil {
		return err
	}
	r.rates = append(r.rates, float64(n)/time.Since(start).Seconds())
	cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
	r.cpu = append(r.cpu, float64(cpu)/float64(n))
	return nil
}

// digitField is where a string of digits of a JSON event lies.
type digitField struct {
	name     string
	off, end int
}

// find locates the field's quoted digits in msg.
func (f *digitField) find(msg []byte) error {
	key := []byte(`"` + f.name + `":"`)
	i := bytes.Index(msg, key)
	if i < 0 {
		return fmt.Errorf("no field %q in %s", f.name, msg)
	}
	f.off = i + len(key)
	f.end = f.off + bytes.IndexByte(msg[f.off:], '"')
	return nil
}

// put writes digits right-aligned into the field, zeros before them.
func (f *digitField) put(msg, digits []byte) {
	w := f.end - f.off
	pad := w - len(digits)
	for i := 0; i < pad; i++ {
		msg[f.off+i] = '0'
	}
	copy(msg[f.off+pad:f.end], digits)
}
