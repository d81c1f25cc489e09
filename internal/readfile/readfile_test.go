package readfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLimited(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path  string
		limit int64
		want  string // "" = read
	}{
		{small, 5, ""},
		{small, 4, "larger than 4"},
		{"/dev/zero", 1 << 20, "not a regular file"},
		{dir, 10, "not a regular file"},
		{filepath.Join(dir, "missing"), 10, "no such file"},
	} {
		b, err := Limited(tc.path, tc.limit)
		if tc.want == "" && (err != nil || string(b) != "12345") || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Limited(%s, %d) = %q, %v; want %q", tc.path, tc.limit, b, err, tc.want)
		}
	}
}

// TestOpenRefusesWhatIsNotAFile: a FIFO with no writer, links to devices
// and directories are refused at once, never waited on.
func TestOpenRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	zero := filepath.Join(dir, "zero.log")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	random := filepath.Join(dir, "random.json")
	if err := os.Symlink("/dev/urandom", random); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, zero, random, dir} {
		done := make(chan error, 1)
		go func() {
			f, err := Open(p)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("Open(%s): %v", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Open(%s) hangs", p)
		}
	}
	for _, p := range []string{file, link} {
		f, err := Open(p)
		if err != nil {
			t.Fatalf("Open(%s): %v", p, err)
		}
		f.Close()
	}
}
