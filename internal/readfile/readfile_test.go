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
