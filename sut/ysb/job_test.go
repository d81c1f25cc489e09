package ysb_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cloudprofiler-go/cp/dataflow"
	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/driver/kafka"
	"github.com/cloudprofiler-go/cp/driver/nats"
	"github.com/cloudprofiler-go/cp/driver/redis"
	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/stage"
	cpbenthos "github.com/cloudprofiler-go/cp/sut/benthos"
	"github.com/cloudprofiler-go/cp/sut/ysb"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/wire"
)

var brokers = driver.NewRegistry(nats.Driver{}, redis.Driver{}, kafka.Driver{})

// windowKey is one campaign's window.
type windowKey struct {
	campaign string
	endMs    int64
}

// counted is what a window must say: its count and the identity of the
// latest event it counted.
type counted struct {
	count    int64
	id       uint64
	intended int64
}

// events makes n ad events of stream 1 in buckets of size, their intended
// times spaced by gap from start (event time = intended time, as dgsend
// writes it), and what YSB must count of them: views, by campaign and
// window of 1 s.
func events(t *testing.T, s *scenarios.Scenario, n, size int, start time.Time, gap time.Duration) ([][]byte, map[windowKey]counted) {
	t.Helper()
	pool, err := s.Generate()
	if err != nil {
		t.Fatal(err)
	}
	table, err := ysb.Campaigns(s)
	if err != nil {
		t.Fatal(err)
	}
	decode, _ := scenarios.DecoderFor(scenarios.SchemaAdEvent)
	want := map[windowKey]counted{}
	var buckets [][]byte
	const stream = 1
	for i := 0; i < n; i += size {
		b := make([]byte, wire.HeaderSize)
		count := min(size, n-i)
		for j := i; j < i+count; j++ {
			e := pool[j%len(pool)]
			tuple := append([]byte(nil), e.Bytes...)
			intended := start.Add(time.Duration(j) * gap).UnixNano()
			id := wire.TupleID(stream, uint64(j))
			wire.PatchFixed(tuple, e.IDOff, id)
			wire.PatchFixed(tuple, e.IntendedOff, uint64(intended))
			wire.PatchFixed(tuple, e.EventTimeOff, uint64(intended/1e6))
			var tp scenarios.Tuple
			if _, err := decode(tuple, 0, &tp); err != nil {
				t.Fatal(err)
			}
			if string(tp.Ad.EventType) == "view" {
				k := windowKey{table[hex.EncodeToString(tp.Ad.AdID)], (tp.Ad.EventTimeMs/1000 + 1) * 1000}
				c := want[k]
				want[k] = counted{c.count + 1, max(c.id, id), max(c.intended, intended)}
			}
			b = append(b, tuple...)
		}
		wire.PutHeader(b, wire.Header{Kind: wire.KindData, Stream: stream, Seq: uint64(len(buckets)), Count: uint32(count), BodyLen: uint32(len(b) - wire.HeaderSize)})
		buckets = append(buckets, b)
	}
	return buckets, want
}

// readWindows reads the job's output until the counts add up to total or
// the wait ends.
func readWindows(t *testing.T, out driver.Endpoint, total int64, wait time.Duration) map[windowKey]counted {
	t.Helper()
	c, err := brokers.NewConsumer(out)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := map[windowKey]counted{}
	var sum int64
	for deadline := time.Now().Add(wait); sum < total && time.Now().Before(deadline); {
		msg, err := c.Next(200 * time.Millisecond)
		if errors.Is(err, driver.ErrTimeout) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		err = scenarios.EachTuple(msg, scenarios.DecodeWindow, func(tp *scenarios.Tuple) {
			k := windowKey{string(tp.Window.Key), tp.Window.EndMs}
			if _, dup := got[k]; dup {
				t.Errorf("window %v written twice", k)
			}
			got[k] = counted{tp.Window.Count, tp.ID, tp.IntendedNs}
			sum += tp.Window.Count
		})
		if err != nil {
			t.Fatalf("a window bucket: %v", err)
		}
	}
	return got
}

// TestYSBCountsEveryViewOnce: the YSB job on the engine, between two
// JetStream subjects, with its campaigns in a real Redis, counts exactly
// the views the harness counts itself, per campaign and window, and each
// window carries the identity of the latest event it counted. Its own
// operators account themselves (docs/dataflow.md): the join feeds the
// window, each processed every view, and each was busy for some of it.
func TestYSBCountsEveryViewOnce(t *testing.T) {
	natsAddr := realserver.EmbeddedNATS(t)
	redisAddr, _ := realserver.Redis(t)
	s, err := scenarios.Load("ad-event")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := ysb.LoadCampaigns(ctx, redisAddr, s); err != nil {
		t.Fatal(err)
	}
	cfg := ysb.Defaults()
	cfg.Input = fmt.Sprintf("jetstream://%s/ysb.in?group=ysb", natsAddr)
	cfg.Output = fmt.Sprintf("jetstream://%s/ysb.out", natsAddr)
	cfg.Redis = redisAddr
	cfg.Lateness = 500 * time.Millisecond
	in, _ := driver.Parse(cfg.Input)
	out, _ := driver.Parse(cfg.Output + "?group=cp")
	for _, e := range []driver.Endpoint{in, out} {
		if err := brokers.Ensure(e); err != nil {
			t.Fatal(err)
		}
	}
	clock, err := tsc.NewClock(20 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	df, err := dataflow.New(dataflow.Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	job, err := ysb.Build(brokers, cfg, ysb.Hooks{Operators: df})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx) }()

	// 20,000 events over 2 s, starting at the next whole second: three windows
	start := time.Now().Truncate(time.Second).Add(time.Second)
	buckets, want := events(t, s, 20000, 100, start, 100*time.Microsecond)
	p, err := brokers.NewProducer(in)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, b := range buckets {
		for errors.Is(p.Publish(b), driver.ErrFull) {
			time.Sleep(time.Millisecond)
		}
	}
	if err := p.Flush(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	var views int64
	for _, c := range want {
		views += c.count
	}
	got := readWindows(t, out, views, 20*time.Second)
	if !maps.Equal(got, want) {
		missing, wrong := 0, 0
		for k, w := range want {
			if g, ok := got[k]; !ok {
				missing++
			} else if g != w {
				wrong++
				if wrong <= 3 {
					t.Errorf("window %v: got %+v, want %+v", k, g, w)
				}
			}
		}
		t.Errorf("%d windows of %d views: %d missing, %d wrong, %d extra", len(want), views, missing, wrong, len(got)-len(want)+missing)
	}
	if err := job.Stop(ctx); err != nil {
		t.Errorf("stop the job: %v", err)
	}
	<-done
	checkOperators(t, df, 20000, uint64(views))
}

// checkOperators: YSB's input fed its filter, the filter its join, the
// join its window; the input and the filter processed every event, the
// others the views, each busy for part of the run.
func checkOperators(t *testing.T, df *dataflow.Job, events, views uint64) {
	t.Helper()
	want := []dataflow.Edge{{From: stage.InputOperator, To: ysb.OpFilter}, {From: ysb.OpFilter, To: ysb.OpJoin}, {From: ysb.OpJoin, To: ysb.OpWindow}}
	if e := df.Edges(); !slices.Equal(e, want) {
		t.Errorf("the dataflow's edges: %v, want input -> filter -> join -> window", e)
	}
	df.Stages().Sample()
	accounts, readings := df.Stages().Readings()
	if len(accounts) != 4 {
		t.Fatalf("%d operators accounted, want input, filter, join and window", len(accounts))
	}
	for i, a := range accounts {
		r := readings[i]
		want := views
		if a.Name() == ysb.OpFilter || a.Name() == stage.InputOperator {
			want = events
		}
		if a.Kind() != stage.Operator || r.Tuples != want || r.Items == 0 || r.Ticks[stage.OpBusy] == 0 || r.Ticks[stage.OpWaiting] == 0 {
			t.Errorf("operator %s (%s): %d tuples in %d batches, busy %d and waiting %d ticks; want %d tuples, busy and waiting for some of the run",
				a.Name(), a.Kind(), r.Tuples, r.Items, r.Ticks[stage.OpBusy], r.Ticks[stage.OpWaiting], want)
		}
		// the filter and the join run on their input's processor thread
		wantThread := ""
		if a.Name() == ysb.OpFilter || a.Name() == ysb.OpJoin {
			wantThread = "pipeline thread 0"
		}
		if a.Thread() != wantThread {
			t.Errorf("operator %s on thread %q, want %q", a.Name(), a.Thread(), wantThread)
		}
	}
}

// TestAJoinWithoutRedisFailsAtStart: the join connects to Redis when the
// job starts, so a Redis that cannot be reached stops the job with its
// address named before it reads an event (at the first lookup, the
// trial's first views waited out the connection and were dropped as
// late).
func TestAJoinWithoutRedisFailsAtStart(t *testing.T) {
	natsAddr := realserver.EmbeddedNATS(t)
	cfg := ysb.Defaults()
	cfg.Input = fmt.Sprintf("jetstream://%s/nojoin.in?group=ysb", natsAddr)
	cfg.Output = fmt.Sprintf("jetstream://%s/nojoin.out", natsAddr)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Redis = l.Addr().String()
	_ = l.Close() // nothing listens there now
	job, err := ysb.Build(brokers, cfg, ysb.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err = job.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "connect to Redis at "+cfg.Redis) || time.Since(start) > 15*time.Second {
		t.Errorf("the job ran %v and ended with %v; want it stopped at start, naming Redis at %s", time.Since(start), err, cfg.Redis)
	}
}

// TestEngineConfigurationOfEachPart: the job's configuration, built from
// typed values, is what the engine takes for each part (its linter reads
// every field), in the order of YSB's steps, with the injected works where
// given and a URL that a hand-built text would have broken (a quote, a
// colon and a hash) kept exactly.
func TestEngineConfigurationOfEachPart(t *testing.T) {
	env, err := ysb.Environment(brokers, ysb.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		part  string
		steps []string
	}{
		{ysb.PartAll, []string{"filter", "projection", "join", "window"}},
		{ysb.PartFilter, []string{"filter"}},
		{ysb.PartCount, []string{"projection", "join", "window"}},
	} {
		c := ysb.Defaults()
		c.Part, c.Redis, c.JoinWork, c.Window = tc.part, "127.0.0.1:6379", 100*time.Microsecond, 10*time.Second
		c.Input, c.Output = "jetstream://127.0.0.1:4222/it's: #in?group=ysb", "jetstream://127.0.0.1:4222/out"
		conf, err := c.YAML()
		if err != nil {
			t.Fatal(err)
		}
		if err := env.NewStreamBuilder().SetYAML(conf); err != nil {
			t.Errorf("%s: the engine refuses its configuration: %v\n%s", tc.part, err, conf)
		}
		var doc struct {
			Input struct {
				Broker struct {
					Inputs []struct {
						CPInput struct {
							URL         string `yaml:"url"`
							MaxInFlight int    `yaml:"max_in_flight"`
						} `yaml:"cp_input"`
						Processors []map[string]any `yaml:"processors"`
					} `yaml:"inputs"`
				} `yaml:"broker"`
			} `yaml:"input"`
			Pipeline struct {
				Processors []map[string]any `yaml:"processors"`
			} `yaml:"pipeline"`
		}
		if err := yaml.Unmarshal([]byte(conf), &doc); err != nil || len(doc.Input.Broker.Inputs) != 1 {
			t.Fatalf("%s: %v\n%s", tc.part, err, conf)
		}
		in := doc.Input.Broker.Inputs[0]
		var steps []string
		for _, p := range append(in.Processors, doc.Pipeline.Processors...) {
			steps = append(steps, fmt.Sprint(p["label"]))
		}
		if in.CPInput.URL != c.Input || !slices.Equal(steps, tc.steps) || in.CPInput.MaxInFlight != 10*cpbenthos.DefaultInFlight {
			t.Errorf("%s: url %q, steps %v, max_in_flight %d; want %q, %v, %d", tc.part, in.CPInput.URL, steps, in.CPInput.MaxInFlight, c.Input, tc.steps, 10*cpbenthos.DefaultInFlight)
		}
		if tc.part != ysb.PartFilter && !strings.Contains(conf, "work_per_tuple: 100µs") {
			t.Errorf("%s: the join's injected work is not in it:\n%s", tc.part, conf)
		}
	}
}
