package sender

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/internal/zmqraw"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/trialcfg"
	"github.com/cloudprofiler-go/cp/tsc"
)

// TestConfigValidateRanges: every field from a flag or a request is
// checked against its range before anything is allocated.
func TestConfigValidateRanges(t *testing.T) {
	valid := func() Config {
		return Config{
			Sender:    trialcfg.Sender{Threads: 1, BucketSize: 1, Overflow: trialcfg.Block, Idle: trialcfg.Sleep},
			Endpoints: []string{"tcp://127.0.0.1:1"},
			Rate:      1000,
			Duration:  time.Second,
			Scenario:  &scenarios.Scenario{Schema: scenarios.SchemaSynthetic, Size: 100},
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "" = valid
	}{
		{"valid", func(*Config) {}, ""},
		{"JSON events", func(c *Config) { c.Endpoints = []string{"jetstream://127.0.0.1:1/in?format=json"} }, ""},
		{"JSON events in buckets of 10", func(c *Config) {
			c.Endpoints, c.BucketSize = []string{"jetstream://127.0.0.1:1/in?format=json"}, 10
		}, "sends JSON events, one a message: --bucket 1, not 10"},
		{"threads -1", func(c *Config) { c.Threads = -1 }, "threads"},
		{"threads 257", func(c *Config) { c.Threads = 257 }, "threads"},
		{"NaN rate", func(c *Config) { c.Rate = math.NaN() }, "rate"},
		{"huge rate", func(c *Config) { c.Rate = 1e300 }, "rate"},
		{"negative duration", func(c *Config) { c.Duration = -1 }, "duration"},
		{"ten-year duration", func(c *Config) { c.Duration = 10 * 365 * 24 * time.Hour }, "duration"},
		{"no end", func(c *Config) { c.Duration = 0 }, "never ends"},
		{"count taking days", func(c *Config) { c.Duration, c.Count, c.Rate = 0, 1e12, 1 }, "longer than"},
		{"warm-up above duration", func(c *Config) { c.Warmup = 2 * time.Second }, "warm-up"},
		{"start in 9999", func(c *Config) { c.StartAt = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) }, "ahead"},
		{"bucket 0", func(c *Config) { c.BucketSize = 0 }, "bucket size"},
		{"bucket too large for the tuples", func(c *Config) { c.BucketSize = 1 << 20; c.Scenario.Size = 1000 }, "MiB"},
		{"overflow", func(c *Config) { c.Overflow = "x" }, "overflow"},
		{"idle", func(c *Config) { c.Idle = "x" }, "idle"},
		{"hwm", func(c *Config) { c.HWM = 1 << 40 }, "hwm"},
		{"io threads", func(c *Config) { c.IOThreads = 1000 }, "io-threads"},
		{"late threshold", func(c *Config) { c.LateThreshold = time.Hour }, "late threshold"},
		{"end timeout", func(c *Config) { c.EndTimeout = time.Hour }, "end timeout"},
		{"cpu", func(c *Config) { c.CPUs = []int{-1} }, "CPU"},
		{"endpoint", func(c *Config) { c.Endpoints = []string{"nonsense"} }, "endpoint"},
		{"long endpoint", func(c *Config) { c.Endpoints = []string{"tcp://" + strings.Repeat("a", 300)} }, "endpoint"},
		{"scenario too large", func(c *Config) { c.Scenario.Size, c.Scenario.Distinct = 1<<20, 1<<20 }, "distinct"},
		{"shape", func(c *Config) { c.Shape = scenarios.Shape{Kind: "sine", Amp: 2, Period: 1} }, "amplitude"},
		{"rate 1e-300", func(c *Config) { c.Rate = 1e-300 }, "smallest paced rate"},
		{"endpoint with a NUL", func(c *Config) { c.Endpoints = []string{"tcp://127.0.0.1:1\x00x"} }, "control character"},
		{"each field in range, 128 GiB in all", func(c *Config) {
			c.Threads, c.Scenario.Size, c.Scenario.Distinct, c.MemoryBudget = 256, 256, 1<<20, 8<<30
		}, "memory budget"},
		{"a queue of 1000 large buckets", func(c *Config) {
			c.BucketSize, c.Scenario.Size, c.Scenario.Distinct, c.MemoryBudget = 64, 1<<20, 64, 8<<30
		}, "--hwm"},
		{"within a small budget", func(c *Config) { c.MemoryBudget = 1 << 20 }, ""},
		{"above a small budget", func(c *Config) { c.Scenario.Distinct, c.MemoryBudget = 1<<14, 1<<20 }, "1.000 MiB"},
		{"negative budget", func(c *Config) { c.MemoryBudget = -1 }, "memory budget"},
	} {
		c := valid()
		tc.edit(&c)
		err := c.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	c := valid()
	if err := c.Validate(); err != nil || c.HWM != zmqraw.DefaultHWM || c.IOThreads != 1 {
		t.Errorf("defaults: %v hwm %d io %d", err, c.HWM, c.IOThreads)
	}
}

func TestShapeValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    scenarios.Shape
		ok   bool
	}{
		{"constant", scenarios.Shape{Kind: "constant"}, true},
		{"empty", scenarios.Shape{}, true},
		{"poisson", scenarios.Shape{Kind: "poisson", Seed: 7}, true},
		{"step", scenarios.Shape{Kind: "step", Mults: []float64{1, 2}, Spans: []float64{1, 1}}, true},
		{"step all zero", scenarios.Shape{Kind: "step", Mults: []float64{0}, Spans: []float64{1}}, false},
		{"step without spans", scenarios.Shape{Kind: "step", Mults: []float64{1}}, false},
		{"step NaN", scenarios.Shape{Kind: "step", Mults: []float64{math.NaN()}, Spans: []float64{1}}, false},
		{"step Inf span", scenarios.Shape{Kind: "step", Mults: []float64{1}, Spans: []float64{math.Inf(1)}}, false},
		{"step too many pieces", scenarios.Shape{Kind: "step", Mults: make([]float64, scenarios.MaxShapePieces+1), Spans: make([]float64, scenarios.MaxShapePieces+1)}, false},
		{"ramp", scenarios.Shape{Kind: "ramp", Mults: []float64{0.5, 1.5}}, true},
		{"ramp one", scenarios.Shape{Kind: "ramp", Mults: []float64{1}}, false},
		{"sine", scenarios.Shape{Kind: "sine", Amp: 0.2, Period: 10}, true},
		{"sine zero period", scenarios.Shape{Kind: "sine", Amp: 0.2}, false},
		{"replay", scenarios.Shape{Kind: "replay", Mults: []float64{1}, Spans: []float64{1}, Source: "t.txt"}, true},
		{"unknown", scenarios.Shape{Kind: "replay:/etc/shadow"}, false},
		{"constant with pieces", scenarios.Shape{Kind: "constant", Mults: []float64{1}}, false},
	} {
		if err := tc.s.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestNewEndsItsPreparationWhenCancelled: a stop that comes while a run is
// being prepared ends the preparation (between threads and between the
// send-cost batches), with ErrCancelled and nothing left open.
func TestNewEndsItsPreparationWhenCancelled(t *testing.T) {
	clock := tsc.NewClockHz(2e9)
	cancel := make(chan struct{})
	close(cancel)
	cfg := Config{
		Sender:    trialcfg.Sender{Threads: 4, BucketSize: 1, Overflow: trialcfg.Block, Idle: trialcfg.Sleep},
		Endpoints: []string{"tcp://127.0.0.1:1"},
		Rate:      1000,
		Duration:  time.Second,
		Scenario:  &scenarios.Scenario{Schema: scenarios.SchemaSynthetic, Size: 100},
		Clock:     clock,
		Cancel:    cancel,
	}
	start := time.Now()
	s, err := New(cfg)
	if !errors.Is(err, ErrCancelled) || s != nil {
		t.Fatalf("a cancelled preparation: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("a cancelled preparation took %v", took)
	}
}

// TestMemoryEstimateCountsEveryThreadsBuckets: the estimate grows with the
// threads (each has its own buckets) and with the high-water mark.
func TestMemoryEstimateCountsEveryThreadsBuckets(t *testing.T) {
	c := Config{Sender: trialcfg.Sender{Threads: 1, BucketSize: 100}, HWM: 1000, Scenario: &scenarios.Scenario{Schema: scenarios.SchemaSynthetic, Size: 100, Distinct: 1 << 16}}
	one, _ := c.MemoryEstimate()
	c.Threads = 8
	eight, why := c.MemoryEstimate()
	if one < (1<<16)*100*2 || eight < 5*one || !strings.Contains(why, "8 thread(s)") {
		t.Fatalf("1 thread: %d B, 8 threads: %d B (%s)", one, eight, why)
	}
	c.Threads = 256
	c.BucketSize, c.Scenario.Size, c.Scenario.Distinct = 1, 256, 1<<20
	if all, _ := c.MemoryEstimate(); all < 64<<30 {
		t.Fatalf("256 threads × 2^20 × 256 B: %d B, want at least 64 GiB (each thread its own copy)", all)
	}
}
