package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/profiler"
)

// TestLogsCommands writes a profiler log, damages one block, and reads it
// with cpsweep logs: the damage is named with its offset, everything else
// is printed and counted.
func TestLogsCommands(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.log")
	p := profiler.New(time.Hour)
	ch, err := p.Open("r", profiler.Config{Handler: profiler.HandlerBuffered, Path: path, BlockSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i < 500; i++ {
		ch.LogTS(i)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	second := strings.Index(string(data[4:]), "CPLB") + 4
	data[second+30] ^= 0xff // inside the second block's payload
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// Damage is named, and is an error unless --partial accepts what is
	// intact (the run directories' policy); the intact blocks are read
	// either way.
	out, err := exec.Command(filepath.Join(binDir, "cpsweep"), "logs", "stats", path).CombinedOutput()
	if ExitCode(err) != 1 || !strings.Contains(string(out), "400 records in 4 blocks") || !strings.Contains(string(out), "1 damaged region") ||
		!strings.Contains(string(out), "checksum") || !strings.Contains(string(out), "--partial") {
		t.Fatalf("logs stats: %v\n%s", err, out)
	}
	if out, err := exec.Command(filepath.Join(binDir, "cpsweep"), "logs", "stats", "--partial", path).CombinedOutput(); err != nil || !strings.Contains(string(out), "400 records in 4 blocks") {
		t.Fatalf("logs stats --partial: %v\n%s", err, out)
	}
	if err := exec.Command(filepath.Join(binDir, "cpsweep"), "logs", "cat", path).Run(); ExitCode(err) != 1 {
		t.Fatalf("logs cat of a damaged log without --partial: %v", err)
	}
	cmd := exec.Command(filepath.Join(binDir, "cpsweep"), "logs", "cat", "--partial", path)
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	if len(lines) != 400 || !strings.HasSuffix(lines[0], ",0") || !strings.HasSuffix(lines[100], ",200") {
		t.Fatalf("logs cat: %d lines, first %q, 101st %q", len(lines), lines[0], lines[100])
	}
}
