package receiver_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sender"
	"github.com/cloudprofiler-go/cp/tsc"
)

var clock = tsc.NewClockHz(mustHz())

func mustHz() float64 {
	hz, err := tsc.Calibrate(50 * time.Millisecond)
	if err != nil {
		panic(err)
	}
	return hz
}

// run starts a receiver on loopback, runs a sender into it and returns both results.
func run(t *testing.T, rc receiver.Config, sc sender.Config) (*receiver.Result, *sender.Result) {
	t.Helper()
	rc.Clock, sc.Clock = clock, clock
	if rc.Endpoints == nil {
		rc.Endpoints = []string{"tcp://127.0.0.1:*"}
	}
	if rc.Schema == "" {
		rc.Schema = sc.Scenario.Schema
	}
	r, err := receiver.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sc.Endpoints = r.BoundEndpoints()
	s, err := sender.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	var rres *receiver.Result
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rres, err = r.Run()
	}()
	sres, serr := s.Run()
	s.Close()
	wg.Wait()
	if serr != nil || err != nil {
		t.Fatal(serr, err)
	}
	return rres, sres
}

func TestLoopbackCountsMatch(t *testing.T) {
	ad, _ := scenarios.Load("ad-event")
	syn, _ := scenarios.Load("synthetic-100")
	for _, tc := range []struct {
		scenario *scenarios.Scenario
		threads  int
		lanes    int
		bucket   int
		rate     float64
		count    uint64
	}{
		{syn, 1, 1, 1, 20000, 5000},
		{ad, 1, 1, 100, 500000, 100000},
		{syn, 2, 2, 10, 200000, 40000},
		{ad, 3, 1, 7, 0, 21000}, // unpaced, several streams into one lane
	} {
		t.Run(fmt.Sprintf("%s/threads=%d/lanes=%d/bucket=%d/rate=%.0f", tc.scenario.Name, tc.threads, tc.lanes, tc.bucket, tc.rate), func(t *testing.T) {
			eps := make([]string, tc.lanes)
			for i := range eps {
				eps[i] = "tcp://127.0.0.1:*"
			}
			rres, sres := run(t, receiver.Config{Endpoints: eps, ExpectStreams: tc.threads},
				sender.Config{Threads: tc.threads, Rate: tc.rate, Count: tc.count, BucketSize: tc.bucket, Scenario: tc.scenario,
					Overflow: sender.Block, Idle: sender.Yield, HWM: 1000})
			if sres.Emitted != tc.count || sres.Shortfall != 0 || len(sres.Errors) > 0 {
				t.Fatalf("sender emitted %d of %d (shortfall %d, errors %v)", sres.Emitted, tc.count, sres.Shortfall, sres.Errors)
			}
			if !rres.Complete || rres.Consumed != tc.count || rres.Received != tc.count || rres.Sent != tc.count || rres.Missing != 0 {
				t.Fatalf("receiver: complete=%v consumed=%d received=%d sent=%d missing=%d reason=%q streams=%+v",
					rres.Complete, rres.Consumed, rres.Received, rres.Sent, rres.Missing, rres.Reason, rres.Streams)
			}
			if len(rres.Streams) != tc.threads || rres.Duplicates != 0 || rres.OutOfSeq != 0 || rres.Malformed != 0 {
				t.Fatalf("streams %d dups %d ooo %d malformed %d", len(rres.Streams), rres.Duplicates, rres.OutOfSeq, rres.Malformed)
			}
			if rres.Latency.Count != tc.count {
				t.Fatalf("latency recorded for %d tuples, want %d", rres.Latency.Count, tc.count)
			}
		})
	}
}
