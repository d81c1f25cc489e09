package histo

import (
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestLog2PublishAndMetric(t *testing.T) {
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
	desc := prometheus.NewDesc("x_seconds", "x", nil, nil)
	var m dto.Metric
	if err := c.Metric(desc, 1e-9).Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Histogram.GetSampleCount() != 32 {
		t.Fatalf("count %d", m.Histogram.GetSampleCount())
	}
	// Buckets are exported in order of their bound, 2^i-1 ns for i = 1, 2,
	// ...: the third is 2^3-1 = 7 ns, which holds 0,1,2,3,4 and ten 5s,
	// twice. Found by index, since 7 × 1e-9 is not exactly 7e-9 in floats.
	b := m.Histogram.Bucket
	if len(b) < 3 || math.Abs(b[2].GetUpperBound()-7e-9) > 1e-18 {
		t.Fatalf("third bucket %v, want the 7 ns bound", b)
	}
	if b[2].GetCumulativeCount() != 30 {
		t.Fatalf("le=7ns cumulative %d, want 30", b[2].GetCumulativeCount())
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
