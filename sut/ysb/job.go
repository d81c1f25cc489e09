package ysb

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redpanda-data/benthos/v4/public/service"

	// the engine's own components: mapping, system_window, logging
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"

	"github.com/cloudprofiler-go/cp/dataflow"
	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/scenarios"
	cpbenthos "github.com/cloudprofiler-go/cp/sut/benthos"
)

// CampaignsHash is the Redis hash of ad id -> campaign id, each ad by its
// 32 hex digits (cpjob ysb's join) and as a UUID (a JSON event's ad_id,
// which a job that reads JSON looks up as it is, as YSB's own jobs do).
const CampaignsHash = "ysb:campaigns"

// CampaignID names campaign c of a scenario.
func CampaignID(c int) string { return scenarios.CampaignID(c) }

// Campaigns is the join table of an ad-event scenario: ad id (32 hex
// digits, and as a UUID) -> campaign id.
func Campaigns(s *scenarios.Scenario) (map[string]string, error) {
	ads, err := s.Ads()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, 2*len(ads))
	for i, ad := range ads {
		out[hex.EncodeToString(ad[:])] = CampaignID(i / s.AdsPerCampaign)
		out[scenarios.UUID(ad[:])] = CampaignID(i / s.AdsPerCampaign)
	}
	return out, nil
}

// LoadCampaigns writes the scenario's join table into the Redis at addr,
// replacing the hash's content.
func LoadCampaigns(ctx context.Context, addr string, s *scenarios.Scenario) error {
	table, err := Campaigns(s)
	if err != nil {
		return err
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	pipe := c.TxPipeline()
	pipe.Del(ctx, CampaignsHash)
	pipe.HSet(ctx, CampaignsHash, table)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("load the campaigns into Redis %s: %w", addr, err)
	}
	return nil
}

// Config is a YSB job's plan.
type Config struct {
	Input, Output string        // broker endpoints; the input names the job's group
	Redis         string        // HOST:PORT of the campaigns' Redis
	Window        time.Duration // the windows' size (YSB: 10 s; 1 s in trials)
	Lateness      time.Duration // how long after its end a window waits for late events
	Copies        int           // input copies, each with its own filter, projection and join
	Stream        int           // the output's stream id
	LogLevel      string        // the engine's: warn, info, debug
	// Part is which group of operators this process runs (Parts): the
	// whole job, or one of its two halves with a topic between them, each
	// a process of its own, on hosts of their own.
	Part string
	// FilterWork, JoinWork and WindowWork are injected limits (0: none):
	// CPU spent by the filter on each event, by the join and the window
	// operator on each view, and JoinDelay a wait of the join's on each
	// lookup (a Redis that answers slowly), for an experiment whose limit
	// is known (docs/sut.md).
	FilterWork, JoinWork, WindowWork, JoinDelay time.Duration
}

// The parts of the job: PartFilter reads the ad events and writes the
// views (each with its identity, schema ad-event) to a topic between the
// two; PartCount reads them there, joins each with its campaign and
// writes the windows' counts.
const (
	PartAll    = "all"
	PartFilter = "filter"
	PartCount  = "count"
)

// Parts are the values of Config.Part.
var Parts = []string{PartAll, PartFilter, PartCount}

// Defaults of a job.
func Defaults() Config {
	return Config{Window: time.Second, Lateness: 500 * time.Millisecond, Copies: 1, Stream: 0xff00, LogLevel: "warn", Part: PartAll}
}

// Hooks are what a job's process learns of its running job: its
// operators' accounting (nil: not accounted; docs/dataflow.md), and each
// connection of cp_input and cp_output (nil: not told).
type Hooks struct {
	Operators *dataflow.Job
	Connected cpbenthos.Connected
}

// Environment is the engine with the harness's plugins (cp_input,
// cp_output over reg's drivers) and YSB's operators.
func Environment(reg driver.Registry, h Hooks) (*service.Environment, error) {
	env := service.NewEnvironment()
	if err := cpbenthos.Register(env, reg, h.Connected, h.Operators); err != nil {
		return nil, err
	}
	if err := registerOperators(env, h.Operators); err != nil {
		return nil, err
	}
	return env, nil
}

// Build makes the job's stream; Run it, Stop it.
func Build(reg driver.Registry, c Config, h Hooks) (*service.Stream, error) {
	env, err := Environment(reg, h)
	if err != nil {
		return nil, err
	}
	conf, err := c.YAML()
	if err != nil {
		return nil, err
	}
	b := env.NewStreamBuilder()
	if err := b.SetYAML(conf); err != nil {
		return nil, fmt.Errorf("the YSB job's configuration: %w", err)
	}
	return b.Build()
}
