package receiver_test

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"

	"github.com/cloudprofiler-go/cp/internal/testkit/wirecorpus"
	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/trialcfg"
)

// TestWireConformance runs the conformance corpus (testdata/wire): every
// rule of docs/wire.md as a crafted message, the malformed counter it must
// increment and the stream state after it.
func TestWireConformance(t *testing.T) {
	c, err := wirecorpus.Load(filepath.Join("..", wirecorpus.File))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range c.Cases {
		t.Run(strings.ReplaceAll(tc.Name, " ", "_"), func(t *testing.T) {
			got := runCase(t, tc)
			for _, d := range tc.Check(got) {
				t.Errorf("%s (rule: %s): %s", tc.Name, tc.Rule, d)
			}
		})
	}
}

// runCase sends a case's messages to a receiver on loopback and returns
// its accounting once everything sent has been taken in.
func runCase(t *testing.T, tc wirecorpus.Case) wirecorpus.Got {
	parts, err := tc.Parts()
	if err != nil {
		t.Fatal(err)
	}
	r, err := receiver.New(receiver.Config{
		Receiver:  trialcfg.Receiver{Schema: tc.Schema, EndTimeout: 5 * time.Second},
		Endpoints: []string{"tcp://127.0.0.1:*"},
		Clock:     clock,
		Settle:    50 * time.Millisecond,
		Duration:  10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var res *tally.Result
	var rerr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); res, rerr = r.Run() }()

	ctx, err := zmq.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	push, err := ctx.NewSocket(zmq.PUSH)
	if err != nil {
		t.Fatal(err)
	}
	if err := push.Connect(r.BoundEndpoints()[0]); err != nil {
		t.Fatal(err)
	}
	sent := 0
	for _, m := range parts {
		for i, p := range m {
			flag := zmq.Flag(0)
			if i < len(m)-1 {
				flag = zmq.SNDMORE
			}
			if _, err := push.SendBytes(p, flag); err != nil {
				t.Fatal(err)
			}
			sent++
		}
	}
	// Everything sent has been taken in (accepted or refused), and what was
	// accepted has been consumed: then stop and read the accounting.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		p := r.Snapshot()
		if int(p.Messages+p.Malformed) >= sent && p.Backlog == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	r.Stop()
	wg.Wait()
	_ = push.SetLinger(0) // nothing of this case may reach the next one's receiver
	push.Close()
	ctx.Term()
	if rerr != nil {
		t.Fatal(rerr)
	}
	return wirecorpus.GotFrom(res)
}

// TestGivesUpWithoutEndMarker: a stream whose end marker never comes ends
// the run after --end-timeout without data, incomplete, saying so.
func TestGivesUpWithoutEndMarker(t *testing.T) {
	r, err := receiver.New(receiver.Config{
		Receiver:  trialcfg.Receiver{Schema: "synthetic", EndTimeout: 300 * time.Millisecond},
		Endpoints: []string{"tcp://127.0.0.1:*"},
		Clock:     clock,
		Duration:  20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := wirecorpus.Load(filepath.Join("..", wirecorpus.File))
	if err != nil {
		t.Fatal(err)
	}
	var parts [][][]byte
	for _, tc := range c.Cases {
		if tc.Name == "no end marker" {
			parts, _ = tc.Parts()
		}
	}
	if parts == nil {
		t.Fatal("the corpus has no case \"no end marker\"")
	}
	ctx, _ := zmq.NewContext()
	defer ctx.Term()
	push, _ := ctx.NewSocket(zmq.PUSH)
	defer push.Close()
	_ = push.SetLinger(0)
	if err := push.Connect(r.BoundEndpoints()[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := push.SendBytes(parts[0][0], 0); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	res, err := r.Run()
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(started); took > 5*time.Second {
		t.Errorf("gave up after %v", took)
	}
	if res.Complete || !strings.Contains(res.Reason, "gave up waiting for end markers") || len(res.Streams) != 1 ||
		!strings.Contains(res.Streams[0].Status, "no end marker") || res.Streams[0].ConsumedTuples != 2 {
		t.Fatalf("result: complete %v, reason %q, streams %+v", res.Complete, res.Reason, res.Streams)
	}
}
