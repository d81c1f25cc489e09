package sender

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/cloudprofiler-go/cp/scenarios"
)

// Schedule gives the TSC time at which each slot (one bucket) is due. The
// emission loop asks for slots in increasing order.
type Schedule interface {
	// Due returns the due time of slot k (k increases by one per call).
	Due(k uint64) uint64
	// SlotsBefore returns how many slots are due before TSC time end.
	SlotsBefore(end uint64) uint64
	// SlotTicks is the mean slot length in ticks (the lateness budget).
	SlotTicks() float64
}

// gridStep is the resolution of tabulated rate profiles, and maxGrid the
// most steps a table has (8 MiB).
const (
	gridStep = time.Millisecond
	maxGrid  = 1 << 20
)

// NewSchedule builds a thread's schedule: mean rate (tuples/s for this
// thread) shaped over a run of the given length, starting at TSC start.
func NewSchedule(shape scenarios.Shape, start uint64, hz float64, bucket int, rate float64, length time.Duration, thread int) (Schedule, error) {
	p, err := NewConstantSchedule(start, hz, bucket, rate)
	if err != nil {
		return nil, err
	}
	switch shape.Kind {
	case "", "constant":
		return p, nil
	case "poisson":
		return &poissonSchedule{start: start, mean: p.SlotTicks(), rng: rand.New(rand.NewPCG(shape.Seed, uint64(thread)+1)), next: float64(start)}, nil
	}
	if length <= 0 {
		return nil, fmt.Errorf("shape %s needs a run duration (it is laid out over the run)", shape.Kind)
	}
	// Tabulate the cumulative slot count on a 1 ms grid (coarser for runs
	// over maxGrid ms, so the table stays small), normalised so the run's
	// mean rate is rate.
	step := max(gridStep, length/maxGrid)
	n := int(length/step) + 1
	total := length.Seconds()
	cum := make([]float64, n+1)
	var sum float64
	mult := shape.Multiplier(total)
	for i := 1; i <= n; i++ {
		sum += mult((float64(i) - 0.5) * step.Seconds())
		cum[i] = sum
	}
	scale := 0.0
	if sum > 0 {
		scale = float64(n) / sum
	}
	slotsPerStep := rate * step.Seconds() / float64(bucket)
	for i := range cum {
		cum[i] *= scale * slotsPerStep
	}
	return &shapedSchedule{start: start, stepTicks: hz * step.Seconds(), cum: cum, mean: p.SlotTicks()}, nil
}

// profile is a tabulated schedule: cum[i] slots are due by the end of grid
// step i; within a step the rate is constant. Due walks a cursor forward.
type shapedSchedule struct {
	start     uint64
	stepTicks float64
	cum       []float64
	mean      float64
	cursor    int
}

func (p *shapedSchedule) Due(k uint64) uint64 {
	x := float64(k)
	for p.cursor+1 < len(p.cum) && p.cum[p.cursor+1] <= x {
		p.cursor++
	}
	if p.cursor+1 >= len(p.cum) { // past the run: keep the last step's rate
		last := len(p.cum) - 1
		per := p.cum[last] - p.cum[last-1]
		if per <= 0 {
			return math.MaxUint64
		}
		return p.start + uint64((float64(last)+(x-p.cum[last])/per)*p.stepTicks)
	}
	lo, hi := p.cum[p.cursor], p.cum[p.cursor+1]
	frac := (x - lo) / (hi - lo)
	return p.start + uint64((float64(p.cursor)+frac)*p.stepTicks)
}

func (p *shapedSchedule) SlotsBefore(end uint64) uint64 {
	if end <= p.start {
		return 0
	}
	t := float64(end-p.start) / p.stepTicks
	i := int(t)
	if i+1 >= len(p.cum) {
		return uint64(math.Ceil(p.cum[len(p.cum)-1]))
	}
	return uint64(math.Ceil(p.cum[i] + (t-float64(i))*(p.cum[i+1]-p.cum[i])))
}

func (p *shapedSchedule) SlotTicks() float64 { return p.mean }

// poisson spaces slots by exponential gaps with the mean slot length.
type poissonSchedule struct {
	start uint64
	mean  float64
	rng   *rand.Rand
	next  float64 // due time of slot k
	k     uint64
}

func (p *poissonSchedule) Due(k uint64) uint64 {
	for p.k < k {
		p.next += p.rng.ExpFloat64() * p.mean
		p.k++
	}
	return uint64(p.next)
}

// SlotsBefore continues the same arrival sequence up to end (called after
// the loop, when no more slots will be asked for).
func (p *poissonSchedule) SlotsBefore(end uint64) uint64 {
	for uint64(p.next) < end {
		p.Due(p.k + 1)
	}
	return p.k
}

func (p *poissonSchedule) SlotTicks() float64 { return p.mean }
