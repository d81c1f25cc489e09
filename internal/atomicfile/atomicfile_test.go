package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWriteReplacesWholeOrNotAtAll(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.json")
	if err := Write(path, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "first" {
		t.Fatalf("got %q", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
	// a failing fill leaves the old file and no temporary one
	err := WriteWith(path, 0o644, func(w io.Writer) error {
		w.Write([]byte("half"))
		return errors.New("disk full")
	})
	if err == nil {
		t.Fatal("a failed fill was not an error")
	}
	if b, _ := os.ReadFile(path); string(b) != "first" {
		t.Errorf("a failed write replaced the file: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}

// TestPlantedLinkIsNotWrittenThrough: a run directory from elsewhere may
// hold a symbolic link where the old code wrote PATH.tmp; the write goes to
// a new file of its own, and the link's target is untouched.
func TestPlantedLinkIsNotWrittenThrough(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "victim")
	if err := os.WriteFile(target, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "analysis.json")
	if err := os.Symlink(target, path+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Errorf("the write went through the planted link: %q", b)
	}
	if b, _ := os.ReadFile(path); string(b) != "{}" {
		t.Errorf("got %q", b)
	}
}

// TestTarget: an output flag's file is written new, replaced only when
// told (its mode kept), and never when it is a device, a FIFO or a
// directory.
func TestTarget(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine.hgrm")
	if err := os.WriteFile(mine, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(mine, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path    string
		replace bool
		mode    os.FileMode
		want    string
	}{
		{filepath.Join(dir, "new.hgrm"), false, 0o644, ""},
		{mine, false, 0, "exists: give --force"},
		{mine, true, 0o600, ""},
		{link, false, 0, "symbolic link"},
		{link, true, 0o644, ""},
		{"/dev/null", true, 0, "a character device"},
		{fifo, true, 0, "a FIFO"},
		{dir, true, 0, "a directory"},
	} {
		mode, err := Target(tc.path, tc.replace, 0o644)
		if tc.want == "" && (err != nil || mode != tc.mode) || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Target(%s, %v) = %v, %v; want %v %q", tc.path, tc.replace, mode, err, tc.mode, tc.want)
		}
	}
}
