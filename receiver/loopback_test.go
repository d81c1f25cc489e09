package receiver_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sender"
	sendtally "github.com/cloudprofiler-go/cp/sender/tally"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/trialcfg"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/wire"
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
func run(t *testing.T, rc receiver.Config, sc sender.Config) (*tally.Result, *sendtally.Result) {
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
	var rres *tally.Result
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
				sender.Config{
					Sender:   trialcfg.Sender{Threads: tc.threads, BucketSize: tc.bucket, Overflow: trialcfg.Block, Idle: trialcfg.Yield},
					Rate:     tc.rate,
					Count:    tc.count,
					Scenario: tc.scenario,
					HWM:      1000,
				})
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

// TestSteadyStateDoesNotAllocate runs sender and receiver in this process
// twice, the second time with 20x the tuples: if the emission loop, the
// object factory or the consumer allocated per bucket, the second run would
// allocate ~20x more. What remains is per-run setup and the monitors'
// per-tick work, which depends on time, not on tuples.
func TestSteadyStateDoesNotAllocate(t *testing.T) {
	syn, _ := scenarios.Load("synthetic-100")
	for _, tc := range []struct {
		name   string
		rate   float64
		bucket int
	}{
		{"unpaced", 0, 10},
		// 1 µs slots: batches of several buckets, each sent at its slot
		{"paced", 1e6, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mallocs := func(buckets uint64) uint64 {
				count := buckets * uint64(tc.bucket)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				rres, sres := run(t, receiver.Config{ExpectStreams: 1},
					sender.Config{
						Sender:        trialcfg.Sender{Threads: 1, BucketSize: tc.bucket, Overflow: trialcfg.Block, Idle: trialcfg.Sleep},
						Rate:          tc.rate,
						Count:         count,
						Scenario:      syn,
						HWM:           1000,
						SkipRateCheck: true,
					})
				runtime.ReadMemStats(&after)
				if !rres.Complete || rres.Consumed != count || sres.Emitted != count {
					t.Fatalf("run of %d: consumed %d emitted %d", count, rres.Consumed, sres.Emitted)
				}
				return after.Mallocs - before.Mallocs
			}
			small := mallocs(2_000)
			large := mallocs(40_000)
			t.Logf("allocations: %d for 2,000 buckets, %d for 40,000 buckets", small, large)
			// 38,000 more buckets; allow a few thousand for time-driven work.
			if large > small+3000 {
				t.Fatalf("allocations grow with the number of buckets: %d -> %d", small, large)
			}
		})
	}
}

// TestProfiledRun instruments sender and receiver with buffered channels:
// every tuple appears once in emit, receive, deserialized and consumed, and
// its TSC stamps are in that order (one host, one TSC).
func TestProfiledRun(t *testing.T) {
	dir := t.TempDir()
	h, err := profiler.ParseHandlers([]byte("default: {handler: buffered, path: \""+filepath.Join(dir, "{name}.log")+"\", block_size: 4096}\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	prof := profiler.New(time.Hour)
	syn, _ := scenarios.Load("synthetic-100")
	const count = 50_000
	rres, sres := run(t, receiver.Config{ExpectStreams: 2, Profile: prof, Handlers: h},
		sender.Config{Sender: trialcfg.Sender{Threads: 2, BucketSize: 10, Overflow: trialcfg.Block, Idle: trialcfg.Sleep}, Rate: 0, Count: count, Scenario: syn, HWM: 1000, Profile: prof, Handlers: h})
	if err := prof.Close(); err != nil {
		t.Fatal(err)
	}
	if !rres.Complete || sres.Emitted != count {
		t.Fatalf("run: complete=%v emitted=%d", rres.Complete, sres.Emitted)
	}
	stamps := map[string]map[uint64]uint64{}
	for _, name := range []string{"emit.0", "emit.1", "receive.0", "deserialized.0", "consumed"} {
		f, err := os.Open(filepath.Join(dir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		point := strings.Split(name, ".")[0]
		if stamps[point] == nil {
			stamps[point] = map[uint64]uint64{}
		}
		if _, err := profiler.ReadBlocks(f, func(recs []profiler.Record) error {
			for _, r := range recs {
				if _, dup := stamps[point][r.ID]; dup {
					t.Fatalf("%s: tuple %x logged twice", name, r.ID)
				}
				stamps[point][r.ID] = r.TSC
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	for _, point := range []string{"emit", "receive", "deserialized", "consumed"} {
		if len(stamps[point]) != count {
			t.Fatalf("%s logged %d tuples, want %d", point, len(stamps[point]), count)
		}
	}
	for id, e := range stamps["emit"] {
		r, d, c := stamps["receive"][id], stamps["deserialized"][id], stamps["consumed"][id]
		if !(e <= r && r <= d && d <= c) {
			t.Fatalf("tuple %x: emit %d, receive %d, deserialized %d, consumed %d out of order", id, e, r, d, c)
		}
		// Every point sees a bucket (10 consecutive ids) at one instant:
		// the consumer has no per-tuple work, so it stamps the bucket once.
		for _, point := range []string{"emit", "receive", "deserialized", "consumed"} {
			_, seq := wire.SplitTupleID(id)
			if first := id - seq%10; stamps[point][id] != stamps[point][first] {
				t.Fatalf("%s: tuple %x stamped %d, its bucket's first %d", point, id, stamps[point][id], stamps[point][first])
			}
		}
	}
}

// TestPacedRunKeepsItsWindows: a paced run reports one window per full
// second, each close to the rate, and a late-slot fraction that is the
// late slots over the slots measured (bounds generous: the machine is
// shared; the figures themselves are in BENCHMARKS.md).
func TestPacedRunKeepsItsWindows(t *testing.T) {
	syn, _ := scenarios.Load("synthetic-100")
	const rate = 20000.0
	_, sres := run(t, receiver.Config{ExpectStreams: 1},
		sender.Config{
			Sender:        trialcfg.Sender{Threads: 1, BucketSize: 10, Overflow: trialcfg.Block, Idle: trialcfg.Sleep},
			Rate:          rate,
			Duration:      2500 * time.Millisecond,
			Scenario:      syn,
			LateThreshold: time.Millisecond,
		})
	if len(sres.Windows) != 2 {
		t.Fatalf("%d full windows in a 2.5 s run: %v", len(sres.Windows), sres.Windows)
	}
	for i, w := range sres.Windows {
		if dev := (float64(w) - rate) / rate; dev > 0.10 || dev < -0.10 {
			t.Errorf("window %d: %d tuples, %.1f%% off %v/s", i, w, 100*dev, rate)
		}
	}
	if sres.WindowMaxDev > 0.10 {
		t.Errorf("window_max_deviation %.3f", sres.WindowMaxDev)
	}
	slots := sres.ScheduledTups / 10
	if sres.LateSlots > slots || sres.LateFraction < float64(sres.LateSlots)/float64(slots) || sres.LateFraction > 0.5 {
		t.Errorf("late slots %d of %d scheduled, fraction %.3f", sres.LateSlots, slots, sres.LateFraction)
	}
	// 5000 slots in 2.5 s; the one due at the very end may fall either side.
	if sres.Shortfall != 0 || sres.Emitted < uint64(rate*2.5) || sres.Emitted > uint64(rate*2.5)+10 || sres.Emitted != sres.ScheduledTups {
		t.Errorf("emitted %d of %d scheduled (shortfall %d), want %d", sres.Emitted, sres.ScheduledTups, sres.Shortfall, uint64(rate*2.5))
	}
}

// TestActivityChannels: with stage accounting and a profile, every stage
// logs its state changes on "activity.<stage>" (issue #15's activity
// events): in time order, states of its kind, items that only grow, and
// the consumer's last change carries every bucket it consumed.
func TestActivityChannels(t *testing.T) {
	dir := t.TempDir()
	h, err := profiler.ParseHandlers([]byte("default: {handler: buffered, path: \""+filepath.Join(dir, "{name}.log")+"\", block_size: 4096}\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	prof := profiler.New(time.Hour)
	syn, _ := scenarios.Load("synthetic-100")
	rres, sres := run(t, receiver.Config{Agent: trialcfg.Agent{StagePeriod: stage.DefaultPeriod}, ExpectStreams: 1, Profile: prof, Handlers: h},
		sender.Config{
			Agent:  trialcfg.Agent{StagePeriod: stage.DefaultPeriod},
			Sender: trialcfg.Sender{Threads: 1, BucketSize: 10, Overflow: trialcfg.Block, Idle: trialcfg.Sleep},
			// 500 µs between buckets: the thread waits between them even
			// on a host the race run loads (at 50 µs it was behind from
			// its start there, and logged 5 changes)
			Rate:     20_000,
			Count:    20_000,
			Scenario: syn,
			HWM:      1000,
			Profile:  prof,
			Handlers: h,
		})
	if err := prof.Close(); err != nil {
		t.Fatal(err)
	}
	if !rres.Complete || sres.Emitted != 20_000 {
		t.Fatalf("run: complete=%v emitted=%d", rres.Complete, sres.Emitted)
	}
	totals := map[string]stage.Total{}
	for _, tot := range append(rres.Stages, sres.Stages...) {
		totals[tot.Name] = tot
	}
	for _, st := range []string{"thread0", "lane0", "consumer"} {
		f, err := os.Open(filepath.Join(dir, "activity."+st+".log"))
		if err != nil {
			t.Fatal(err)
		}
		var prevTSC, prevItems, lastItems uint64
		n, seen := 0, map[int]bool{}
		if _, err := profiler.ReadBlocks(f, func(recs []profiler.Record) error {
			for _, r := range recs {
				state, items := stage.ActivityOf(r.ID)
				if r.TSC < prevTSC || items < prevItems || state >= len(stage.States(totals[st].Kind)) {
					t.Fatalf("%s record %d: state %d, %d items at %d after %d items at %d", st, n, state, items, r.TSC, prevItems, prevTSC)
				}
				prevTSC, prevItems, lastItems = r.TSC, items, items
				seen[state] = true
				n++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if n < 10 || len(seen) < 2 {
			t.Errorf("%s: %d changes logged, %d states seen: want the stage's activity", st, n, len(seen))
		}
		if st == "consumer" && lastItems != totals[st].Items {
			t.Errorf("consumer's last change carries %d items, its total is %d", lastItems, totals[st].Items)
		}
	}
}
