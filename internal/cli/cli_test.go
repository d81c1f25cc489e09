package cli

import (
	"testing"
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
