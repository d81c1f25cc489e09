package servicerate

import (
	"math"
	"testing"
)

// The spread of a busy-time estimate is the 95% half-width of its
// periods' mean rate, relative, by Student's t; one period has none.
func TestPeriodSpread(t *testing.T) {
	var p periodSpread
	p.add(100)
	if p.relative() != 0 {
		t.Fatalf("one period: %v", p.relative())
	}
	for _, r := range []float64{110, 90, 100, math.Inf(1), 0} { // the last two are no rates
		p.add(r)
	}
	want := 3.182 * math.Sqrt(200.0/3/4) / 100 // sd 8.16 over 4 periods, 3 degrees of freedom
	if math.Abs(p.relative()-want) > 1e-9 {
		t.Fatalf("relative %v, want %v", p.relative(), want)
	}
}

// A spread is capped at ±100%: three periods far apart say nothing more.
func TestPeriodSpreadCapped(t *testing.T) {
	var p periodSpread
	for _, r := range []float64{100, 1000, 5000} {
		p.add(r)
	}
	if got := p.relative(); got != MaxSpread {
		t.Fatalf("relative %v, want the cap %v", got, MaxSpread)
	}
}

// Student's quantile falls towards the normal's as the periods grow, and
// joins the table smoothly past it.
func TestStudentT975(t *testing.T) {
	for _, c := range []struct {
		df   int
		want float64
	}{{1, 12.706}, {2, 4.303}, {10, 2.228}, {30, 2.042}, {40, 2.021}, {60, 2.000}, {120, 1.980}, {100000, 1.960}} {
		if got := studentT975(c.df); math.Abs(got-c.want) > 0.003 {
			t.Errorf("df %d: %.4f, want %.3f", c.df, got, c.want)
		}
	}
	for df := 1; df < 200; df++ {
		if studentT975(df+1) > studentT975(df) {
			t.Fatalf("not falling at %d degrees of freedom", df)
		}
	}
}
