package sender

import (
	"fmt"
	"math"
	"math/bits"
)

// ConstantSchedule is a constant rate's Schedule: slot k (one bucket) is
// due at Start + floor(k * num / den) TSC ticks. The 128-bit product keeps the
// schedule exact over any run length, so there is no drift to correct.
type ConstantSchedule struct {
	Start uint64
	num   uint64 // ticks per slot, times den
	den   uint64
}

// rateScale keeps a thousandth of a tuple per second of rate precision.
const rateScale = 1000

// NewConstantSchedule builds the schedule for sending one bucket of
// bucketSize tuples per slot at rate tuples per second with a TSC of hz ticks per second.
func NewConstantSchedule(start uint64, hz float64, bucketSize int, rate float64) (ConstantSchedule, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return ConstantSchedule{}, fmt.Errorf("rate must be positive, got %v", rate)
	}
	if bucketSize < 1 {
		return ConstantSchedule{}, fmt.Errorf("bucket size must be at least 1 tuple, got %d", bucketSize)
	}
	num := math.Round(float64(bucketSize) * hz * rateScale)
	den := math.Round(rate * rateScale)
	if den < 1 || num >= math.MaxUint64 || num < den {
		return ConstantSchedule{}, fmt.Errorf("rate %.3f tuples/s with buckets of %d tuples gives a slot shorter than one TSC tick", rate, bucketSize)
	}
	return ConstantSchedule{Start: start, num: uint64(num), den: uint64(den)}, nil
}

// Due returns the TSC time at which slot k should be sent.
func (p ConstantSchedule) Due(k uint64) uint64 {
	hi, lo := bits.Mul64(k, p.num)
	if hi >= p.den { // beyond 2^64 ticks (centuries): saturate rather than fault
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, p.den)
	return p.Start + q
}

// SlotTicks is the slot length in (fractional) ticks: the budget of one send.
func (p ConstantSchedule) SlotTicks() float64 { return float64(p.num) / float64(p.den) }

// SlotsBefore returns how many slots are due strictly before TSC time end:
// what the schedule calls for in [Start, end).
func (p ConstantSchedule) SlotsBefore(end uint64) uint64 {
	if end <= p.Start {
		return 0
	}
	// smallest k with Due(k) >= end is ceil((end-Start)*den/num)
	hi, lo := bits.Mul64(end-p.Start, p.den)
	if hi >= p.num {
		return math.MaxUint64
	}
	q, r := bits.Div64(hi, lo, p.num)
	if r != 0 {
		q++
	}
	return q
}
