package histo

import (
	"math/bits"
	"sync/atomic"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

const log2Buckets = 65

// Log2 counts values in power-of-two buckets: bucket i holds values v with
// bits.Len64(v) == i, i.e. 2^(i-1) <= v < 2^i. Record and Publish belong to
// one writer; Snapshot and Metric may be called from any goroutine.
type Log2 struct {
	local    [log2Buckets]uint64
	localSum uint64
	pub      [log2Buckets]atomic.Uint64
	pubSum   atomic.Uint64
}

// Record adds one value.
func (h *Log2) Record(v uint64) {
	h.local[bits.Len64(v)]++
	h.localSum += v
}

// RecordN adds n copies of v.
func (h *Log2) RecordN(v, n uint64) {
	h.local[bits.Len64(v)] += n
	h.localSum += v * n
}

// Publish makes the writer's counts visible to readers.
func (h *Log2) Publish() {
	for i, c := range h.local {
		if h.pub[i].Load() != c {
			h.pub[i].Store(c)
		}
	}
	h.pubSum.Store(h.localSum)
}

// Snapshot returns the published counts and sum.
func (h *Log2) Snapshot() (counts [log2Buckets]uint64, sum uint64) {
	for i := range counts {
		counts[i] = h.pub[i].Load()
	}
	return counts, h.pubSum.Load()
}

// AddTo accumulates the published counts into a merged snapshot.
func (h *Log2) AddTo(counts *[log2Buckets]uint64, sum *uint64) {
	c, s := h.Snapshot()
	for i := range c {
		counts[i] += c[i]
	}
	*sum += s
}

// Counts is a merged snapshot of several Log2 histograms.
type Counts struct {
	Buckets [log2Buckets]uint64
	Sum     uint64
}

// Add merges h's published counts.
func (c *Counts) Add(h *Log2) { h.AddTo(&c.Buckets, &c.Sum) }

// Cumulative gives the counts as a Prometheus-style histogram: the total,
// the sum and the cumulative count at each bucket's upper bound; scale
// converts a recorded value to the metric's base unit (e.g. seconds per
// nanosecond).
func (c *Counts) Cumulative(scale float64) (total uint64, sum float64, upper map[float64]uint64) {
	upper = make(map[float64]uint64, log2Buckets)
	var cum uint64
	for _, n := range c.Buckets {
		total += n
	}
	// Bucket i's values are < 2^i: its upper bound is (2^i - 1) * scale.
	for i, n := range c.Buckets {
		cum += n
		if i > 0 && i < 50 {
			upper[float64(uint64(1)<<i-1)*scale] = cum
		}
	}
	return total, float64(c.Sum) * scale, upper
}

// Precise is an HdrHistogram of nanoseconds (1 ns to 1 hour, 3 significant
// digits) owned by one goroutine and read after it finishes. Count, sum,
// minimum and maximum are kept exactly beside it, so only the percentiles
// carry the histogram's rounding (reported with them).
type Precise struct {
	h        *hdr.Histogram
	min, max int64
	sum      float64
}

// NewPrecise allocates the histogram (before the hot loop starts).
func NewPrecise() *Precise { return &Precise{h: hdr.New(1, 3_600_000_000_000, 3)} }

// Record adds one value in nanoseconds; values out of range are clamped so
// a wild outlier is still counted.
func (p *Precise) Record(ns int64) { p.RecordN(ns, 1) }

// RecordN adds n copies of a value in nanoseconds.
func (p *Precise) RecordN(ns, n int64) {
	if n <= 0 {
		return
	}
	if ns < 1 {
		ns = 1
	}
	if ns > p.h.HighestTrackableValue() {
		ns = p.h.HighestTrackableValue()
	}
	if p.h.TotalCount() == 0 || ns < p.min {
		p.min = ns
	}
	if ns > p.max {
		p.max = ns
	}
	p.sum += float64(ns) * float64(n)
	_ = p.h.RecordValues(ns, n)
}

// Merge adds another histogram's counts.
func (p *Precise) Merge(o *Precise) {
	if o.h.TotalCount() == 0 {
		return
	}
	if p.h.TotalCount() == 0 || o.min < p.min {
		p.min = o.min
	}
	p.max = max(p.max, o.max)
	p.sum += o.sum
	p.h.Merge(o.h)
}

// Summary is the distribution as reported in results (nanoseconds). Count,
// mean, min and max are exact; each percentile is the top of its
// histogram bucket, so the true percentile lies in [P − rounding, P].
type Summary struct {
	Count uint64  `json:"count"`
	Mean  float64 `json:"mean_ns"`
	Min   int64   `json:"min_ns"`
	P50   int64   `json:"p50_ns"`
	P90   int64   `json:"p90_ns"`
	P99   int64   `json:"p99_ns"`
	P999  int64   `json:"p999_ns"`
	Max   int64   `json:"max_ns"`
	// Rounding of P50, P90, P99 and P999 (at most 1/1024 of the value).
	Rounding Rounding `json:"rounding_ns"`
}

// Rounding is how far below each reported percentile the true one may be.
type Rounding struct {
	P50  int64 `json:"p50"`
	P90  int64 `json:"p90"`
	P99  int64 `json:"p99"`
	P999 int64 `json:"p999"`
}

// Summary returns count, mean, the extremes and the percentiles.
func (p *Precise) Summary() Summary {
	h := p.h
	if h.TotalCount() == 0 {
		return Summary{}
	}
	s := Summary{Count: uint64(h.TotalCount()), Mean: p.sum / float64(h.TotalCount()), Min: p.min, Max: p.max}
	// A percentile is never reported outside the exact extremes.
	at := func(q float64) (int64, int64) {
		v := h.ValueAtQuantile(q)
		r := v - p.lowestEquivalent(v)
		if v > p.max {
			v = p.max
		}
		if v-r < p.min {
			r = v - p.min
		}
		return v, r
	}
	s.P50, s.Rounding.P50 = at(50)
	s.P90, s.Rounding.P90 = at(90)
	s.P99, s.Rounding.P99 = at(99)
	s.P999, s.Rounding.P999 = at(99.9)
	return s
}

// lowestEquivalent is the smallest value that shares v's bucket.
func (p *Precise) lowestEquivalent(v int64) int64 {
	lo, hi := v/2, v // v/2 is in a lower bucket for every v > 1
	for lo+1 < hi {
		mid := lo + (hi-lo)/2
		if p.h.ValuesAreEquivalent(mid, v) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if v <= 1 || !p.h.ValuesAreEquivalent(hi, v) {
		return v
	}
	return hi
}

// CountAbove returns how many recorded values exceed ns.
func (p *Precise) CountAbove(ns int64) uint64 {
	var n int64
	it := p.h.Distribution()
	for _, b := range it {
		if b.From > ns {
			n += b.Count
		}
	}
	return uint64(n)
}

// Quantiles returns the values at the given percentiles (0 when empty).
func (p *Precise) Quantiles(q ...float64) [5]int64 {
	var out [5]int64
	if p.h.TotalCount() == 0 {
		return out
	}
	for i := 0; i < len(q) && i < len(out); i++ {
		out[i] = p.h.ValueAtQuantile(q[i])
	}
	return out
}
