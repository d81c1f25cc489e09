package e2e

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Run directories are shared between people: every file in one is
// hostile to analyze, report, invariants, diagnose and logs. These tests
// build small files that announce huge work and check that every
// subcommand ends in bounded time and memory, with a non-zero exit and a
// message, never a kill or a hang.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// logBlock frames payload as a version 2 profiler block of records records.
func logBlock(codec byte, records uint32, payload []byte) []byte {
	h := make([]byte, 24)
	copy(h, "CPLB")
	h[4], h[5] = 2, codec
	binary.LittleEndian.PutUint32(h[8:], records)
	binary.LittleEndian.PutUint32(h[12:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[16:], crc32.Checksum(payload, castagnoli))
	binary.LittleEndian.PutUint32(h[20:], crc32.Checksum(h[:20], castagnoli))
	return append(h, payload...)
}

// runBlock is a block of one entry: n records at one TSC with ids from id.
func runBlock(tsc, id uint64, n uint32) []byte {
	p := binary.AppendUvarint(nil, tsc)
	p = binary.AppendVarint(p, int64(id))
	p = binary.AppendUvarint(p, uint64(n-1))
	return logBlock(0, n, p)
}

// hostileRunDir is a one-node run directory whose logs are written by put.
func hostileRunDir(t *testing.T, put func(profiles string)) string {
	t.Helper()
	dir := t.TempDir()
	profiles := filepath.Join(dir, "profiles", "a")
	if err := os.MkdirAll(profiles, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"format.json":  `{"format": "cloudprofiler-go run directory", "version": 2}`,
		"config.json":  `{"agents": [{"role": "receiver", "tsc_hz": 1e9}]}`,
		"summary.json": `{}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put(profiles)
	return dir
}

// boundedRun runs cpsweep with args under a 4 GiB address-space guard and
// returns its exit code, output and peak resident memory in MiB.
func boundedRun(t *testing.T, within time.Duration, args ...string) (int, string, float64) {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", `ulimit -v 4194304 && exec "$0" "$@"`, filepath.Join(binDir, "cpsweep")}, args...)...)
	var out Output
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The peak is the kernel's VmHWM of the process, read until it exits:
	// exec gives it a new address space, so it is cpsweep's own (the
	// rusage of a child started by vfork carries this test's own peak).
	rss := 0.0
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	deadline := time.After(within)
	var err error
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-deadline:
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("cpsweep %s: still running after %v (a hang)\n%s", strings.Join(args, " "), within, out.String())
		case <-time.After(5 * time.Millisecond):
			if b, rerr := os.ReadFile(status); rerr == nil && strings.Contains(string(b), "cpsweep") {
				for _, line := range strings.Split(string(b), "\n") {
					if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
						kb, _ := strconv.ParseFloat(f[1], 64)
						rss = max(rss, kb/1024)
					}
				}
			}
		}
	}
	code := ExitCode(err)
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("cpsweep %s: killed by %v\n%s", strings.Join(args, " "), ws.Signal(), out.String())
	}
	return code, out.String(), rss
}

// TestHostileLogsCannotExhaustTheAnalyses: a 1 KB log whose blocks
// announce 671 M records at one instant, and a 4 KB zstd block that
// inflates to 4 GiB, against every subcommand that reads logs.
func TestHostileLogsCannotExhaustTheAnalyses(t *testing.T) {
	announce := hostileRunDir(t, func(profiles string) {
		var log []byte
		for i := 0; i < 40; i++ { // 40 blocks of 16 M records: 671 M
			log = append(log, runBlock(1000, uint64(i)<<24, 1<<24)...)
		}
		for _, ch := range []string{"emit.0.log", "receive.0.log"} {
			if err := os.WriteFile(filepath.Join(profiles, ch), log, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(profiles, "activity.thread0.log"), log, 0o644); err != nil {
			t.Fatal(err)
		}
	})
	// State changes only: the activity graph alone must bound itself.
	states := hostileRunDir(t, func(profiles string) {
		var log []byte
		for i := 0; i < 40; i++ {
			log = append(log, runBlock(1000, uint64(i)<<24, 1<<24)...)
		}
		for _, ch := range []string{"activity.thread0.log", "activity.consumer.log"} {
			if err := os.WriteFile(filepath.Join(profiles, ch), log, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
	bomb := hostileRunDir(t, func(profiles string) {
		enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
		payload := enc.EncodeAll(make([]byte, 4<<30-1), nil)
		log := logBlock(1, 1<<20, payload)
		if err := os.WriteFile(filepath.Join(profiles, "emit.0.log"), log, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(profiles, "receive.0.log"), runBlock(5, 1, 1), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if fi, _ := os.Stat(filepath.Join(announce, "profiles", "a", "emit.0.log")); fi.Size() > 2048 {
		t.Fatalf("the announcing log is %d bytes", fi.Size())
	}
	for _, tc := range []struct {
		name string
		args []string
		ok   bool // the log is intact (only large): reading it is no error
	}{
		{"analyze", []string{"analyze", announce}, false},
		{"analyze --pag", []string{"analyze", "--pag", announce}, false},
		{"report", []string{"report", announce}, false},
		{"invariants", []string{"invariants", "--operator-max", "1ms", announce}, false},
		{"analyze --pag on state changes", []string{"analyze", "--pag", states}, false},
		{"invariants on state changes", []string{"invariants", "--progress-max", "100ms", states}, false},
		{"logs stats", []string{"logs", "stats", filepath.Join(announce, "profiles", "a", "emit.0.log")}, true},
		{"analyze a zstd bomb", []string{"analyze", bomb}, false},
		{"report a zstd bomb", []string{"report", bomb}, false},
		{"logs stats a zstd bomb", []string{"logs", "stats", filepath.Join(bomb, "profiles", "a", "emit.0.log")}, false},
	} {
		start := time.Now()
		code, out, rss := boundedRun(t, 2*time.Minute, tc.args...)
		t.Logf("%s: exit %d in %v, peak RSS %.0f MiB", tc.name, code, time.Since(start).Round(time.Millisecond), rss)
		if (code == 0) != tc.ok {
			t.Errorf("%s: exit %d on a hostile run directory\n%s", tc.name, code, out)
		}
		if rss > 1536 {
			t.Errorf("%s: peak RSS %.0f MiB", tc.name, rss)
		}
	}
}

// TestHostileFilesInARunDirectory: logs that are a FIFO or links to
// /dev/zero and /dev/urandom are refused at once by every reader, never
// read forever; every subcommand applies one policy (exit 1, the problem
// named, unless --partial); diagnose refuses a format version the others
// refuse.
func TestHostileFilesInARunDirectory(t *testing.T) {
	dir := hostileRunDir(t, func(profiles string) {
		if err := os.Symlink("/dev/zero", filepath.Join(profiles, "emit.0.log")); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(filepath.Join(profiles, "receive.0.log"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/dev/urandom", filepath.Join(profiles, "activity.consumer.log")); err != nil {
			t.Fatal(err)
		}
	})
	if err := os.Symlink("/dev/urandom", filepath.Join(dir, "analysis.json")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"analyze", dir},
		{"analyze", "--pag", dir},
		{"report", dir},
		{"invariants", "--progress-max", "100ms", dir},
		{"logs", "stats", filepath.Join(dir, "profiles", "a", "receive.0.log")},
	} {
		code, out, _ := boundedRun(t, 30*time.Second, args...)
		if code != 1 || !strings.Contains(out, "not a regular file") {
			t.Errorf("%s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
	}
	if code, out, _ := boundedRun(t, 30*time.Second, "report", "--partial", dir); code != 0 || !strings.Contains(out, "--partial: ") {
		t.Errorf("report --partial: exit %d\n%s", code, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "format.json"), []byte(`{"format": "cloudprofiler-go run directory", "version": 9}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"analyze", dir}, {"report", dir}, {"diagnose", dir}, {"invariants", "--progress-max", "1s", dir}} {
		if code, out, _ := boundedRun(t, 30*time.Second, args...); code != 1 || !strings.Contains(out, "format version 9") {
			t.Errorf("%s on format version 9: exit %d\n%s", args[0], code, out)
		}
	}
}
