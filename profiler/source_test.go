package profiler

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProfileDirConfinement: a confined profiler opens logs only inside its
// directory: absolute paths, ".." and a symbolic link leading out are
// refused, and nothing is created outside.
func TestProfileDirConfinement(t *testing.T) {
	outside := t.TempDir()
	dir := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "target.log"), filepath.Join(dir, "link.log")); err != nil {
		t.Fatal(err)
	}
	p, err := NewIn(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i, path := range []string{filepath.Join(outside, "abs.log"), "../x.log", "escape/y.log", "link.log"} {
		if _, err := p.Open(fmt.Sprint("c", i), Config{Handler: HandlerBuffered, Path: path}); err == nil {
			t.Errorf("path %q was opened", path)
		}
	}
	c, err := p.Open("ok", Config{Handler: HandlerBuffered, Path: "sub.log"})
	if err != nil {
		t.Fatal(err)
	}
	c.LogTS(1)
	p.CountersPath = "/tmp/counters-outside.json"
	err = p.Close()
	if err == nil || !strings.Contains(err.Error(), "counters") {
		t.Errorf("an absolute counters path was not refused at close: %v", err)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 0 {
		t.Fatalf("files were created outside the profile directory: %v", entries)
	}
	if recs := readAll(t, filepath.Join(dir, "sub.log")); len(recs) != 1 {
		t.Fatalf("the log inside has %d records, want 1", len(recs))
	}
	h := &Handlers{Default: Config{Handler: HandlerBuffered, Path: "/abs/{name}.log"}}
	if err := h.CheckLocal(); err == nil {
		t.Fatal("CheckLocal accepted an absolute path")
	}
	if _, err := p.Apply(h); err == nil {
		t.Fatal("Apply accepted an absolute path on a confined profiler")
	}
}

// TestWriteErrorsCountLostRecords: a log that cannot be written (here
// /dev/full: every write fails with ENOSPC) is reported at Close with its
// path and how many records were lost.
func TestWriteErrorsCountLostRecords(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	for _, cfg := range []Config{
		{Handler: HandlerBuffered, Path: "/dev/full", BlockSize: 4, Codec: "none"},
		{Handler: HandlerBuffered, Path: "/dev/full", BlockSize: 4},
		{Handler: HandlerIdentity, Path: "/dev/full"},
	} {
		p := New(time.Second)
		c, err := p.Open("full", cfg)
		if err != nil {
			t.Fatal(err)
		}
		for id := uint64(0); id < 1000; id++ {
			c.LogTS(id)
		}
		err = p.Close()
		var we *WriteError
		if !errors.As(err, &we) {
			t.Fatalf("%s: close returned %v, want a WriteError", cfg.Handler, err)
		}
		if we.Path != "/dev/full" || we.Records != 1000 || we.Lost != 1000 || !strings.Contains(err.Error(), "1000 of 1000 records lost") {
			t.Errorf("%s: %v (lost %d of %d)", cfg.Handler, err, we.Lost, we.Records)
		}
	}
}
