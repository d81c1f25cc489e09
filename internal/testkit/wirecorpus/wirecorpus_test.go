package wirecorpus

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/wire/cases.json from Build")

// TestCorpusFileIsCurrent: the committed corpus is what Build writes, so
// that the file other implementations run is the one dgrecv is tested with
// (go test ./internal/testkit/wirecorpus -update rewrites it).
func TestCorpusFileIsCurrent(t *testing.T) {
	path := filepath.Join("..", "..", "..", File)
	want, err := Build().Encode()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date: run go test ./internal/testkit/wirecorpus -update", File)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tc := range c.Cases {
		if names[tc.Name] {
			t.Errorf("case %q twice", tc.Name)
		}
		names[tc.Name] = true
		if _, err := tc.Parts(); err != nil {
			t.Error(err)
		}
	}
	if len(c.Cases) < 30 {
		t.Errorf("only %d cases", len(c.Cases))
	}
}
