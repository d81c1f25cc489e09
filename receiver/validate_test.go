package receiver

import (
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/trialcfg"
)

func TestConfigValidateRanges(t *testing.T) {
	valid := func() Config {
		return Config{Receiver: trialcfg.Receiver{Schema: "synthetic"}, Endpoints: []string{"tcp://127.0.0.1:1"}}
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"valid", func(*Config) {}, ""},
		{"ring 2^40", func(c *Config) { c.Ring = 1 << 40 }, "ring"},
		{"ring 2^62", func(c *Config) { c.Ring = 4611686018427387904 }, "ring"},
		{"ring 1000", func(c *Config) { c.Ring = 1000 }, "ring"},
		{"lanes", func(c *Config) { c.Endpoints = make([]string, 65) }, "at most 64 endpoints"},
		{"work", func(c *Config) { c.WorkPerTuple = time.Second }, "work"},
		{"negative work", func(c *Config) { c.WorkPerTuple = -1 }, "work"},
		{"expect", func(c *Config) { c.ExpectStreams = 1 << 20 }, "expect-streams"},
		{"end timeout", func(c *Config) { c.EndTimeout = time.Hour }, "end timeout"},
		{"duration", func(c *Config) { c.Duration = -time.Second }, "duration"},
		{"max message", func(c *Config) { c.MaxMessage = 1 << 30 }, "max message"},
		{"hwm", func(c *Config) { c.HWM = -1 }, "hwm"},
		{"schema", func(c *Config) { c.Schema = "xml" }, "schema"},
		{"cpu", func(c *Config) { c.CPUs = []int{5000} }, "CPU"},
	} {
		c := valid()
		tc.edit(&c)
		err := c.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestBacklogIsBounded: thinning keeps every other sample in order, so
// the series stays under maxBacklog however long the run.
func TestBacklogIsBounded(t *testing.T) {
	var s []tally.BacklogSample
	for i := 0; i < maxBacklog; i++ {
		s = append(s, tally.BacklogSample{UnixNs: int64(i)})
	}
	s = thin(s)
	if len(s) != maxBacklog/2 || s[0].UnixNs != 0 || s[1].UnixNs != 2 || s[len(s)-1].UnixNs != maxBacklog-2 {
		t.Fatalf("thinned to %d samples: %v ... %v", len(s), s[:2], s[len(s)-1])
	}
}

// TestMessagesFitTheMemoryBudget: lanes × (ring + hwm) messages of the
// largest size must fit the budget; the largest message is lowered to fit
// (and says so), and settings that leave too little a message are refused.
func TestMessagesFitTheMemoryBudget(t *testing.T) {
	base := func() Config {
		return Config{Receiver: trialcfg.Receiver{Schema: "synthetic", Ring: 256}, Endpoints: []string{"tcp://127.0.0.1:1", "tcp://127.0.0.1:2"}, HWM: 1000}
	}
	c := base()
	c.MemoryBudget = 1 << 40
	if err := c.Validate(); err != nil || c.MaxMessage != 64<<20 || c.MaxMessageLowered {
		t.Fatalf("a large budget: %v, max message %d, lowered %v", err, c.MaxMessage, c.MaxMessageLowered)
	}
	c = base()
	c.MemoryBudget = 1 << 30 // 1 GiB over 2 × 1258 messages: 426 KiB each
	if err := c.Validate(); err != nil || !c.MaxMessageLowered || int64(c.MaxMessage)*2*1258 > 1<<30 || c.MaxMessage < 400<<10 {
		t.Fatalf("1 GiB: %v, max message %d, lowered %v", err, c.MaxMessage, c.MaxMessageLowered)
	}
	c = base()
	c.MemoryBudget, c.Ring, c.HWM = 64<<20, 16384, 1_000_000
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "smaller ring or hwm") {
		t.Fatalf("a ring and hwm that leave too little: %v", err)
	}
	c = base()
	c.MemoryBudget = -1
	if err := c.Validate(); err == nil {
		t.Fatal("a negative budget was taken")
	}
}
