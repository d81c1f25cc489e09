package profiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAProfileDirectoryHoldsOnlyTheProfilersFiles: a configuration may
// name only the profiler's own kinds of file (NAME.log, NAME.ack, counters
// NAME.json) in the directory, and a log whose name a user's file already
// has is refused, the file left as it was.
func TestAProfileDirectoryHoldsOnlyTheProfilersFiles(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want string // "" accepted
	}{
		{`default: {handler: buffered, path: "{name}.log"}`, ""},
		{`default: {handler: buffered, path: "logs/{name}.log"}`, ""},
		{`counters: counters-{pid}.json`, ""},
		{`channels: {emit.0: {handler: buffered, path: thesis.txt}}`, "NAME.log or NAME.ack"},
		{`channels: {emit.0: {handler: buffered, path: .log}}`, "NAME.log or NAME.ack"},
		{`counters: notes.md`, "NAME.json"},
	} {
		h, err := ParseHandlers([]byte(tc.yaml), "test")
		if err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		err = h.CheckLocal()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.yaml, err, tc.want)
		}
	}

	dir := t.TempDir()
	mine := filepath.Join(dir, "emit.0.log")
	if err := os.WriteFile(mine, []byte("my thesis"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := NewIn(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Open("emit.0", Config{Handler: "buffered", Path: "emit.0.log"}); err == nil || !strings.Contains(err.Error(), "never overwrites a file it did not make") {
		t.Errorf("a log over a user's file: %v", err)
	}
	if _, err := p.Open("emit.1", Config{Handler: "buffered", Path: "emit.1.log"}); err != nil {
		t.Errorf("a new log beside it: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(mine); string(b) != "my thesis" {
		t.Errorf("the user's file holds %q", b)
	}
}
