package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/scenarios"

	"github.com/spf13/pflag"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  bool
	}{
		{"500000", 5e5, false}, {"500k", 5e5, false}, {"2.5M", 2.5e6, false}, {"1e6", 1e6, false}, {"0", 0, false},
		{"1G", 1e9, false}, {"2K", 2e3, false},
		{"", 0, true}, {"fast", 0, true}, {"-5", 0, true}, {"NaN", 0, true}, {"5T", 0, true},
		// milli or mega: refused, never guessed
		{"2m", 0, true}, {"1g", 0, true},
	} {
		got, err := ParseRate(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseRate(%q) = %v, %v", tc.in, got, err)
		}
	}
}

// TestRateFlag: a rate flag parses once, when it is read; a bad value is
// the flag's error, and the default prints in the form it is typed.
func TestRateFlag(t *testing.T) {
	f := pflag.NewFlagSet("x", pflag.ContinueOnError)
	v := 500e3
	RateVar(f, &v, "rate", "")
	if got := f.Lookup("rate").DefValue; got != "500k" {
		t.Errorf("default shows as %q", got)
	}
	if err := f.Parse([]string{"--rate", "2.5M"}); err != nil || v != 2.5e6 {
		t.Fatalf("2.5M: %v %v", v, err)
	}
	if err := f.Parse([]string{"--rate", "fast"}); err == nil || !strings.Contains(err.Error(), "not a number of tuples per second") {
		t.Fatalf("bad rate: %v", err)
	}
	for _, v := range []float64{0, 1, 1500, 17_001, 2e6, 1.25e6} {
		r := Rate(v)
		var back Rate
		if err := back.Set(r.String()); err != nil || back != r {
			t.Errorf("%v prints as %q and reads back as %v (%v)", v, r.String(), back, err)
		}
	}
}

// TestChoiceFlags: CPU lists and shapes are checked when the flag is read;
// a CPU choice resolves once the thread count is known, and never before
// (a bad thread count is an error, not a panic).
func TestChoiceFlags(t *testing.T) {
	f := pflag.NewFlagSet("x", pflag.ContinueOnError)
	var cpus CPUChoice
	var shape scenarios.Shape
	CPUChoiceVar(f, &cpus, "cpus", "none", "")
	ShapeVar(f, &shape, "shape", "constant", "")
	for _, tc := range []struct {
		args []string
		bad  string
	}{
		{[]string{"--cpus", "0,2-3"}, ""},
		{[]string{"--cpus", "x-y"}, "not a CPU number"},
		{[]string{"--shape", "sine:0.2,1s"}, ""},
		{[]string{"--shape", "wobble"}, "unknown shape"},
	} {
		err := f.Parse(tc.args)
		if (tc.bad == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.bad)
		}
	}
	if shape.Kind != "sine" || shape.Amp != 0.2 {
		t.Errorf("shape %+v", shape)
	}
	if got, err := cpus.Resolve(2); err != nil || len(got) != 3 || got[0] != 0 || got[2] != 3 {
		t.Errorf("0,2-3 resolves to %v, %v", got, err)
	}
	if _, err := cpus.Resolve(-1); err == nil {
		t.Error("a thread count of -1 resolved")
	}
}

func TestProfileAt(t *testing.T) {
	for _, tc := range []struct {
		in    string
		frac  float64
		limit bool
		ok    bool
	}{
		{"limit", 0, true, true},
		{"0.9", 0.9, false, true},
		{"1", 1, false, true},
		{"0", 0, false, false},
		{"1.5", 0, false, false},
		{"NaN", 0, false, false},
		{"fail", 0, false, false},
	} {
		var p ProfileAt
		err := p.Set(tc.in)
		if (err == nil) != tc.ok || (tc.ok && (p.Frac != tc.frac || p.Limit != tc.limit)) {
			t.Errorf("%q: %+v, %v", tc.in, p, err)
		}
		if tc.ok && p.String() != tc.in {
			t.Errorf("%q prints as %q", tc.in, p.String())
		}
	}
}

// TestARefusedProfileKeepsTheUsersDirectory: a refused handler
// configuration removes a --profile-dir the run made, never one that was
// there before (empty or not).
func TestARefusedProfileKeepsTheUsersDirectory(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("default: {handler: buffered, path: thesis.txt}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	existing := t.TempDir()
	made := filepath.Join(t.TempDir(), "new")
	for dir, stays := range map[string]bool{existing: true, made: false} {
		if _, err := OpenProfile("dgrecv", bad, "", dir, 0, 0); err == nil {
			t.Fatalf("%s: a configuration naming thesis.txt was accepted", dir)
		}
		if _, err := os.Stat(dir); (err == nil) != stays {
			t.Errorf("%s: stat after the refusal: %v; it should stay: %v", dir, err, stays)
		}
	}
}
