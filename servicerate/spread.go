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
// estimate's spread, not its whole error.
func (p *periodSpread) relative() float64 {
	if p.n < 2 || p.sum <= 0 {
		return 0
	}
	mean := p.sum / float64(p.n)
	variance := max(0, (p.sumSq-float64(p.n)*mean*mean)/float64(p.n-1))
	return 1.96 * math.Sqrt(variance/float64(p.n)) / mean
}
