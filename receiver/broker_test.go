package receiver_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/driver/kafka"
	"github.com/cloudprofiler-go/cp/driver/nats"
	"github.com/cloudprofiler-go/cp/driver/redis"
	"github.com/cloudprofiler-go/cp/trialcfg"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sender"
)

// brokers are every driver, as dgsend and dgrecv register them.
var brokers = driver.NewRegistry(nats.Driver{}, redis.Driver{}, kafka.Driver{})

// TestThroughABroker: a sender publishes into NATS (core and JetStream)
// and a receiver consumes from it; every tuple is accounted for by
// sequence, as over ZeroMQ, the end markers having travelled through the
// broker, and each tuple's latency is measured from its intended time.
func TestThroughABroker(t *testing.T) {
	addr := realserver.EmbeddedNATS(t)
	fake, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	kafkaAddr := fake.ListenAddrs()[0]
	syn, _ := scenarios.Load("synthetic-100")
	n := 0 // each case its own subjects
	for _, tc := range []struct {
		driver         string
		threads, lanes int
		bucket         int
		rate           float64
		count          uint64
	}{
		{"nats", 1, 1, 10, 100_000, 50_000},
		{"nats", 2, 2, 100, 0, 200_000},
		{"jetstream", 2, 1, 10, 100_000, 40_000},
		{"jetstream", 1, 1, 100, 0, 100_000},
		{"kafka", 2, 2, 10, 100_000, 40_000},
	} {
		n++
		t.Run(fmt.Sprintf("%s/threads=%d/lanes=%d/bucket=%d/rate=%.0f", tc.driver, tc.threads, tc.lanes, tc.bucket, tc.rate), func(t *testing.T) {
			eps := make([]string, tc.lanes)
			for i := range eps {
				server := addr
				if tc.driver == "kafka" {
					server = kafkaAddr
				}
				eps[i] = fmt.Sprintf("%s://%s/cp.case%d.lane%d", tc.driver, server, n, i)
			}
			rres, sres := run(t, receiver.Config{Endpoints: eps, ExpectStreams: tc.threads, Brokers: brokers},
				sender.Config{
					Sender:        trialcfg.Sender{Threads: tc.threads, BucketSize: tc.bucket, Overflow: trialcfg.Block, Idle: trialcfg.Sleep},
					Brokers:       brokers,
					Rate:          tc.rate,
					Count:         tc.count,
					Scenario:      syn,
					SkipRateCheck: true,
				})
			if sres.Emitted != tc.count || sres.Shortfall != 0 || len(sres.Errors) > 0 {
				t.Fatalf("sender emitted %d of %d (shortfall %d, errors %v)", sres.Emitted, tc.count, sres.Shortfall, sres.Errors)
			}
			for _, l := range sres.Links {
				if p := l.Problem(); p != "" {
					t.Errorf("link: %s", p)
				}
			}
			if !rres.Complete || rres.Consumed != tc.count || rres.Sent != tc.count || rres.Missing != 0 {
				t.Fatalf("receiver: complete=%v consumed=%d sent=%d missing=%d reason=%q", rres.Complete, rres.Consumed, rres.Sent, rres.Missing, rres.Reason)
			}
			if rres.Duplicates != 0 || rres.OutOfSeq != 0 || rres.Malformed != 0 || rres.Latency.Count != tc.count {
				t.Fatalf("dups %d ooo %d malformed %d latencies %d", rres.Duplicates, rres.OutOfSeq, rres.Malformed, rres.Latency.Count)
			}
		})
	}
}

// TestBrokerEndpointsAreChecked: a bad broker endpoint is refused before
// anything connects, with the reason.
func TestBrokerEndpointsAreChecked(t *testing.T) {
	_, err := receiver.New(receiver.Config{Receiver: trialcfg.Receiver{Schema: "synthetic"}, Endpoints: []string{"jetstream://127.0.0.1:1/cp?acks=all"}})
	if err == nil || !strings.Contains(err.Error(), "acks=all") {
		t.Errorf("receiver: %v", err)
	}
	_, err = sender.New(sender.Config{Sender: trialcfg.Sender{Threads: 1, BucketSize: 1}, Endpoints: []string{"nats://u:p@127.0.0.1:1/cp"}, Count: 1})
	if err == nil || !strings.Contains(err.Error(), "credentials") || strings.Contains(err.Error(), "u:p") {
		t.Errorf("sender: %v", err)
	}
}

// TestAReceiverWithNoDataDoesNotWaitForEver: a run without a duration
// ends when its broker's connection dies before any message (every lane
// stopped, the broker's words named), and, with no sender at all, once
// the end timeout has passed since the start.
func TestAReceiverWithNoDataDoesNotWaitForEver(t *testing.T) {
	addr, stop := realserver.NATS(t)
	for _, tc := range []struct {
		name     string
		endpoint string
		kill     bool
		reason   string
	}{
		{"the broker dies before any data", "nats://" + addr + "/nodata", true, "every lane stopped receiving"},
		{"no sender ever comes", "tcp://127.0.0.1:0", false, "no data within 1s of the start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := receiver.New(receiver.Config{Receiver: trialcfg.Receiver{Schema: "raw", EndTimeout: time.Second},
				Endpoints: []string{tc.endpoint}, Brokers: brokers, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if tc.kill {
				time.AfterFunc(300*time.Millisecond, stop)
			}
			start := time.Now()
			res, err := r.Run()
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); !strings.Contains(res.Reason, tc.reason) || took > 15*time.Second {
				t.Errorf("ended after %v: %q; want %q", took, res.Reason, tc.reason)
			}
		})
	}
}
