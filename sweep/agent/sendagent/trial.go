package sendagent

import (
	"errors"
	"fmt"
	"time"

	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sender"
)

// Config is the trial as a sender configuration; the agent adds what is
// its own (CPUs, I/O threads, clock, profiler, broker drivers).
func Config(t protocol.SenderTrial) (sender.Config, error) {
	sc := t.Scenario
	cfg := sender.Config{Sender: t.Sender, Agent: t.Agent, Endpoints: t.Endpoints, SenderID: t.SenderID, Rate: t.Rate,
		Duration: t.Duration, Warmup: t.Warmup, StartAt: t.StartAt, Shape: t.Shape, Scenario: &sc,
		LateThreshold: t.LateThreshold, HWM: t.HWM, EndTimeout: 5 * time.Second, Stalls: t.Stalls, Seal: t.Seal}
	if t.ExpectFilter != "" {
		var err error
		if cfg.Expect, err = scenarios.ParsePredicate(sc.Schema, t.ExpectFilter); err != nil {
			return cfg, fmt.Errorf("expect_filter: %w", err)
		}
	}
	return cfg, nil
}

// Validate checks the trial as the agent will run it (the controller's
// plan check too).
func Validate(t protocol.SenderTrial) error {
	if t.Duration <= 0 {
		return errors.New("a sender trial needs a duration")
	}
	cfg, err := Config(t)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	return protocol.ValidProfile(t.Profile)
}
