package servicerate

import (
	"math"
	"testing"
)

// The spread of a busy-time estimate is the 95% half-width of its
// periods' mean rate, relative; one period has none.
func TestPeriodSpread(t *testing.T) {
	var p periodSpread
	p.add(100)
	if p.relative() != 0 {
		t.Fatalf("one period: %v", p.relative())
	}
	for _, r := range []float64{110, 90, 100, math.Inf(1), 0} { // the last two are no rates
		p.add(r)
	}
	want := 1.96 * math.Sqrt(200.0/3/4) / 100 // sd 8.16 over 4 periods
	if math.Abs(p.relative()-want) > 1e-9 {
		t.Fatalf("relative %v, want %v", p.relative(), want)
	}
}
