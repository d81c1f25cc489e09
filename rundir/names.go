package rundir

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/cloudprofiler-go/cp/internal/atomicfile"
	"github.com/cloudprofiler-go/cp/internal/readfile"
)

// The files of a run directory, relative to it. rundir is their one
// owner: every other package names them through these, and reads and
// writes them through Open's Dir, Create's Writer, or (an analysis adding
// to a run directory) WriteFile, WriteWith and ReadFile.
const (
	FormatFile      = "format.json" // marks a run directory and names its format version
	ConfigFile      = "config.json"
	PlanFile        = "plan.yaml" // the sweep's settings as it ran: cpsweep --plan reads it, cpsweep rerun repeats it
	SummaryFile     = "summary.json"
	RelationFile    = "relation.json"
	TrialsFile      = "trials.json"
	TrialsCSVFile   = "trials.csv"
	DiagnosisFile   = "diagnosis.json"
	AnalysisFile    = "analysis.json"
	AnalysisCSVFile = "analysis.csv"
	PAGFile         = "pag.json"
	PAGCSVFile      = "pag.csv"
	ReportFile      = "report.html"
	SweepPlotFile   = "sweep.svg"
	ProfilesDir     = "profiles"
	TrialsDir       = "trials"
)

// TrialFileName is trial n's file, relative to the run directory.
func TrialFileName(n int) string { return fmt.Sprintf("%s/%03d.json", TrialsDir, n) }

// HgrmFile is the latency distribution at the answer of a trial's
// receiver, as HdrHistogram prints it.
func HgrmFile(trial, receiver int) string {
	return fmt.Sprintf("latency-at-answer-trial%03d-receiver%d.hgrm", trial, receiver)
}

// Path is name's path in the run directory dir.
func Path(dir, name string) string { return filepath.Join(dir, name) }

// WriteFile writes data to name in the run directory dir, atomically (a
// crash never leaves a half-written file).
func WriteFile(dir, name string, data []byte) error {
	return atomicfile.Write(filepath.Join(dir, name), data, 0o644)
}

// WriteWith writes name in the run directory dir with write, atomically.
func WriteWith(dir, name string, write func(io.Writer) error) error {
	return atomicfile.WriteWith(filepath.Join(dir, name), 0o644, write)
}

// ReadFile reads name in the run directory, a regular file of at most
// limit bytes directly inside the directory, never through a link
// (readfile.InDir): a file Open does not read itself.
func (d *Dir) ReadFile(name string, limit int64) ([]byte, error) {
	dir, base := filepath.Split(filepath.Join(d.Path, name))
	return readfile.LimitedInDir(dir, base, limit)
}
