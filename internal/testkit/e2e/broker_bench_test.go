package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"

	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
	"github.com/cloudprofiler-go/cp/scenarios"
)

// nativeNATS is NATS's own throughput for msgs messages of size bytes
// through core NATS with the server's Go client: one publisher as fast as
// it can, one subscriber counting, from the first publish to the last
// receive (messages/s).
func nativeNATS(addr, subject string, size, msgs int) (float64, error) {
	sub, err := nats.Connect("nats://" + addr)
	if err != nil {
		return 0, err
	}
	defer sub.Close()
	pub, err := nats.Connect("nats://" + addr)
	if err != nil {
		return 0, err
	}
	defer pub.Close()
	var got atomic.Int64
	done := make(chan struct{})
	s, err := sub.Subscribe(subject, func(*nats.Msg) {
		if got.Add(1) == int64(msgs) {
			close(done)
		}
	})
	if err != nil {
		return 0, err
	}
	_ = s.SetPendingLimits(-1, -1)
	if err := sub.Flush(); err != nil {
		return 0, err
	}
	msg := make([]byte, size)
	start := time.Now()
	for i := 0; i < msgs; i++ {
		if err := pub.Publish(subject, msg); err != nil {
			return 0, err
		}
	}
	if err := pub.Flush(); err != nil {
		return 0, err
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		return 0, fmt.Errorf("native: %d of %d messages arrived", got.Load(), msgs)
	}
	return float64(msgs) / time.Since(start).Seconds(), nil
}

// oursNATS is the harness's: dgsend unpaced into core NATS and dgrecv
// consuming it (headers only, --drain, as the native subscriber only
// counts), in messages/s from dgrecv's first to last tuple.
func oursNATS(t *testing.T, addr, subject string, bucket, msgs int) (float64, int, error) {
	ep := "nats://" + addr + "/" + subject
	out := filepath.Join(t.TempDir(), "recv.json")
	recv, err := Start(filepath.Join(binDir, "dgrecv"), "--connect", ep, "--drain", "--schema", "synthetic", "--expect-streams", "1", "-o", out, "--metrics-addr", "")
	if err != nil {
		return 0, 0, err
	}
	time.Sleep(300 * time.Millisecond) // subscribed before the first publish
	res, err := dgsendTo(ep, bucket, 0, bucket*msgs)
	if err != nil {
		return 0, 0, err
	}
	if werr := recv.Wait(time.Minute); werr != nil {
		return 0, 0, fmt.Errorf("dgrecv: %v\n%s", werr, recv.Stderr.String())
	}
	var r struct {
		Rate     float64 `json:"consume_rate_tuples_per_s"`
		Received uint64  `json:"received_tuples"`
		MaxMsg   int     `json:"max_message_bytes"`
	}
	b, err := readAll(out)
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil || r.Received != uint64(bucket*msgs) {
		return 0, 0, fmt.Errorf("dgrecv result: %v (received %d of %d; dgsend errors %v)", err, r.Received, bucket*msgs, res.Errors)
	}
	return r.Rate / float64(bucket), 0, nil
}

// TestBenchBrokerVsNative: is the harness what limits a broker's answer?
// Core NATS on loopback, the same message size (a bucket of 100 synthetic
// tuples, or one), ours ÷ NATS's own client, interleaved, medians of
// repeats(). A million small messages: 300 k took 0.4 s, and runs that
// short moved by a third from one to the next.
func TestBenchBrokerVsNative(t *testing.T) {
	benchOnly(t)
	addr, _ := realserver.NATS(t)
	for _, tc := range []struct{ bucket, msgs int }{{100, 50_000}, {1, 1_000_000}} {
		size := msgBytes(t, tc.bucket)
		var native, ours []float64
		for i := 0; i < repeats(); i++ {
			n, err := nativeNATS(addr, fmt.Sprintf("native.%d.%d", tc.bucket, i), size, tc.msgs)
			if err != nil {
				t.Fatal(err)
			}
			o, _, err := oursNATS(t, addr, fmt.Sprintf("ours.%d.%d", tc.bucket, i), tc.bucket, tc.msgs)
			if err != nil {
				t.Fatal(err)
			}
			native, ours = append(native, n), append(ours, o)
		}
		ratio := median(ours) / median(native)
		t.Logf("BROKER VS NATIVE: core NATS, %d-byte messages (buckets of %d): ours %s msgs/s, nats.go %s msgs/s (medians of %d); ours/native %.2f (target >= 0.9) %s",
			size, tc.bucket, fmtRates(ours), fmtRates(native), len(ours), ratio, verdict(ratio >= 0.9))
		record(t, "broker_vs_native", map[string]any{"message_bytes": size, "bucket": tc.bucket, "ours_msgs_per_s": ours, "native_msgs_per_s": native, "ratio": ratio})
	}
}

func readAll(path string) ([]byte, error) { return os.ReadFile(path) }

// msgBytes is the size of one message of bucket synthetic-100 tuples.
func msgBytes(t *testing.T, bucket int) int {
	t.Helper()
	sc, err := scenarios.Load("synthetic-100")
	if err != nil {
		t.Fatal(err)
	}
	enc, err := sc.Generate()
	if err != nil {
		t.Fatal(err)
	}
	tpls, err := scenarios.Templates(enc, 0, bucket)
	if err != nil {
		t.Fatal(err)
	}
	return len(tpls[0].Msg)
}

// redisBenchmarkXADD is redis-benchmark's own XADD rate (requests/s):
// one connection, pipelines of 64, values of size bytes.
func redisBenchmarkXADD(t *testing.T, port string, size, n int) float64 {
	t.Helper()
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		t.Skip("redis-benchmark is not installed (Debian redis-tools)")
	}
	out, err := exec.Command(bin, "-p", port, "-c", "1", "-P", "64", "-n", fmt.Sprint(n), "--csv",
		"XADD", "benchkey", "*", "d", strings.Repeat("x", size)).Output()
	if err != nil {
		t.Fatalf("redis-benchmark: %v", err)
	}
	// "test","rps",...: the rps of the one data line
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	fields := strings.Split(lines[len(lines)-1], ",")
	rps, err := strconv.ParseFloat(strings.Trim(fields[1], `"`), 64)
	if err != nil {
		t.Fatalf("redis-benchmark output %q: %v", out, err)
	}
	return rps
}

// TestBenchRedisVsNative: dgsend's XADD rate into Redis Streams (unpaced,
// no consumer) against redis-benchmark's XADD at the same value size, one
// connection each, interleaved, medians of repeats().
func TestBenchRedisVsNative(t *testing.T) {
	benchOnly(t)
	addr, _ := realserver.Redis(t)
	_, port, _ := net.SplitHostPort(addr)
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	clear := func(keys ...string) { // an unbounded stream of 500 MB slows the next run
		if err := rc.Del(context.Background(), keys...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ bucket, msgs int }{{100, 50_000}, {1, 300_000}} {
		size := msgBytes(t, tc.bucket)
		var native, ours []float64
		for i := 0; i < repeats(); i++ {
			native = append(native, redisBenchmarkXADD(t, port, size, tc.msgs))
			clear("benchkey")
			key := fmt.Sprintf("ours.%d.%d", tc.bucket, i)
			res, err := dgsendTo(fmt.Sprintf("redis://%s/%s", addr, key), tc.bucket, 0, tc.bucket*tc.msgs)
			if err != nil {
				t.Fatal(err)
			}
			clear(key)
			ours = append(ours, res.Achieved/float64(tc.bucket))
		}
		ratio := median(ours) / median(native)
		t.Logf("REDIS VS NATIVE: XADD of %d-byte values (buckets of %d): ours %s msgs/s, redis-benchmark %s (medians of %d); ours/native %.2f (target >= 0.9) %s",
			size, tc.bucket, fmtRates(ours), fmtRates(native), len(ours), ratio, verdict(ratio >= 0.9))
		record(t, "redis_vs_native", map[string]any{"message_bytes": size, "bucket": tc.bucket, "ours_msgs_per_s": ours, "native_msgs_per_s": native, "ratio": ratio})
	}
}
