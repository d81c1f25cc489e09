package readfile

import (
	"fmt"
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

// TestOpenNeverOpensADevice: what is not a regular file is refused
// without being opened. Opening has effects: each open of /dev/ptmx
// allocates a pseudo-terminal, and a FIFO's open for reading releases a
// writer blocked in its own open, which is what this test watches. The
// same file reached through a hard and a symbolic link has one ID.
func TestOpenNeverOpensADevice(t *testing.T) {
	dir := t.TempDir()
	ptmx := filepath.Join(dir, "ptmx.log")
	if err := os.Symlink("/dev/ptmx", ptmx); err != nil {
		t.Fatal(err)
	}
	if f, err := Open(ptmx); err == nil || !strings.Contains(err.Error(), "regular") {
		if f != nil {
			f.Close()
		}
		t.Fatalf("Open(link to /dev/ptmx): %v", err)
	}
	if _, _, err := Identify(ptmx); err == nil {
		t.Fatal("Identify(link to /dev/ptmx) accepted it")
	}
	fifo := filepath.Join(dir, "fifo.log")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	opened := make(chan *os.File, 1)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // blocks until a reader opens
		if err == nil {
			opened <- w
		}
	}()
	time.Sleep(50 * time.Millisecond)
	if _, err := Open(fifo); err == nil || !strings.Contains(err.Error(), "regular") {
		t.Fatalf("Open(FIFO): %v", err)
	}
	select {
	case w := <-opened:
		w.Close()
		t.Fatal("Open opened the FIFO for reading (the blocked writer was released)")
	case <-time.After(200 * time.Millisecond):
	}
	// release the writer
	if r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
		(<-opened).Close()
		r.Close()
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	hard, soft := filepath.Join(dir, "hard"), filepath.Join(dir, "soft")
	if err := os.Link(file, hard); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, soft); err != nil {
		t.Fatal(err)
	}
	id, size, err := Identify(file)
	if err != nil || size != 1 {
		t.Fatal(id, size, err)
	}
	for _, p := range []string{hard, soft} {
		if other, _, err := Identify(p); err != nil || other != id {
			t.Errorf("%s: %v %v, want the ID of %s (%v)", p, other, err, file, id)
		}
	}
	f, err := Open(soft)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 4)
	if n, _ := f.Read(b); n != 1 || b[0] != 'x' {
		t.Errorf("read %q through the link", b[:n])
	}
}

// TestKernelFilesAreRefused: a file of /proc or /sys is a "regular file"
// to stat, but /proc/kmsg waits for kernel messages forever and
// /proc/self/environ is no one's data file: refused at once, also behind
// a link, and a read that waits is cut by its deadline.
func TestKernelFilesAreRefused(t *testing.T) {
	dir := t.TempDir()
	kmsg := filepath.Join(dir, "plan.yaml")
	if err := os.Symlink("/proc/kmsg", kmsg); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{kmsg, "/proc/self/environ", "/proc/kmsg", "/sys/kernel/mm/transparent_hugepage/enabled"} {
		done := make(chan error, 1)
		go func() { _, err := Limited(p, 1<<20); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "refused") {
				t.Errorf("Limited(%s): %v, want refused", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Limited(%s) hangs", p)
		}
		if _, _, err := Identify(p); err == nil {
			t.Errorf("Identify(%s) accepted it", p)
		}
	}
}

// TestInDirTakesOnlyItsOwnFiles: a run directory's file is read only when
// it is a regular file inside the directory, never through a link.
func TestInDirTakesOnlyItsOwnFiles(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	secret := filepath.Join(other, "secret")
	if err := os.WriteFile(secret, []byte("root:*:20228:0"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/proc/kmsg", filepath.Join(dir, "kmsg.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, want string }{
		{"plan.yaml", ""},
		{"link.yaml", "symbolic link"},
		{"kmsg.yaml", "symbolic link"},
		{"sub", "directory"},
		{"../" + filepath.Base(other) + "/secret", "not a file name"},
		{"missing", "no such file"},
	} {
		b, err := LimitedInDir(dir, tc.name, 1<<20)
		switch {
		case tc.want == "" && (err != nil || string(b) != "name: x\n"):
			t.Errorf("%s: %q, %v", tc.name, b, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %q, %v; want an error saying %q", tc.name, b, err, tc.want)
		case strings.Contains(fmt.Sprint(err), "root:"):
			t.Errorf("%s: the error shows the file's content: %v", tc.name, err)
		}
	}
}

// TestYAMLErrorShowsNoText: a decoder's faults are told by line and kind,
// without a field's name or a value of the file.
func TestYAMLErrorShowsNoText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"yaml: unmarshal errors:\n  line 1: field root:*:20228:0 not found in type profiler.Handlers\n  line 2: field hunter2 not found in type x",
			"line 1: an unknown setting; line 2: an unknown setting (the file's text is not shown)"},
		{"yaml: unmarshal errors:\n  line 3: cannot unmarshal !!str `s3cret` into int", "line 3: a value of the wrong kind"},
		{"yaml: line 4: mapping values are not allowed in this context", "line 4: not valid YAML"},
		{"EOF", "not a YAML document"},
	} {
		got := YAMLError(fmt.Errorf("%s", tc.in)).Error()
		if !strings.Contains(got, tc.want) || strings.Contains(got, "root") || strings.Contains(got, "hunter2") || strings.Contains(got, "s3cret") {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
}
