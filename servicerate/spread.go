package servicerate

import "math"

// periodSpread gathers the rates of a busy-time estimate's periods, for
// the estimate's own spread.
type periodSpread struct {
	n          int
	sum, sumSq float64
}

func (p *periodSpread) add(rate float64) {
	if rate > 0 && !math.IsInf(rate, 0) {
		p.n++
		p.sum += rate
		p.sumSq += rate * rate
	}
}

// relative is the half-width of a 95% interval of the periods' mean rate
// over that mean (0: fewer than two periods). The periods of one trial
// are not independent draws (a burst spans two), so it is a floor on the
// estimate's spread, not its whole error. The interval is Student's: an
// estimate of three periods whose rates happened to lie close together
// knows its spread no better than three draws tell (the normal's 1.96
// gave a window ±0.1% from a handful of periods, and a tie was missed).
func (p *periodSpread) relative() float64 {
	if p.n < 2 || p.sum <= 0 {
		return 0
	}
	mean := p.sum / float64(p.n)
	variance := max(0, (p.sumSq-float64(p.n)*mean*mean)/float64(p.n-1))
	return min(MaxSpread, studentT975(p.n-1)*math.Sqrt(variance/float64(p.n))/mean)
}

// MaxSpread caps a spread: at ±100% an estimate knows nothing of its rate
// but that it is one, and a job agent's spread above it is refused (a
// few periods far apart gave 1.74, Student's t at two degrees of freedom
// being 4.3).
const MaxSpread = 1.0

// t975 are Student's t quantiles at 0.975 for 1 to 30 degrees of freedom.
var t975 = [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}

// studentT975 is the 0.975 quantile of Student's t with df degrees of
// freedom: tabled to 30, then the first Cornish-Fisher term over the
// normal's 1.96 (within 0.1% of the exact value from 31 on).
func studentT975(df int) float64 {
	if df >= 1 && df <= len(t975) {
		return t975[df-1]
	}
	const z = 1.959964
	return z + (z*z*z+z)/(4*float64(df))
}
