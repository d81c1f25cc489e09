package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cloudprofiler-go/cp/internal/atomicfile"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
)

// FormatVersion is written into every run directory (format.json and the
// summary). Version 2 added format.json and profiles/.
const FormatVersion = 2

// Writer writes one run directory (Create); Dir reads one (Open).
type Writer struct {
	Dir string
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// CheckResults says whether run directories may be written in root: inside
// the working directory root is made when missing; outside it (/, /etc,
// a home directory named by a plan from elsewhere) it must already be a
// directory the user can write in (a volume mounted for the run
// directories), so that no setting makes the tools create a folder
// where the user did not choose to; a plan's is shown before it is used.
func CheckResults(root string) error {
	abs, err := filepath.Abs(root)
	if err != nil {
		return fmt.Errorf("--results %s: %w", termsafe.Escape(root), err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("--results: the working directory: %w", err)
	}
	if rel, err := filepath.Rel(cwd, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return nil
	}
	st, err := os.Stat(abs)
	if err != nil {
		return fmt.Errorf("--results %s is outside the working directory and is not there: run directories are written outside it only into a directory of yours that exists (mkdir it first)", termsafe.Escape(root))
	}
	if !st.IsDir() || unix.Access(abs, unix.W_OK|unix.X_OK) != nil {
		return fmt.Errorf("--results %s is outside the working directory and is not a directory you can write in: run directories are written outside it only into one of yours that exists", termsafe.Escape(root))
	}
	return nil
}

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
