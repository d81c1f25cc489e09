package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  bool
	}{
		{"500000", 5e5, false}, {"500k", 5e5, false}, {"2.5M", 2.5e6, false}, {"1e6", 1e6, false}, {"0", 0, false},
		{"", 0, true}, {"fast", 0, true}, {"-5", 0, true}, {"NaN", 0, true}, {"5T", 0, true},
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
