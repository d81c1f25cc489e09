package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/cloudprofiler-go/cp/internal/atomicfile"
)

// FormatVersion is written into every run directory (format.json and the
// summary). Version 2 added format.json and profiles/.
const FormatVersion = 2

// Writer writes one run directory (Create); Dir reads one (Open).
type Writer struct {
	Dir string
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Create makes root/<UTC timestamp>-<name>/ (name sanitised).
func Create(root, name string, now time.Time) (*Writer, error) {
	if name == "" {
		name = "sweep"
	}
	dir := filepath.Join(root, now.UTC().Format("20060102T150405Z")+"-"+unsafeName.ReplaceAllString(name, "_"))
	if err := os.MkdirAll(filepath.Join(dir, TrialsDir), 0o755); err != nil {
		return nil, fmt.Errorf("create results directory: %w", err)
	}
	r := &Writer{Dir: dir}
	if err := r.writeFormat(); err != nil {
		return nil, err
	}
	return r, nil
}

// WriteJSON writes v as indented JSON to name inside the run directory,
// atomically (a crash never leaves a half-written file).
func (r *Writer) WriteJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	return r.write(name, append(b, '\n'))
}

// WritePlan writes the sweep's settings as it ran (plan.yaml), as the
// command line's plan file reads them back.
func (r *Writer) WritePlan(plan []byte) error { return r.write(PlanFile, plan) }

// NodeProfiles is where a node's collected profile logs go
// (profiles/NODE/; the node's name is the agent's, checked by the caller).
func (r *Writer) NodeProfiles(node string) string {
	return filepath.Join(r.Dir, ProfilesDir, node)
}

func (r *Writer) write(name string, data []byte) error {
	return atomicfile.Write(filepath.Join(r.Dir, name), data, 0o644)
}
