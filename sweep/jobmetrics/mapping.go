package jobmetrics

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cloudprofiler-go/cp/internal/readfile"
	"github.com/cloudprofiler-go/cp/stage/stagemetrics"
)

// Mapping says how a job's metrics name its operators. A metric matches
// a name when it is the name or ends in "_" + name (Flink's reporter
// prefixes its scope: flink_taskmanager_job_task_busyTimeMsPerSecond).
type Mapping struct {
	// Job names the job in the analyses (its operators are JOB/NAME).
	Job string `yaml:"job"`
	// Busy, BackPressured and Idle are gauges of milliseconds per second
	// (0..1000) spent so; RecordsIn a counter of the records an operator
	// took, RecordsInRate a gauge of them per second (used when the
	// counter is absent).
	Busy          string `yaml:"busy"`
	BackPressured string `yaml:"back_pressured"`
	Idle          string `yaml:"idle"`
	RecordsIn     string `yaml:"records_in"`
	RecordsInRate string `yaml:"records_in_rate"`
	// OperatorLabels name an operator: the first label present with a
	// value is its name (Flink: operator_name, then task_name). Series
	// that differ in other labels (subtask_index) are one operator: its
	// times are averaged, its records summed.
	OperatorLabels []string `yaml:"operator_labels"`
	// Edges are the dataflow's edges between operators, [from, to] (the
	// metrics do not say them); none: each operator reads the system's
	// input and writes its output.
	Edges [][2]string `yaml:"edges"`
}

// Flink is the documented convention: Flink's names and labels.
func Flink() Mapping {
	return Mapping{Job: "job", Busy: stagemetrics.FlinkBusy, BackPressured: stagemetrics.FlinkBackPressured, Idle: stagemetrics.FlinkIdle,
		RecordsIn: stagemetrics.FlinkRecordsIn, RecordsInRate: stagemetrics.FlinkRecordsInRate, OperatorLabels: []string{"operator_name", "task_name"}}
}

// MaxMappingFile bounds a mapping file.
const MaxMappingFile = 64 << 10

// LoadMapping reads a mapping file (YAML): Flink's names for every field
// it leaves out.
func LoadMapping(path string) (Mapping, error) {
	b, err := readfile.Limited(path, MaxMappingFile)
	if err != nil {
		return Mapping{}, err
	}
	m := Flink()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		return Mapping{}, fmt.Errorf("%s: %w", path, readfile.YAMLError(err))
	}
	if err := m.Validate(); err != nil {
		return Mapping{}, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Validate checks the names.
func (m Mapping) Validate() error {
	var errs []error
	if !validName(m.Job) {
		errs = append(errs, fmt.Errorf("job %q: 1 to 64 bytes, no '/' or space", m.Job))
	}
	for field, v := range map[string]string{"busy": m.Busy, "back_pressured": m.BackPressured, "idle": m.Idle} {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s: a metric name is needed", field))
		}
	}
	if m.RecordsIn == "" && m.RecordsInRate == "" {
		errs = append(errs, errors.New("records_in or records_in_rate: one is needed"))
	}
	if len(m.OperatorLabels) == 0 || len(m.OperatorLabels) > 8 {
		errs = append(errs, fmt.Errorf("operator_labels: 1 to 8 labels, got %d", len(m.OperatorLabels)))
	}
	if len(m.Edges) > MaxOperators*4 {
		errs = append(errs, fmt.Errorf("%d edges, at most %d", len(m.Edges), MaxOperators*4))
	}
	for _, e := range m.Edges {
		if !validName(e[0]) || !validName(e[1]) || e[0] == e[1] {
			errs = append(errs, fmt.Errorf("edge %q -> %q: two operators' names", e[0], e[1]))
		}
	}
	return errors.Join(errs...)
}

// MaxOperators bounds the operators read from one job.
const MaxOperators = 256

func validName(s string) bool {
	return len(s) > 0 && len(s) <= 64 && !strings.ContainsAny(s, "/ \t\n\\")
}

// matches says whether metric name is the mapped name.
func matches(metric, name string) bool {
	return name != "" && (metric == name || strings.HasSuffix(metric, "_"+name))
}
