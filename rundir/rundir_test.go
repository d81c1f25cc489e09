package rundir

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A job sweep's plan says the topic its job reads, as driver:subject.
func TestPlanFactsJobInput(t *testing.T) {
	for _, tc := range []struct{ plan, want string }{
		{`{"job":{"input":"jetstream://127.0.0.1:4222/ysb.in?group=ysb"}}`, "jetstream:ysb.in"},
		{`{"job":{"input":"kafka://broker:9092/events"}}`, "kafka:events"},
		{`{"relay":true}`, ""},
		{`{"job":{"input":"no-url"}}`, ""},
	} {
		s := Summary{Plan: json.RawMessage(tc.plan)}
		if got := s.PlanFacts().JobInput(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.plan, got, tc.want)
		}
	}
}

// TestCheckResults: run directories go inside the working directory, or
// outside it only into an existing directory the user can write in.
func TestCheckResults(t *testing.T) {
	cwd, _ := os.Getwd()
	mine := t.TempDir()
	for _, tc := range []struct {
		root string
		ok   bool
	}{
		{"runs", true},
		{filepath.Join(cwd, "runs/deeper"), true},
		{mine, true},
		{filepath.Join(mine, "missing"), false},
		{"../../../../../../../../nonexistent-results", false},
	} {
		err := CheckResults(tc.root)
		if (err == nil) != tc.ok {
			t.Errorf("CheckResults(%s) = %v, want ok %v", tc.root, err, tc.ok)
		}
	}
	if os.Geteuid() != 0 { // root writes anywhere
		theirs := filepath.Join(t.TempDir(), "theirs")
		if err := os.Mkdir(theirs, 0o555); err != nil {
			t.Fatal(err)
		}
		if err := CheckResults(theirs); err == nil || !strings.Contains(err.Error(), "not a directory you can write in") {
			t.Errorf("a directory not writable: %v", err)
		}
	}
}
