package numfmt

import (
	"math"
	"strconv"
	"time"
)

// Digits is the number of significant digits of every formatted value.
const Digits = 4

// sig formats v with n significant digits in fixed notation ("9.660",
// "17.00", "1235").
func sig(v float64, n int) string {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	// Round first: 9.9996 at 4 digits is 10.00, one more integer digit.
	exp := int(math.Floor(math.Log10(math.Abs(v))))
	scale := math.Pow(10, float64(n-1-exp))
	r := math.Round(v*scale) / scale
	if e := int(math.Floor(math.Log10(math.Abs(r)))); e > exp {
		exp = e
	}
	return strconv.FormatFloat(r, 'f', max(0, n-1-exp), 64)
}

type unit struct {
	from float64 // smallest value shown in this unit
	div  float64
	name string
}

func scaled(v float64, n int, units []unit) string {
	i := 0
	for j, c := range units {
		if math.Abs(v) >= c.from {
			i = j
		}
	}
	s := sig(v/units[i].div, n)
	// 999.96 k rounds to "1000" k: say 1.000 M instead.
	if r, _ := strconv.ParseFloat(s, 64); math.Abs(r) >= 1000 && i+1 < len(units) && units[i+1].div >= 1000*units[i].div {
		i++
		s = sig(v/units[i].div, n)
	}
	if units[i].name == "" {
		return s
	}
	return s + " " + units[i].name
}

var rateUnits = []unit{{0, 1, "/s"}, {1e3, 1e3, "k/s"}, {1e6, 1e6, "M/s"}, {1e9, 1e9, "G/s"}}

// Rate formats tuples per second: "9.660 k/s", "1.235 M/s", "500.0 /s".
func Rate(v float64) string { return RateN(v, Digits) }

// RateN is Rate with n significant digits.
func RateN(v float64, n int) string {
	if v == 0 {
		return "0 /s"
	}
	return scaled(v, n, rateUnits)
}

// RateInterval formats the bounds of [lo, hi) with as many significant
// digits (at least Digits) as it takes for them to differ, so that a
// narrow interval never reads like an empty one.
func RateInterval(lo, hi float64) (string, string) {
	for n := Digits; ; n++ {
		a, b := RateN(lo, n), RateN(hi, n)
		if a != b || n >= 12 || lo == hi {
			return a, b
		}
	}
}

var durationUnits = []unit{{0, 1, "ns"}, {1e3, 1e3, "µs"}, {1e6, 1e6, "ms"}, {1e9, 1e9, "s"}}

// Ns formats nanoseconds: "385.1 ms", "10.00 ms", "7.000 µs", "12 ns".
// Below a microsecond the value is a whole number of nanoseconds.
func Ns(ns float64) string {
	if math.Abs(ns) < 1e3 {
		return strconv.FormatFloat(math.Round(ns), 'f', 0, 64) + " ns"
	}
	return scaled(ns, Digits, durationUnits)
}

// Duration is Ns for a time.Duration.
func Duration(d time.Duration) string { return Ns(float64(d)) }

var countUnits = []unit{{0, 1, ""}, {1e4, 1e3, "k"}, {1e7, 1e6, "M"}, {1e10, 1e9, "G"}}

// Count formats a count: exact below 10 000, then "12.35 k", "123.5 M".
func Count(v uint64) string {
	if v < 10_000 {
		return strconv.FormatUint(v, 10)
	}
	return scaled(float64(v), Digits, countUnits)
}

var byteUnits = []unit{{0, 1, "B"}, {1 << 10, 1 << 10, "KiB"}, {1 << 20, 1 << 20, "MiB"}, {1 << 30, 1 << 30, "GiB"}, {1 << 40, 1 << 40, "TiB"}}

// Bytes formats a size in binary units: "512 B", "1.500 MiB", "128.0 GiB".
func Bytes(v int64) string {
	if v < 1024 && v > -1024 {
		return strconv.FormatInt(v, 10) + " B"
	}
	return scaled(float64(v), Digits, byteUnits)
}
