package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cloudprofiler-go/cp/internal/readfile"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
	"github.com/cloudprofiler-go/cp/wire/jsonev"
)

// A user's own events (--events FILE, SchemaEvents): JSON objects, one a
// line, which the senders cycle through as the distinct tuples of a
// scenario, each sent as it is with its identity's two fields added and
// its time field, if named, written with the intended time. They have no
// bucket form: they go only to an endpoint with format=json.

// Limits of an events file: it travels in every sender's trial request.
const (
	MaxEventsBytes = 4 << 20  // the file
	MaxEventBytes  = 64 << 10 // one event
)

// EventsOptions name the fields of a user's events the harness uses.
type EventsOptions struct {
	// Time is the field a sender writes each event's intended time into,
	// as YSB writes event_time: a string of 13 digits of Unix ms ("":
	// none; the event keeps its own).
	Time string `json:"time,omitempty"`
	// Key is the field a windowed job counts by (--expect-window): a
	// string in every event.
	Key string `json:"key,omitempty"`
}

// LoadEvents reads a user's events, one JSON object a line (blank lines
// skipped).
func LoadEvents(path string, o EventsOptions) (*Scenario, error) {
	data, err := readfile.Limited(path, MaxEventsBytes)
	shown := termsafe.Escape(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("--events %s: no such file", shown)
		}
		return nil, fmt.Errorf("--events: %w", err)
	}
	s := &Scenario{Name: "events:" + filepath.Base(path), Schema: SchemaEvents, TimeField: o.Time, KeyField: o.Key}
	for n, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if len(s.Events) == MaxDistinct {
			return nil, fmt.Errorf("--events %s: more than %d events", shown, MaxDistinct)
		}
		if len(line) > MaxEventBytes || !json.Valid(line) || line[0] != '{' {
			return nil, fmt.Errorf("--events %s: line %d is not one JSON object of at most %d bytes", shown, n+1, MaxEventBytes)
		}
		if err := checkEvent(line); err != nil {
			return nil, fmt.Errorf("--events %s: line %d: %w", shown, n+1, err)
		}
		s.Events = append(s.Events, json.RawMessage(line))
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("--events %s: %w", shown, err)
	}
	return s, nil
}

// checkEvent refuses what is JSON syntax but not one meaning: text that
// is not UTF-8 (or escapes a lone surrogate), and a key given twice,
// which the harness would count by the first and a job's parser by the
// last.
func checkEvent(e []byte) error {
	if err := jsonev.CheckText(e); err != nil {
		return err
	}
	members, err := jsonev.Members(e)
	if err != nil {
		return err
	}
	if k := jsonev.Duplicate(members); k != "" {
		return fmt.Errorf("the key %.64q is given twice (parsers disagree on which counts)", k)
	}
	return nil
}

// validateEvents checks a user's events (from a file or the network): a
// JSON object each, within the limits, each with the key field as a
// string when one is named.
func (s *Scenario) validateEvents() error {
	if len(s.Events) == 0 {
		return errors.New("no events: give one JSON object a line")
	}
	if len(s.Events) > MaxDistinct {
		return fmt.Errorf("%d events, at most %d", len(s.Events), MaxDistinct)
	}
	s.Distinct = len(s.Events)
	total := 0
	for i, e := range s.Events {
		total += len(e)
		if len(e) > MaxEventBytes || total > MaxEventsBytes {
			return fmt.Errorf("event %d: the events are at most %d bytes each and %d in all", i+1, MaxEventBytes, MaxEventsBytes)
		}
		if err := checkEvent(e); err != nil {
			return fmt.Errorf("event %d: %w", i+1, err)
		}
		members, err := jsonev.Members(e)
		if err != nil {
			return fmt.Errorf("event %d: %w", i+1, err)
		}
		if s.KeyField != "" {
			if v, ok := memberValue(members, s.KeyField); !ok || len(v) < 2 || v[0] != '"' {
				return fmt.Errorf("event %d: the key field %q is not a string in it", i+1, s.KeyField)
			}
		}
	}
	for _, f := range []string{s.TimeField, s.KeyField} {
		if f != "" && !jsonev.ValidName(f) {
			return fmt.Errorf("field name %.64q: 1 to 64 letters, digits, '_', '-' and '.'", f)
		}
	}
	return nil
}

// memberValue is the raw JSON value of the member named name.
func memberValue(members []jsonev.Member, name string) ([]byte, bool) {
	for _, m := range members {
		if m.Key == name {
			return m.Value, true
		}
	}
	return nil, false
}

// EventTemplates makes s's events as JSON templates, in order: each event
// as it is, less any field of the identity's names or the time field,
// then the time field (13 digits of Unix ms) and the identity's two
// fields (f's names), which Patch writes in place.
func EventTemplates(s *Scenario, f jsonev.Fields) ([]Template, error) {
	if s.Schema != SchemaEvents {
		return nil, fmt.Errorf("scenario %q has no events of a user's (its schema is %s)", s.Name, s.Schema)
	}
	out := make([]Template, len(s.Events))
	for i, e := range s.Events {
		members, err := jsonev.Members(e)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", i+1, err)
		}
		var w jsonev.Writer
		tpl := Template{count: 1, json: true, offs: make([]tupleOffs, 1)}
		for _, m := range members {
			if m.Key != f.ID && m.Key != f.Intended && m.Key != s.TimeField {
				w.Raw(m.Key, m.Value)
			}
		}
		if s.TimeField != "" {
			tpl.etOffs = []int32{int32(w.Digits(s.TimeField, jsonev.EventMsDigits))}
		}
		tpl.offs[0].id = int32(w.Digits(f.ID, jsonev.IDDigits))
		tpl.offs[0].ts = int32(w.Digits(f.Intended, jsonev.IntendedDigits))
		tpl.Msg = w.End()
		out[i] = tpl
	}
	return out, nil
}

// eventKeys are the distinct values of s's key field, sorted: a windowed
// job's keys, by index.
func (s *Scenario) eventKeys() ([]string, map[string]int32, error) {
	seen := map[string]int32{}
	var names []string
	for i, e := range s.Events {
		members, err := jsonev.Members(e)
		if err != nil {
			return nil, nil, fmt.Errorf("event %d: %w", i+1, err)
		}
		v, ok := memberValue(members, s.KeyField)
		if !ok || len(v) < 2 || v[0] != '"' {
			return nil, nil, fmt.Errorf("event %d: the key field %q is not a string in it", i+1, s.KeyField)
		}
		k := string(v[1 : len(v)-1])
		if _, ok := seen[k]; !ok {
			seen[k] = 0
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for i, k := range names {
		seen[k] = int32(i)
	}
	return names, seen, nil
}

// EventsPrefix names a user's events file as a scenario: events:PATH.
const EventsPrefix = "events:"

// LoadWith is Load, with o for a user's events (events:PATH); o names
// fields of those only.
func LoadWith(nameOrPath string, o EventsOptions) (*Scenario, error) {
	path, events := strings.CutPrefix(nameOrPath, EventsPrefix)
	switch {
	case events:
		return LoadEvents(path, o)
	case o != (EventsOptions{}):
		return nil, fmt.Errorf("--events-time and --events-key name fields of your events (--events FILE), not of the scenario %q", nameOrPath)
	}
	return Load(nameOrPath)
}
