package ysb

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cloudprofiler-go/cp/scenarios"
	cpbenthos "github.com/cloudprofiler-go/cp/sut/benthos"
)

// The engine's configuration of the job, as typed values: marshalled, the
// keys keep this order, and every string is quoted as YAML needs it (a
// URL with a quote or a colon in it cannot break the document, as text
// built by hand could).
type (
	engineConfig struct {
		Input    inputConfig     `yaml:"input"`
		Buffer   *bufferConfig   `yaml:"buffer,omitempty"`
		Pipeline *pipelineConfig `yaml:"pipeline,omitempty"`
		Output   outputConfig    `yaml:"output"`
		Logger   struct {
			Level string `yaml:"level"`
		} `yaml:"logger"`
		HTTP struct {
			Enabled bool `yaml:"enabled"`
		} `yaml:"http"`
	}
	inputConfig struct {
		Broker struct {
			Copies int           `yaml:"copies"`
			Inputs []brokerInput `yaml:"inputs"`
		} `yaml:"broker"`
	}
	brokerInput struct {
		CPInput    cpInputConfig `yaml:"cp_input"`
		Processors []processor   `yaml:"processors,omitempty"`
	}
	cpInputConfig struct {
		URL         string `yaml:"url"`
		Schema      string `yaml:"schema"`
		MaxInFlight int    `yaml:"max_in_flight"`
	}
	// processor is one step; exactly one of its kinds is set.
	processor struct {
		Label   string        `yaml:"label"`
		Mapping string        `yaml:"mapping,omitempty"`
		Filter  *operatorWork `yaml:"ysb_filter,omitempty"`
		Join    *joinConfig   `yaml:"ysb_redis_join,omitempty"`
		Window  *operatorWork `yaml:"ysb_window_count,omitempty"`
	}
	// operatorWork is an operator's injected work ("": none), and for the
	// filter whether the join follows it on its thread.
	operatorWork struct {
		WorkPerTuple string `yaml:"work_per_tuple,omitempty"`
		Chained      bool   `yaml:"chained,omitempty"`
	}
	joinConfig struct {
		Address      string `yaml:"address"`
		WorkPerTuple string `yaml:"work_per_tuple,omitempty"`
		LookupDelay  string `yaml:"lookup_delay,omitempty"`
	}
	bufferConfig struct {
		SystemWindow struct {
			TimestampMapping string `yaml:"timestamp_mapping"`
			Size             string `yaml:"size"`
			AllowedLateness  string `yaml:"allowed_lateness"`
		} `yaml:"system_window"`
	}
	pipelineConfig struct {
		Threads    int         `yaml:"threads"`
		Processors []processor `yaml:"processors"`
	}
	outputConfig struct {
		CPOutput struct {
			URL    string `yaml:"url"`
			Schema string `yaml:"schema"`
			Stream int    `yaml:"stream"`
		} `yaml:"cp_output"`
	}
)

// YAML is the job, or its part, as the engine's configuration.
//
// The engine's windows hold the times in (start, end]; the contract's (and
// YSB's) hold the milliseconds in [start, end). Half a millisecond added
// to each event time makes them the same windows: an event at a whole
// second counts in the window that starts there.
func (c Config) YAML() (string, error) {
	var e engineConfig
	in := brokerInput{CPInput: cpInputConfig{URL: c.Input, Schema: scenarios.SchemaAdEvent, MaxInFlight: c.inFlight()}}
	if c.Part != PartCount {
		in.Processors = append(in.Processors, processor{Label: "filter", Filter: &operatorWork{WorkPerTuple: work(c.FilterWork), Chained: c.Part != PartFilter}})
	}
	if c.Part != PartFilter {
		in.Processors = append(in.Processors,
			processor{Label: "projection", Mapping: `root = {"ad_id": this.ad_id, "event_time_ms": this.event_time_ms}`},
			processor{Label: "join", Join: &joinConfig{Address: c.Redis, WorkPerTuple: work(c.JoinWork), LookupDelay: work(c.JoinDelay)}})
		e.Buffer = &bufferConfig{}
		w := &e.Buffer.SystemWindow
		w.TimestampMapping, w.Size, w.AllowedLateness = "root = this.event_time_ms / 1000 + 0.0005", c.Window.String(), c.Lateness.String()
		e.Pipeline = &pipelineConfig{Threads: 1, Processors: []processor{{Label: "window", Window: &operatorWork{WorkPerTuple: work(c.WindowWork)}}}}
	}
	e.Input.Broker.Copies, e.Input.Broker.Inputs = c.Copies, []brokerInput{in}
	out := &e.Output.CPOutput
	out.URL, out.Schema, out.Stream = c.Output, scenarios.SchemaWindow, c.Stream
	if c.Part == PartFilter {
		out.Schema = scenarios.SchemaAdEvent
	}
	e.Logger.Level = c.LogLevel
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2) // as people write the engine's configurations
	if err := errors.Join(enc.Encode(&e), enc.Close()); err != nil {
		return "", fmt.Errorf("ysb: the engine's configuration: %w", err)
	}
	return b.String(), nil
}

// work is an injected work's duration as the engine reads it ("": none).
func work(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return d.String()
}

// inFlight is the input's bound on unacknowledged tuples: the window
// buffer acknowledges a window's tuples only when it closes, so the
// engine's default (for a second's window) grows with the window, as the
// buffer's own memory does (docs/sut.md).
func (c Config) inFlight() int {
	n := int64(cpbenthos.DefaultInFlight) * int64(max(1, (c.Window+time.Second-1)/time.Second))
	return int(min(n, cpbenthos.MaxInFlight))
}
