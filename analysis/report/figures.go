package report

import (
	"errors"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/cloudprofiler-go/cp/analysis"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/rundir"
)

// svgOf renders a plot as inline SVG at a laptop-friendly size.
func style(p *plot.Plot) {
	p.Title.TextStyle.Font.Size = vg.Points(13)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(11)
		a.Tick.Label.Font.Size = vg.Points(10)
	}
	p.Add(plotter.NewGrid())
}

func sweepFigure(s *rundir.Summary) (Figure, error) {
	var pts []rundir.SweepPoint
	for _, t := range s.Result.Trials {
		pts = append(pts, rundir.SweepPoint{Target: t.Rate, Achieved: t.Achieved, Pass: t.Verdict.Pass})
	}
	if len(pts) == 0 {
		return Figure{}, errors.New("no trials")
	}
	last, first := s.Result.LastPass, s.Result.FirstFail
	p, err := SweepPlotBare("target vs achieved rate", pts, last, first)
	if err != nil {
		return Figure{}, err
	}
	style(p)
	lo, hi, log := SweepRange(pts, last, first)
	if log {
		lo = math.Max(lo, 1e-3)
	}
	var marks plotter.XYs
	for _, pt := range pts {
		marks = append(marks, plotter.XY{X: math.Max(pt.Target, lo), Y: math.Max(pt.Achieved, lo)})
	}
	var band []float64
	legend := []LegendEntry{{Label: "achieved = target", Color: "rgb(150,150,150)", Kind: "dash"}}
	if last > 0 {
		right, label := first, "max sustainable ≥ "+numfmt.Rate(last)+" (nothing failed)"
		if first > 0 {
			l, h := numfmt.RateInterval(last, first)
			label = "max sustainable in [" + l + ", " + h + "): the band between the last pass and the first fail"
		} else {
			right = hi
		}
		band = []float64{last, right}
		legend = append(legend, LegendEntry{Label: label, Color: css(BandColor), Kind: "band"})
	}
	legend = append(legend, LegendEntry{Label: "pass", Color: css(PassColor), Kind: "circle"},
		LegendEntry{Label: "fail", Color: css(FailColor), Kind: "cross"})
	svg, chk, err := render(p, 18*vg.Centimeter, 12*vg.Centimeter, marks, band)
	scale := "linear"
	if log {
		scale = "logarithmic (the trials span a decade or more)"
	}
	return Figure{ID: "sweep", Title: "Sweep", SVG: svg, Legend: legend, Check: chk,
		Caption: "Every trial's achieved rate against its target, on " + scale + " axes fitted to the trials. The maximum sustainable throughput lies in the green band, between the last pass (green line) and the first fail (red line)."}, err
}

var palette = []color.Color{
	color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 255, G: 127, B: 14, A: 255}, color.RGBA{R: 44, G: 160, B: 44, A: 255},
	color.RGBA{R: 214, G: 39, B: 40, A: 255}, color.RGBA{R: 148, G: 103, B: 189, A: 255}, color.RGBA{R: 140, G: 86, B: 75, A: 255},
}

// fitLog puts an axis on a log scale fitted to [lo, hi] (both > 0), with
// half a step of room on either side so no point sits on the frame.
func fitLog(a *plot.Axis, lo, hi float64, ticks plot.Ticker) {
	a.Scale, a.Tick.Marker = plot.LogScale{}, ticks
	if hi <= lo {
		hi = lo * 2
	}
	a.Min, a.Max = lo/1.6, hi*1.6
}

// fitLinear fits a linear axis to [lo, hi] with a margin (from just below
// 0 when fromZero is set: a value of 0 must not sit on the frame).
func fitLinear(a *plot.Axis, lo, hi float64, fromZero bool, ticks plot.Ticker) {
	a.Tick.Marker = ticks
	span := math.Max(hi-lo, math.Max(math.Abs(hi)*0.05, 1))
	a.Min, a.Max = lo-0.08*span, hi+0.12*span
	if fromZero {
		a.Min = -0.04 * span
	}
}

// rateAxis fits the x axis to the trials' target rates.
func rateAxis(a *plot.Axis, rates []float64) {
	lo, hi := math.Inf(1), 0.0
	for _, r := range rates {
		if r > 0 {
			lo, hi = math.Min(lo, r), math.Max(hi, r)
		}
	}
	a.Label.Text = "target rate (tuples/s)"
	if hi/lo >= 10 {
		fitLog(a, lo, hi, RateTicks(true))
		return
	}
	fitLinear(a, lo, hi, false, RateTicks(false))
}

// boxes draws one box per category from precomputed quantiles
// (p1, p25, p50, p75, p99) in nanoseconds, on a log scale or a linear one
// from 0; it returns the plot and every drawn quantile as a mark.
func boxes(title, ylabel string, names []string, qs [][5]int64, log bool) (*plot.Plot, plotter.XYs, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	style(p)
	lo, hi := math.Inf(1), 0.0
	for _, q := range qs {
		for _, v := range q {
			if v > 0 {
				lo = math.Min(lo, float64(v))
			}
			hi = math.Max(hi, float64(v))
		}
	}
	if math.IsInf(lo, 1) {
		lo = 1
	}
	y := func(ns int64) float64 {
		if !log {
			return float64(ns)
		}
		return math.Max(float64(ns), lo/1.5) // log scale: an exact 0 sits at the bottom
	}
	var marks plotter.XYs
	for i, q := range qs {
		x := float64(i)
		col := palette[i%len(palette)]
		box, err := plotter.NewPolygon(plotter.XYs{{X: x - 0.3, Y: y(q[1])}, {X: x + 0.3, Y: y(q[1])}, {X: x + 0.3, Y: y(q[3])}, {X: x - 0.3, Y: y(q[3])}})
		if err != nil {
			return nil, nil, err
		}
		box.Color = color.RGBA{R: 200, G: 220, B: 240, A: 255}
		box.LineStyle.Color = col
		p.Add(box)
		for _, seg := range []plotter.XYs{
			{{X: x - 0.3, Y: y(q[2])}, {X: x + 0.3, Y: y(q[2])}}, // median
			{{X: x, Y: y(q[0])}, {X: x, Y: y(q[1])}},             // whiskers
			{{X: x, Y: y(q[3])}, {X: x, Y: y(q[4])}},
			{{X: x - 0.15, Y: y(q[0])}, {X: x + 0.15, Y: y(q[0])}},
			{{X: x - 0.15, Y: y(q[4])}, {X: x + 0.15, Y: y(q[4])}},
		} {
			l, err := plotter.NewLine(seg)
			if err != nil {
				return nil, nil, err
			}
			l.Color, l.Width = col, vg.Points(1.5)
			p.Add(l)
		}
		for _, v := range q {
			marks = append(marks, plotter.XY{X: x, Y: y(v)})
		}
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	if log {
		fitLog(&p.Y, lo/1.5, hi, NsTicks(true))
	} else {
		fitLinear(&p.Y, 0, math.Max(hi, 1), true, NsTicks(false))
	}
	return p, marks, nil
}

func pairFigures(an *analysis.Report) []Figure {
	var names []string
	var lat, errs [][5]int64
	for _, p := range an.Pairs {
		for _, g := range p.Groups {
			short := "same"
			if g.Name == "cross node" {
				short = "cross"
			}
			names = append(names, fmt.Sprintf("%s→%s\n(%s)", abbrev(p.From), abbrev(p.To), short))
			lat, errs = append(lat, g.Box), append(errs, g.ErrorBox)
		}
	}
	if len(names) == 0 {
		return nil
	}
	var out []Figure
	w := vg.Length(math.Max(18, 3.2*float64(len(names)))) * vg.Centimeter
	// On one clock (every agent on one machine) every bound is 0: a plot
	// of flat lines at 0 says less than a sentence.
	exact := true
	for _, e := range errs {
		exact = exact && e == [5]int64{}
	}
	if p, marks, err := boxes("tuple latency per pair of points", "latency (log scale)", names, lat, true); err == nil {
		if svg, chk, err := render(p, w, 11*vg.Centimeter, marks, nil); err == nil {
			caption := "Per pair of instrumentation points, same-node and cross-node pairs apart (the paper's Fig. 17): box from p25 to p75, line at the median, whiskers at p1 and p99, in the reference node's time."
			if exact {
				caption += " Every point was stamped on one clock (one machine): every latency here is exact, its error bound 0, so there is no error plot."
			}
			out = append(out, Figure{ID: "latency", Title: "Where a tuple's time goes", SVG: svg, Check: chk, Caption: caption})
		}
	}
	if exact {
		return out
	}
	if p, marks, err := boxes("error bound of those latencies (±)", "half-width", names, errs, false); err == nil {
		if svg, chk, err := render(p, w, 9*vg.Centimeter, marks, nil); err == nil {
			out = append(out, Figure{ID: "error", Title: "How well it is known", SVG: svg, Check: chk,
				Caption: "The strict error bound (half-width) of every latency above, same quantiles. On the reference node it is 0; across nodes it comes from the TSC relation."})
		}
	}
	return out
}

func abbrev(point string) string {
	switch point {
	case "deserialized":
		return "deser"
	case "consumed":
		return "cons"
	case "receive":
		return "recv"
	}
	return point
}

func throughputFigure(an *analysis.Report) (Figure, bool) {
	p := plot.New()
	p.Title.Text = "throughput over time, profiled trial"
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "tuples/s"
	style(p)
	var legend []LegendEntry
	var marks plotter.XYs
	counters := false
	add := func(xys plotter.XYs, label string, dashed bool) {
		if len(xys) < 2 {
			return
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return
		}
		col := palette[len(legend)%len(palette)]
		l.Color, l.Width = col, vg.Points(1.5)
		kind := "line"
		if dashed {
			l.Dashes, kind, counters = []vg.Length{vg.Points(5), vg.Points(3)}, "dash", true
		}
		p.Add(l)
		legend = append(legend, LegendEntry{Label: label, Color: css(col), Kind: kind})
		marks = append(marks, xys...)
	}
	// The last bin of a series covers only part of its width (the run
	// ended inside it): drawn, it reads as a collapse at the end.
	partial := func(n int) int { return max(n-1, 0) }
	for _, r := range an.PointRates {
		var xys plotter.XYs
		for k, v := range r.PerSec[:partial(len(r.PerSec))] {
			xys = append(xys, plotter.XY{X: r.StartS + (float64(k)+0.5)*r.BinS, Y: v})
		}
		add(xys, r.Point+" (log records)", false)
	}
	for _, s := range an.Throughput {
		var xys plotter.XYs
		for k, v := range s.PerSec[:partial(len(s.PerSec))] {
			xys = append(xys, plotter.XY{X: (float64(k) + 0.5) * s.PeriodS, Y: v})
		}
		add(xys, s.Channel+" on "+s.Node+" (counter)", true)
	}
	if len(legend) == 0 {
		return Figure{}, false
	}
	xlo, xhi, yhi := math.Inf(1), math.Inf(-1), 0.0
	for _, m := range marks {
		xlo, xhi, yhi = math.Min(xlo, m.X), math.Max(xhi, m.X), math.Max(yhi, m.Y)
	}
	fitLinear(&p.X, xlo, xhi, false, plot.DefaultTicks{})
	fitLinear(&p.Y, 0, math.Max(yhi, 1), true, RateTicks(false))
	svg, chk, err := render(p, 18*vg.Centimeter, 10*vg.Centimeter, marks, nil)
	if err != nil {
		return Figure{}, false
	}
	caption := "Records per 100 ms at each instrumentation point of the profiled trial, from its logs, in the reference node's time (the last bin, which the run's end cut short, is left out)."
	if counters {
		caption += " Dashed: the periodic counters of counter channels, each from its own start."
	}
	return Figure{ID: "throughput", Title: "Throughput over time", SVG: svg, Legend: legend, Check: chk, Caption: caption}, true
}

func clockFigure(d *rundir.Dir, an *analysis.Report) (Figure, bool) {
	methods := []string{"CP (paper)", "CP (tighter)", "ReT (median round trip)", "system clock (NTP maxerror)"}
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{}}
	kinds := []string{"circle", "triangle", "square", "cross"}
	pts := make([]plotter.XYs, len(methods))
	var names []string
	lo, hi := math.Inf(1), 0.0
	for _, r := range d.Relation.Relations {
		c := r.Compare
		if c == nil {
			continue
		}
		x := float64(len(names))
		names = append(names, r.Node+" → "+r.Reference)
		for k, v := range []float64{c.PaperNs, c.TighterNs, c.ReTMedianNs, c.NTPMaxNs} {
			if v > 0 {
				pts[k] = append(pts[k], plotter.XY{X: x + 0.12*float64(k) - 0.18, Y: v})
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if len(names) == 0 || hi == 0 {
		return Figure{}, false
	}
	p := plot.New()
	p.Title.Text = "error bound of one cross-node timestamp, by method"
	p.Y.Label.Text = "half-width (log scale)"
	style(p)
	var legend []LegendEntry
	var marks plotter.XYs
	for k, xys := range pts {
		if len(xys) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			continue
		}
		sc.GlyphStyle.Shape, sc.GlyphStyle.Color, sc.GlyphStyle.Radius = shapes[k], palette[k], vg.Points(5)
		p.Add(sc)
		legend = append(legend, LegendEntry{Label: methods[k], Color: css(palette[k]), Kind: kinds[k]})
		marks = append(marks, xys...)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	fitLog(&p.Y, lo, hi, NsTicks(true))
	svg, chk, err := render(p, 18*vg.Centimeter, 10*vg.Centimeter, marks, nil)
	if err != nil {
		return Figure{}, false
	}
	return Figure{ID: "clock", Title: "Clock methods side by side", SVG: svg, Legend: legend, Check: chk,
		Caption: "The paper's Fig. 15 for this run: CP is half the MinRTT of the probes before and after; the tighter bound uses every probe; ReT pays a whole return trip, measured on the same paths; the system clock's is the kernel's own NTP estimate (adjtimex), summed over both nodes."}, true
}
