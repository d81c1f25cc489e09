package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/readfile"
	"github.com/cloudprofiler-go/cp/internal/redact"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/tsc/probing"
)

// formatMarker is FormatFile's content.
type formatMarker struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
}

const formatName = "cloudprofiler-go run directory"

func (r *Writer) writeFormat() error {
	return r.WriteJSON(FormatFile, formatMarker{Format: formatName, Version: FormatVersion})
}

// Dir is a run directory as read back: what is there, typed, and what is
// wrong with it. Open fails only when the directory cannot be read at all
// or has a format this version does not know; a missing or damaged file is
// a Problem, and everything intact stays usable.
type Dir struct {
	Path     string
	Version  int
	Summary  *Summary              // nil: summary.json missing or damaged
	Relation *probing.RelationFile // nil: no relation.json (no --clock)
	// Diagnosis is diagnosis.json (nil: none, e.g. --stage-period 0).
	Diagnosis *diagnose.RunFile
	Nodes     map[string]*NodeFiles // profiles/<node>/
	Problems  []string
}

// BlackBox is the system under test the data crossed between the
// senders and the receivers, as the diagnosis names its stages ("sut" in
// a relayed sweep, a broker's scheme, e.g. "nats"), or "" when the data
// went straight from sender to receiver over the transport.
func (s *Summary) BlackBox() string {
	if s.BlackBoxName != "" {
		return s.BlackBoxName
	}
	// A run directory written before summary.json said it: from the plan
	// and the receivers' data endpoints, as the sweep decides it.
	if s.PlanFacts().Relay {
		return "sut"
	}
	for _, a := range s.Agents {
		for _, ep := range a.DataEndpoints {
			if a.Role == protocol.RoleReceiver && driver.IsBroker(ep) {
				scheme, _, _ := strings.Cut(ep, "://")
				return scheme
			}
		}
	}
	return ""
}

// PlanFacts are the fields of the sweep's plan (sweep.TrialPlan, whose
// JSON a sweep test holds to these) that readers other than the sweep use.
type PlanFacts struct {
	Duration time.Duration `json:"duration_ns"` // every trial's measured window
	Warmup   time.Duration `json:"warmup_ns"`
	// Relay: a system under test sat between the senders and the
	// receivers, and the sweep fed it (--relay-input).
	Relay bool `json:"relay"`
	// ExpectWindow: a windowed job's windows (--expect-window; 0: none).
	ExpectWindow time.Duration `json:"expect_window_ns"`
	// Job is the job swept between topics (nil: none): its input's URL.
	Job *struct {
		Input string `json:"input"`
	} `json:"job"`
}

// JobInput is the topic the swept job reads (driver:subject; "": no
// job, or a plan without it).
func (p PlanFacts) JobInput() string {
	if p.Job == nil {
		return ""
	}
	e, err := driver.Parse(p.Job.Input)
	if err != nil {
		return ""
	}
	return e.Topic()
}

// PlanFacts reads them from the plan (zero: a damaged or missing plan).
func (s *Summary) PlanFacts() PlanFacts {
	var p PlanFacts
	_ = json.Unmarshal(s.Plan, &p)
	return p
}

// NodeFiles are the profiler files collected from one node.
type NodeFiles struct {
	// Logs maps a channel to its log files: CHANNEL.log, then the segments
	// a live switch wrote (CHANNEL.log.1, ...), and return-trip acks
	// (channel "CHANNEL.ack").
	Logs     map[string][]string
	Counters *profiler.CounterLog // nil: none
}

// Open reads the run directory at path.
func Open(path string) (*Dir, error) {
	d, err := OpenSummary(path, MaxJSONFile)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(path, RelationFile)); err == nil {
		if rf, err := probing.ReadRelationFile(filepath.Join(path, RelationFile)); err != nil {
			d.problem("%v", err)
		} else {
			d.Relation = rf
		}
	}
	var diag diagnose.RunFile
	switch err := readJSON(filepath.Join(path, DiagnosisFile), MaxJSONFile, &diag); {
	case err == nil:
		d.Diagnosis = &diag
	case !errors.Is(err, os.ErrNotExist):
		d.problem("%v", err)
	}
	d.readProfiles()
	return d, nil
}

// OpenSummary reads only the run directory's format and its summary.json
// of at most limit bytes: for reading many directories (the earlier
// sweeps of a results directory), where Open would read every relation,
// diagnosis and profile too.
func OpenSummary(path string, limit int64) (*Dir, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("run directory %s: not a directory", path)
	}
	d := &Dir{Path: path, Nodes: map[string]*NodeFiles{}}
	var marker formatMarker
	switch err := readJSON(filepath.Join(path, FormatFile), MaxJSONFile, &marker); {
	case err == nil:
		if marker.Format != formatName {
			return nil, fmt.Errorf("run directory %s: %s says format %q, not a %s", path, FormatFile, marker.Format, formatName)
		}
		d.Version = marker.Version
	case errors.Is(err, os.ErrNotExist):
		d.Version = 1 // before format.json existed: summary.json says it
	default:
		return nil, fmt.Errorf("run directory %s: %w", path, err)
	}
	var sum Summary
	switch err := readJSON(filepath.Join(path, SummaryFile), limit, &sum); {
	case err == nil:
		if sum.Result == nil { // a sweep that ended before its search: no trials
			sum.Result = &Result{}
		}
		d.Summary = &sum
		if marker.Version == 0 {
			d.Version = sum.FormatVersion
		}
	case errors.Is(err, os.ErrNotExist):
		d.problem("summary.json is missing: no sweep results (the sweep did not finish, or this is not a run directory)")
	default:
		d.problem("%v", err)
	}
	if d.Version < 1 || d.Version > FormatVersion {
		return nil, fmt.Errorf("run directory %s: format version %d; this cpsweep reads versions 1 to %d (a newer cpsweep wrote it?)", path, d.Version, FormatVersion)
	}
	return d, nil
}

func (d *Dir) problem(format string, args ...any) {
	d.Problems = append(d.Problems, fmt.Sprintf(format, args...))
}

// Trials lists the numbers of the trials with a trials/NNN.json, in
// order.
func (d *Dir) Trials() ([]int, error) {
	files, err := filepath.Glob(filepath.Join(d.Path, TrialsDir, "[0-9][0-9][0-9].json"))
	var ns []int
	for _, f := range files { // sorted by Glob; three digits each
		if n, err := strconv.Atoi(strings.TrimSuffix(filepath.Base(f), ".json")); err == nil {
			ns = append(ns, n)
		}
	}
	return ns, err
}

// Trial reads trials/NNN.json of trial n.
func (d *Dir) Trial(n int) (*TrialFile, error) {
	var f TrialFile
	if err := readJSON(filepath.Join(d.Path, TrialFileName(n)), MaxJSONFile, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// Config returns config.json as raw JSON (nil when missing), with its
// command line's secrets and every URL's credentials masked: a run
// directory written before the sweep redacted its arguments, or by another
// tool, still shows no token in a report.
func (d *Dir) Config() json.RawMessage {
	b, err := readfile.LimitedInDir(d.Path, ConfigFile, MaxJSONFile)
	if err != nil || !json.Valid(b) {
		return nil
	}
	var cfg map[string]json.RawMessage
	if json.Unmarshal(b, &cfg) != nil {
		return json.RawMessage(redact.Text(string(b)))
	}
	var args []string
	if raw, ok := cfg["args"]; ok && json.Unmarshal(raw, &args) == nil {
		cfg["args"], _ = json.Marshal(redact.Args(args))
	}
	out, err := json.Marshal(cfg)
	if err != nil {
		return nil
	}
	return json.RawMessage(redact.Text(string(out)))
}

// SweepPoint is one trial on the sweep plot (report.WriteSweepPlot).
type SweepPoint struct {
	Target, Achieved float64 // tuples/s
	Pass             bool
}

// MaxJSONFile bounds every JSON file of a run directory that is read
// whole: far above what a sweep writes.
const MaxJSONFile = 256 << 20

// readJSON reads the JSON file at path into v, refusing one larger than
// limit or not a regular file directly in its directory (a link is
// refused: readfile.InDir).
func readJSON(path string, limit int64, v any) error {
	b, err := readfile.LimitedInDir(filepath.Dir(path), filepath.Base(path), limit)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return nil
}

// SummarySize is the size of a run directory's summary.json, from its
// metadata, without reading it (a reader with a budget checks it first):
// 0 when it is missing (Open says so), an error when it is not a regular
// file.
func SummarySize(dir string) (int64, error) {
	_, size, err := readfile.Identify(filepath.Join(dir, SummaryFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil // Open says what is missing
	}
	if err != nil {
		return 0, fmt.Errorf("run directory %s: %w", termsafe.Escape(dir), err)
	}
	return size, nil
}
