package report

import "testing"

func TestTrimZeros(t *testing.T) {
	for in, want := range map[string]string{"10.00 µs": "10 µs", "2.500 ms": "2.5 ms", "100 k": "100 k", "500.0": "500", "0.0": "0", "1.050 M": "1.05 M"} {
		if got := trimZeros(in); got != want {
			t.Errorf("trimZeros(%q) = %q, want %q", in, got, want)
		}
	}
}
