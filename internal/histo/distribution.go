package histo

import (
	"fmt"
	"io"
	"math"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Bracket is one line of a percentile distribution: the value at or
// below which Percentile % of the recorded values lie (the top of its
// histogram bucket), and how many values that is.
type Bracket struct {
	Percentile float64 `json:"percentile"` // 0 to 100
	ValueNs    int64   `json:"value_ns"`
	Count      int64   `json:"count"`
}

// Distribution is a histogram's percentile distribution as HdrHistogram
// prints it (.hgrm): brackets at log-scaled percentile steps (5 ticks per
// half distance to 100%), and the exact count, mean, standard deviation
// and maximum.
type Distribution struct {
	Brackets []Bracket `json:"brackets"`
	Count    int64     `json:"count"`
	MeanNs   float64   `json:"mean_ns"`
	StdDevNs float64   `json:"stddev_ns"`
	MaxNs    int64     `json:"max_ns"`
}

// MaxBrackets bounds a distribution read from elsewhere: far above the
// ~200 brackets a histogram of 3 significant digits prints.
const MaxBrackets = 4096

// Distribution returns the percentile distribution (nil when nothing was
// recorded).
func (p *Precise) Distribution() *Distribution {
	if p.h.TotalCount() == 0 {
		return nil
	}
	d := &Distribution{Count: p.h.TotalCount(), MeanNs: p.sum / float64(p.h.TotalCount()), StdDevNs: p.h.StdDev(), MaxNs: p.max}
	for _, b := range p.h.CumulativeDistributionWithTicks(5) {
		d.Brackets = append(d.Brackets, Bracket{Percentile: b.Quantile, ValueNs: min(b.ValueAt, p.max), Count: b.Count})
	}
	return d
}

// Check says what makes a distribution read from elsewhere unusable
// (nil: it is usable): too many brackets, or percentiles, values or
// counts that do not rise.
func (d *Distribution) Check() error {
	if len(d.Brackets) == 0 || len(d.Brackets) > MaxBrackets {
		return fmt.Errorf("a latency distribution needs 1 to %d brackets, got %d", MaxBrackets, len(d.Brackets))
	}
	prev := Bracket{Percentile: -1, ValueNs: -1, Count: -1}
	for i, b := range d.Brackets {
		if math.IsNaN(b.Percentile) || b.Percentile < prev.Percentile || b.Percentile > 100 || b.ValueNs < prev.ValueNs || b.Count < prev.Count {
			return fmt.Errorf("latency distribution bracket %d (%v%%, %d ns, %d) does not follow the one before", i, b.Percentile, b.ValueNs, b.Count)
		}
		prev = b
	}
	return nil
}

// WriteHgrm writes the distribution in HdrHistogram's text format
// (HistogramLogProcessor's .hgrm, which its plotter reads), values in
// milliseconds.
func (d *Distribution) WriteHgrm(w io.Writer) error {
	const scale = 1e6 // ns per ms
	if _, err := fmt.Fprint(w, "       Value     Percentile TotalCount 1/(1-Percentile)\n\n"); err != nil {
		return err
	}
	for _, b := range d.Brackets {
		q := b.Percentile / 100
		inv := fmt.Sprintf("%14.2f", 1/(1-q))
		if q >= 1 {
			inv = fmt.Sprintf("%14s", "inf")
		}
		if _, err := fmt.Fprintf(w, "%12.3f %14.12f %10d %s\n", float64(b.ValueNs)/scale, q, b.Count, inv); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n#[Max     = %12.3f, Total count    = %12d]\n#[Buckets = %12d, SubBuckets     = %12d]\n",
		d.MeanNs/scale, d.StdDevNs/scale, float64(d.MaxNs)/scale, d.Count, 0, 0)
	return err
}

// WriteLog writes the histogram itself as HdrHistogram's interval log
// (.hlog): one interval from start to end, values in nanoseconds, the
// counts compressed as every HdrHistogram port decodes them (its
// HistogramLogProcessor prints a .hgrm from it again). The .hgrm is a
// print of percentiles; this is what another tool can merge or re-read.
func (p *Precise) WriteLog(w io.Writer, start, end time.Time) error {
	p.h.SetStartTimeMs(start.UnixMilli())
	p.h.SetEndTimeMs(end.UnixMilli())
	lw := hdr.NewHistogramLogWriter(w)
	lw.SetBaseTime(start.UnixMilli())
	for _, step := range []func() error{
		lw.OutputLogFormatVersion,
		func() error {
			return lw.OutputComment("[latency, intended send to consumed, in nanoseconds: cloudprofiler-go dgrecv]")
		},
		func() error { return lw.OutputStartTime(start.UnixMilli()) },
		func() error { return lw.OutputBaseTime(start.UnixMilli()) },
		lw.OutputLegend,
		func() error { return lw.OutputIntervalHistogram(p.h) },
	} {
		if err := step(); err != nil {
			return fmt.Errorf("write the histogram log: %w", err)
		}
	}
	return nil
}
