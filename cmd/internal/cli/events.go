package cli

import (
	"errors"

	"github.com/spf13/pflag"

	"github.com/cloudprofiler-go/cp/scenarios"
)

// Events are the flags of a user's own events (dgsend and cpsweep): the
// file, and the fields the harness writes the time into and counts
// windows by.
type Events struct {
	File, Time, Key string
}

// Register adds --events, --events-time and --events-key to f.
func (e *Events) Register(f *pflag.FlagSet) {
	f.StringVar(&e.File, "events", "", "send your own events instead of a scenario: a file of JSON objects, one a line (at most 4 MiB, 64 KiB an event),\ncycled through, each with its identity added (cp_id, cp_intended_ns); to a broker endpoint with format=json (docs/brokers.md)")
	f.StringVar(&e.Time, "events-time", "", "with --events: the field each event's intended time is written into (Unix ms, a string of 13 digits, as YSB's event_time)")
	f.StringVar(&e.Key, "events-key", "", "with --events and --expect-window: the string field a windowed job counts by")
}

// Scenario is the scenario the flags name: events:FILE with --events
// (scenarioGiven: --scenario was set too, which is refused), else
// scenario; and the events' fields.
func (e *Events) Scenario(scenario string, scenarioGiven bool) (string, scenarios.EventsOptions, error) {
	o := scenarios.EventsOptions{Time: e.Time, Key: e.Key}
	switch {
	case e.File == "" && o != (scenarios.EventsOptions{}):
		return "", o, errors.New("--events-time and --events-key name fields of your events: give --events FILE too")
	case e.File == "":
		return scenario, o, nil
	case scenarioGiven:
		return "", o, errors.New("give --events or --scenario, not both")
	}
	return scenarios.EventsPrefix + e.File, o, nil
}
