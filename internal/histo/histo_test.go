package histo

import (
	"math"
	"sort"
	"testing"
)

func TestLog2PublishAndCumulative(t *testing.T) {
	var h Log2
	for _, v := range []uint64{0, 1, 2, 3, 4, 1000} {
		h.Record(v)
	}
	h.RecordN(5, 10)
	if c, _ := h.Snapshot(); c[3] != 0 {
		t.Fatal("counts visible before Publish")
	}
	h.Publish()
	var c Counts
	c.Add(&h)
	c.Add(&h) // merging two copies doubles everything
	if c.Buckets[3] != 2*(1+10) || c.Sum != 2*(1010+50) {
		t.Fatalf("bucket[3]=%d sum=%d", c.Buckets[3], c.Sum)
	}
	total, sum, upper := c.Cumulative(1e-9)
	if total != 32 || math.Abs(sum-2*(1010+50)*1e-9) > 1e-15 {
		t.Fatalf("count %d sum %g", total, sum)
	}
	// Bucket i's bound is 2^i-1 ns: the third is 2^3-1 = 7 ns, which holds
	// 0,1,2,3,4 and ten 5s, twice. Found by distance, since 7 × 1e-9 is
	// not exactly 7e-9 in floats.
	found := false
	for bound, cum := range upper {
		if math.Abs(bound-7e-9) < 1e-18 {
			found = true
			if cum != 30 {
				t.Fatalf("le=7ns cumulative %d, want 30", cum)
			}
		}
	}
	if !found {
		t.Fatalf("no 7 ns bound in %v", upper)
	}
}

func TestPreciseSummary(t *testing.T) {
	p := NewPrecise()
	for i := int64(1); i <= 1000; i++ {
		p.Record(i * 1000)
	}
	p.RecordN(-5, 1) // clamped, still counted
	s := p.Summary()
	if s.Count != 1001 || s.P50 < 495_000 || s.P50 > 505_000 || s.Max < 999_000 || s.Min != 1 {
		t.Fatalf("%+v", s)
	}
	if n := p.CountAbove(900_000); n < 95 || n > 105 {
		t.Fatalf("CountAbove(900us) = %d, want ~100", n)
	}
}

func BenchmarkLog2Record(b *testing.B) {
	var h Log2
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		h.Record(uint64(i))
	}
}

func BenchmarkPreciseRecord(b *testing.B) {
	p := NewPrecise()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p.Record(int64(i & 0xffff))
	}
}

// TestPreciseIsExactWhereItCanBe: count, mean, min and max are exact, and
// each percentile's rounding brackets the true percentile (computed from
// the sorted values), for spreads from a few ns to an hour.
func TestPreciseIsExactWhereItCanBe(t *testing.T) {
	for _, tc := range []struct {
		name string
		vals []int64
	}{
		{"small exact", []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"the analysis's round trips", func() (v []int64) {
			for i := 0; i < 2000; i++ {
				v = append(v, 10000+int64(i%10)*1000)
			}
			return v
		}()},
		{"wide", func() (v []int64) {
			x := uint64(7)
			for i := 0; i < 5000; i++ {
				x = x*6364136223846793005 + 1442695040888963407
				v = append(v, 1+int64(x>>22)%3_000_000_000_000)
			}
			return v
		}()},
		{"one value", []int64{162_064_000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := NewPrecise(), NewPrecise()
			var sum float64
			for i, v := range tc.vals {
				if i%2 == 0 {
					a.Record(v)
				} else {
					b.Record(v)
				}
				sum += float64(v)
			}
			a.Merge(b)
			s := a.Summary()
			sorted := append([]int64(nil), tc.vals...)
			sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
			n := len(sorted)
			if s.Count != uint64(n) || s.Min != sorted[0] || s.Max != sorted[n-1] || math.Abs(s.Mean-sum/float64(n)) > 1e-6*s.Mean {
				t.Fatalf("count %d min %d max %d mean %.3f, want %d %d %d %.3f", s.Count, s.Min, s.Max, s.Mean, n, sorted[0], sorted[n-1], sum/float64(n))
			}
			for _, q := range []struct {
				p      float64
				got, r int64
			}{{50, s.P50, s.Rounding.P50}, {90, s.P90, s.Rounding.P90}, {99, s.P99, s.Rounding.P99}, {99.9, s.P999, s.Rounding.P999}} {
				// the nearest rank, as the histogram counts it
				rank := min(max(int(q.p/100*float64(n)+0.5), 1), n)
				truth := sorted[rank-1]
				if truth > q.got || truth < q.got-q.r {
					t.Errorf("p%v: true %d outside [%d, %d]", q.p, truth, q.got-q.r, q.got)
				}
				if q.r < 0 || q.r > q.got/1024+1 {
					t.Errorf("p%v: rounding %d for %d is more than 3 significant digits allow", q.p, q.r, q.got)
				}
			}
		})
	}
}
