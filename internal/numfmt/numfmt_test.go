package numfmt

import (
	"testing"
	"time"
)

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{Rate(0), "0 /s"},
		{Rate(10), "10.00 /s"},
		{Rate(500), "500.0 /s"},
		{Rate(9660), "9.660 k/s"},
		{Rate(17e3), "17.00 k/s"},
		{Rate(17_024), "17.02 k/s"},
		{Rate(999_960), "1.000 M/s"},
		{Rate(1.2345e6), "1.235 M/s"}, // round half to even is not used: 1.2345 -> 1.235
		{Rate(15.8e6), "15.80 M/s"},
		{Rate(2.5e9), "2.500 G/s"},
		{Ns(0), "0 ns"},
		{Ns(12.4), "12 ns"},
		{Ns(999.6), "1000 ns"},
		{Ns(7000), "7.000 µs"},
		{Ns(9_400), "9.400 µs"},
		{Ns(999_999), "1.000 ms"},
		{Duration(9999999 * time.Nanosecond), "10.00 ms"},
		{Duration(385089535 * time.Nanosecond), "385.1 ms"},
		{Ns(162_064_000), "162.1 ms"},
		{Duration(3 * time.Second), "3.000 s"},
		{Duration(90 * time.Second), "90.00 s"},
		{Ns(-49_000), "-49.00 µs"},
		{Count(0), "0"},
		{Count(9999), "9999"},
		{Count(12_345), "12.35 k"},
		{Count(12_345_678), "12.35 M"},
		{Count(360_000_000), "360.0 M"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestRateIntervalBoundsDiffer: the bounds of a narrow interval get the
// digits they need to differ (the report once read "[0.017, 0.017)").
func TestRateIntervalBoundsDiffer(t *testing.T) {
	for _, tc := range []struct {
		lo, hi         float64
		wantLo, wantHi string
	}{
		{17_000, 17_170, "17.00 k/s", "17.17 k/s"},
		{17_001, 17_004, "17.001 k/s", "17.004 k/s"},
		{1_000_000, 1_000_050, "1.0000 M/s", "1.0001 M/s"},
		{5e6, 5e6, "5.000 M/s", "5.000 M/s"},
	} {
		lo, hi := RateInterval(tc.lo, tc.hi)
		if lo != tc.wantLo || hi != tc.wantHi {
			t.Errorf("[%v, %v): %q %q, want %q %q", tc.lo, tc.hi, lo, hi, tc.wantLo, tc.wantHi)
		}
	}
}

func TestBytes(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		want string
	}{{0, "0 B"}, {512, "512 B"}, {1536, "1.500 KiB"}, {64 << 20, "64.00 MiB"}, {128 << 30, "128.0 GiB"}, {3 << 40, "3.000 TiB"}} {
		if got := Bytes(tc.v); got != tc.want {
			t.Errorf("Bytes(%d) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
