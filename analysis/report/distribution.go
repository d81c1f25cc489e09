package report

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/cloudprofiler-go/cp/internal/histo"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/limits"
	"github.com/cloudprofiler-go/cp/rundir"
)

// answerDist is one receiver's latency distribution in one run at the
// answer.
type answerDist struct {
	Trial, Receiver int
	Rate            float64
	Dist            *histo.Distribution
}

// File is the .hgrm file it is written to in the run directory.
func (a answerDist) File() string {
	return rundir.HgrmFile(a.Trial, a.Receiver)
}

// maxAnswerDists bounds how many are read: an answer has a few runs.
const maxAnswerDists = 64

// answerDists reads the latency distributions of every receiver in every
// run of the search at the answer (passing runs at the rate the sweep
// answered). A distribution that fails its check is a problem, not drawn.
func answerDists(d *rundir.Dir, problems *[]string) []answerDist {
	s := d.Summary
	if s == nil || s.Result.LastPass <= 0 {
		return nil
	}
	var out []answerDist
	for _, t := range s.Result.Trials {
		if t.Rate != s.Result.LastPass || !t.Verdict.Pass || !limits.Searched(t) {
			continue
		}
		f, err := d.Trial(t.N)
		if err != nil || f.Outcome == nil {
			continue
		}
		for i, r := range f.Outcome.Receivers {
			if r == nil || r.LatencyDistribution == nil || len(out) >= maxAnswerDists {
				continue
			}
			if err := r.LatencyDistribution.Check(); err != nil {
				*problems = append(*problems, fmt.Sprintf("trial %d receiver%d: %v", t.N, i, err))
				continue
			}
			out = append(out, answerDist{Trial: t.N, Receiver: i, Rate: t.Rate, Dist: r.LatencyDistribution})
		}
	}
	return out
}

// writeHgrms writes each distribution as HdrHistogram's .hgrm (its
// plotter overlays several).
func writeHgrms(dir string, dists []answerDist) error {
	for _, a := range dists {
		if err := rundir.WriteWith(dir, a.File(), a.Dist.WriteHgrm); err != nil {
			return err
		}
	}
	return nil
}

// percentileX places a percentile on HdrHistogram's axis: log10 of
// 1/(1-p), so that 90%, 99%, 99.9% ... are evenly spaced.
func percentileX(p float64) float64 { return math.Log10(1 / (1 - p/100)) }

// percentileTicks labels that axis: 0%, 90%, 99%, 99.9%, ...
type percentileTicks struct{}

func (percentileTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for k := math.Ceil(lo); k <= hi; k++ {
		p := 100 * (1 - math.Pow(10, -k))
		out = append(out, plot.Tick{Value: k, Label: fmt.Sprintf("%.*f%%", max(int(k)-2, 0), p)})
	}
	return out
}

// distributionFigure draws the latency distributions at the answer on
// HdrHistogram's percentile axis (the 100% point, at infinity there, is
// the maximum the caption gives).
func distributionFigure(dists []answerDist) (Figure, bool) {
	if len(dists) == 0 {
		return Figure{}, false
	}
	p := plot.New()
	p.Title.Text = "latency distribution at the answer"
	p.X.Label.Text = "percentile"
	p.Y.Label.Text = "latency (log scale)"
	style(p)
	var marks plotter.XYs
	var legend []LegendEntry
	lo, hi, right := math.Inf(1), 0.0, 0.0
	maxNs := int64(0)
	for i, a := range dists {
		var xys plotter.XYs
		for _, b := range a.Dist.Brackets {
			if b.Percentile >= 100 || b.ValueNs <= 0 {
				continue
			}
			xys = append(xys, plotter.XY{X: percentileX(b.Percentile), Y: float64(b.ValueNs)})
			lo, hi, right = math.Min(lo, float64(b.ValueNs)), math.Max(hi, float64(b.ValueNs)), math.Max(right, percentileX(b.Percentile))
		}
		maxNs = max(maxNs, a.Dist.MaxNs)
		if len(xys) < 2 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			continue
		}
		c := palette[i%len(palette)]
		l.Color = c
		p.Add(l)
		legend = append(legend, LegendEntry{Label: fmt.Sprintf("trial %d, receiver%d", a.Trial, a.Receiver), Color: css(c), Kind: "line"})
		marks = append(marks, xys...)
	}
	if len(marks) == 0 {
		return Figure{}, false
	}
	fitLinear(&p.X, 0, math.Max(right, 2), true, percentileTicks{})
	fitLog(&p.Y, lo, hi, NsTicks(true))
	svg, chk, err := render(p, 18*vg.Centimeter, 11*vg.Centimeter, marks, nil)
	if err != nil {
		return Figure{}, false
	}
	return Figure{ID: "distribution", Title: "Latency distribution at the answer", SVG: svg, Legend: legend, Check: chk,
		Caption: fmt.Sprintf("Every receiver's end-to-end latency (intended send to consumed) in every run at the answer, %s, on HdrHistogram's percentile axis; the maximum was %s. The same distributions are written beside this page as .hgrm files, which HdrHistogram's plotter reads.",
			numfmt.Rate(dists[0].Rate), numfmt.Ns(float64(maxNs)))}, true
}
