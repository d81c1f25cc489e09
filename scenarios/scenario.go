package scenarios

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cloudprofiler-go/cp/internal/readfile"
)

//go:embed *.yaml
var builtinFiles embed.FS

// Scenario is a workload description.
type Scenario struct {
	Name     string `yaml:"name" json:"name"`
	Schema   string `yaml:"schema" json:"schema"`
	Seed     int64  `yaml:"seed" json:"seed"`
	Distinct int    `yaml:"distinct" json:"distinct"`
	Size     int    `yaml:"size,omitempty" json:"size,omitempty"`
	// Ad-event parameters (Yahoo streaming benchmark defaults: 100 campaigns
	// of 10 ads each).
	Campaigns      int `yaml:"campaigns,omitempty" json:"campaigns,omitempty"`
	AdsPerCampaign int `yaml:"ads_per_campaign,omitempty" json:"ads_per_campaign,omitempty"`
	// A user's own events (SchemaEvents, LoadEvents): the JSON objects,
	// and the fields named for the event time and a windowed count's key.
	Events    []json.RawMessage `yaml:"-" json:"events,omitempty"`
	TimeField string            `yaml:"-" json:"time_field,omitempty"`
	KeyField  string            `yaml:"-" json:"key_field,omitempty"`
}

// Schema names.
const (
	SchemaAdEvent   = "ad-event"
	SchemaSynthetic = "synthetic"
	// SchemaRaw decodes only the tuple id and intended time and keeps the
	// rest as raw msgpack: for tuples a system under test has transformed.
	SchemaRaw = "raw"
	// SchemaWindow is a windowed count's output (docs/sut.md): the
	// identity of the latest tuple counted, then the window's key, end and
	// count. Receiver only: a job writes it.
	SchemaWindow = "window"
	// SchemaEvents is a user's own events (--events FILE): JSON objects,
	// sent only as JSON events (format=json).
	SchemaEvents = "events"
)

// MinSyntheticSize is the smallest encodable synthetic tuple: array header,
// two 9-byte integers and an empty bin.
const MinSyntheticSize = 1 + 9 + 9 + 2

// Limits of a scenario: a description from a file or a controller's
// request is checked against them before anything is generated.
const (
	MaxNameLen     = 128
	MaxDistinct    = 1 << 20 // distinct tuples, or a user's events
	MaxSize        = 16 << 20
	MaxAds         = 1 << 20   // campaigns × ads per campaign
	MaxGenerated   = 256 << 20 // distinct × tuple size, bytes pre-serialized
	adEventMaxSize = 128       // the longest encoded ad event
)

// MaxTupleSize is the largest encoded size of one of the scenario's tuples.
func (s *Scenario) MaxTupleSize() int {
	switch s.Schema {
	case SchemaSynthetic:
		return s.Size
	case SchemaEvents: // the longest event with its time and identity added
		most := 0
		for _, e := range s.Events {
			most = max(most, len(e))
		}
		return most + 128
	}
	return adEventMaxSize
}

// Validate checks the description and fills defaults. It allocates
// nothing but a user's events' fields while it reads them (bounded by
// MaxEventsBytes), so it is safe on a description from the network.
func (s *Scenario) Validate() error {
	if len(s.Name) > MaxNameLen {
		return fmt.Errorf("scenario name longer than %d bytes", MaxNameLen)
	}
	if s.Schema == SchemaEvents {
		if err := s.validateEvents(); err != nil {
			return fmt.Errorf("scenario %q: %w", s.Name, err)
		}
	}
	if s.Distinct == 0 {
		s.Distinct = 1024
	}
	if s.Distinct < 1 || s.Distinct > 1<<20 {
		return fmt.Errorf("scenario %q: distinct must be between 1 and 1048576, got %d", s.Name, s.Distinct)
	}
	switch s.Schema {
	case SchemaAdEvent:
		if s.Campaigns == 0 {
			s.Campaigns = 100
		}
		if s.AdsPerCampaign == 0 {
			s.AdsPerCampaign = 10
		}
		if s.Campaigns < 1 || s.AdsPerCampaign < 1 || s.Campaigns > MaxAds || s.AdsPerCampaign > MaxAds || s.Campaigns*s.AdsPerCampaign > MaxAds {
			return fmt.Errorf("scenario %q: campaigns and ads_per_campaign must be positive, with at most %d ads in all", s.Name, MaxAds)
		}
	case SchemaEvents:
	case SchemaSynthetic:
		if s.Size < MinSyntheticSize || s.Size > MaxSize {
			return fmt.Errorf("scenario %q: size must be between %d and %d bytes, got %d", s.Name, MinSyntheticSize, MaxSize, s.Size)
		}
	case "":
		return fmt.Errorf("scenario %q: schema is missing (use %q or %q)", s.Name, SchemaAdEvent, SchemaSynthetic)
	default:
		return fmt.Errorf("scenario %q: unknown schema %.32q (use %q or %q)", s.Name, s.Schema, SchemaAdEvent, SchemaSynthetic)
	}
	if s.Distinct*s.MaxTupleSize() > MaxGenerated {
		return fmt.Errorf("scenario %q: %d distinct tuples of up to %d bytes exceed %d MiB: use fewer distinct tuples", s.Name, s.Distinct, s.MaxTupleSize(), MaxGenerated>>20)
	}
	return nil
}

// Parse reads a scenario from YAML bytes; unknown keys are an error so a
// typo does not silently change a workload.
func Parse(data []byte, source string) (*Scenario, error) {
	var s Scenario
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("parse scenario %s: %w", source, readfile.YAMLError(err))
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(source), filepath.Ext(source))
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// FileOf is the file that Load of nameOrPath reads ("" for a built-in or
// a synthetic scenario).
func FileOf(nameOrPath string) string {
	if path, ok := strings.CutPrefix(nameOrPath, EventsPrefix); ok {
		return path
	}
	if _, err := builtinFiles.ReadFile(nameOrPath + ".yaml"); err == nil || strings.HasPrefix(nameOrPath, "synthetic:") || nameOrPath == "" {
		return ""
	}
	return nameOrPath
}

// Load returns a built-in scenario by name, a scenario file by path, or a
// synthetic scenario of a given size written as "synthetic:SIZE".
func Load(nameOrPath string) (*Scenario, error) {
	if path, ok := strings.CutPrefix(nameOrPath, EventsPrefix); ok {
		return LoadEvents(path, EventsOptions{})
	}
	if size, ok := strings.CutPrefix(nameOrPath, "synthetic:"); ok {
		var n int
		if _, err := fmt.Sscanf(size, "%d", &n); err != nil {
			return nil, fmt.Errorf("scenario %q: size after 'synthetic:' must be a number of bytes", nameOrPath)
		}
		s := &Scenario{Name: nameOrPath, Schema: SchemaSynthetic, Seed: 1, Size: n}
		return s, s.Validate()
	}
	if data, err := builtinFiles.ReadFile(nameOrPath + ".yaml"); err == nil {
		return Parse(data, nameOrPath+".yaml")
	}
	data, err := readfile.Limited(nameOrPath, 1<<20)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("scenario %q: no such file and not a built-in (built-ins: %s; or synthetic:SIZE)", nameOrPath, strings.Join(Builtins(), ", "))
		}
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	return Parse(data, nameOrPath)
}

// Builtins lists the names of the compiled-in scenarios.
func Builtins() []string {
	entries, _ := builtinFiles.ReadDir(".")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}
