package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/rundir"
)

// WriteSweepPlot draws achieved against target rate, passes and fails
// marked, the ideal diagonal, and the max-sustainable interval, into
// dir/sweep.svg. The sweep calls it through its Plot hook (the binary
// wires it), so that the sweep links no plotting library.
func WriteSweepPlot(dir, title string, pts []rundir.SweepPoint, lastPass, firstFail float64) error {
	p, err := SweepPlot(title, pts, lastPass, firstFail)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	c := vgsvg.New(16*vg.Centimeter, 11*vg.Centimeter)
	p.Draw(draw.New(c))
	if _, err := c.WriteTo(&buf); err != nil {
		return fmt.Errorf("plot %s: %w", rundir.SweepPlotFile, err)
	}
	return rundir.WriteFile(dir, rundir.SweepPlotFile, buf.Bytes())
}

// Colours of the sweep plot, shared with the report's HTML legend.
var (
	PassColor = color.RGBA{G: 140, A: 255}
	FailColor = color.RGBA{R: 200, A: 255}
	// Not premultiplied: a translucent green (a premultiplied RGBA with
	// components above its alpha is no colour at all, and drew grey).
	BandColor = color.NRGBA{R: 60, G: 170, B: 60, A: 80}
)

// SweepRange is the range both axes of the sweep plot share: fitted to the
// trials' targets and achieved rates (and the answer), with a margin, and
// logarithmic when it spans a decade or more.
func SweepRange(pts []rundir.SweepPoint, lastPass, firstFail float64) (lo, hi float64, log bool) {
	lo, hi = math.Inf(1), 0
	for _, v := range []float64{lastPass, firstFail} {
		if v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	for _, pt := range pts {
		for _, v := range []float64{pt.Target, pt.Achieved} {
			if v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if hi <= 0 {
		return 0, 1, false
	}
	if hi/lo >= 10 {
		return lo / 1.25, hi * 1.25, true
	}
	span := math.Max(hi-lo, hi*0.02)
	return math.Max(0, lo-0.12*span), hi + 0.12*span, false
}

// RateTicks labels an axis of tuples/s with the rate formatter ("20.0 k"),
// on a linear or log scale.
func RateTicks(log bool) plot.Ticker {
	return labelled(log, func(v float64) string {
		s := numfmt.RateN(v, 3)
		return s[:len(s)-2] // drop "/s": the axis label says it
	})
}

// NsTicks labels an axis of nanoseconds with the duration formatter
// ("10.0 µs"), on a linear or log scale.
func NsTicks(log bool) plot.Ticker {
	return labelled(log, func(v float64) string {
		if v >= 1e3 {
			s := numfmt.Ns(v)
			return trimZeros(s)
		}
		return numfmt.Ns(v)
	})
}

// trimZeros turns "10.00 µs" into "10 µs" and "2.500 ms" into "2.5 ms".
func trimZeros(s string) string {
	num, unit, found := strings.Cut(s, " ")
	if strings.Contains(num, ".") {
		num = strings.TrimSuffix(strings.TrimRight(num, "0"), ".")
	}
	if found {
		return num + " " + unit
	}
	return num
}

// labelled is a ticker whose labels come from format: 1-2-5 steps per
// decade on a log scale (labelled where they do not crowd), the default
// steps on a linear one.
func labelled(log bool, format func(float64) string) plot.Ticker {
	return plot.TickerFunc(func(min, max float64) []plot.Tick {
		if !log {
			ticks := plot.DefaultTicks{}.Ticks(min, max)
			for i := range ticks {
				if ticks[i].Label != "" {
					ticks[i].Label = trimZeros(format(ticks[i].Value))
				}
			}
			return ticks
		}
		var ticks []plot.Tick
		decades := math.Log10(max / min)
		steps := []float64{1, 2, 5}
		if decades > 4 {
			steps = []float64{1}
		}
		for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
			for m := 1.0; m < 10; m++ {
				v := m * math.Pow(10, e)
				if v < min*(1-1e-9) || v > max*(1+1e-9) {
					continue
				}
				label := ""
				for _, s := range steps {
					if m == s {
						label = trimZeros(format(v))
					}
				}
				ticks = append(ticks, plot.Tick{Value: v, Label: label})
			}
		}
		return ticks
	})
}

// SweepPlot is the sweep's plot (see PlotSweep), with its legend inside
// the plot's empty corner (achieved never exceeds target by much, so the
// top left above the diagonal holds no data).
func SweepPlot(title string, pts []rundir.SweepPoint, lastPass, firstFail float64) (*plot.Plot, error) {
	p, err := SweepPlotBare(title, pts, lastPass, firstFail)
	if err != nil {
		return nil, err
	}
	for _, it := range SweepLegend(pts, lastPass, firstFail) {
		p.Legend.Add(it.Label, it.Thumb)
	}
	p.Legend.Top, p.Legend.Left = true, true
	return p, nil
}

// LegendItem is one entry of a plot's legend.
type LegendItem struct {
	Label string
	Thumb plot.Thumbnailer
}

// SweepLegend is the sweep plot's legend.
func SweepLegend(pts []rundir.SweepPoint, lastPass, firstFail float64) []LegendItem {
	var items []LegendItem
	ideal, _ := sweepIdeal(1, 2)
	items = append(items, LegendItem{"achieved = target", ideal})
	if lastPass > 0 {
		label := "max sustainable ≥ " + numfmt.Rate(lastPass) + " (nothing failed)"
		if firstFail > 0 {
			lo, hi := numfmt.RateInterval(lastPass, firstFail)
			label = "max sustainable in [" + lo + ", " + hi + ")"
		}
		band, _ := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}, {X: 1, Y: 1}})
		band.Color, band.LineStyle.Color = BandColor, PassColor
		items = append(items, LegendItem{label, band})
	}
	for _, set := range sweepSets(pts) {
		if len(set.xys) > 0 {
			sc, _ := plotter.NewScatter(set.xys)
			sc.GlyphStyle = set.style
			items = append(items, LegendItem{set.label, sc})
		}
	}
	return items
}

type sweepSet struct {
	xys   plotter.XYs
	label string
	style draw.GlyphStyle
}

func sweepSets(pts []rundir.SweepPoint) []sweepSet {
	sets := []sweepSet{
		{label: "pass", style: draw.GlyphStyle{Shape: draw.CircleGlyph{}, Color: PassColor, Radius: vg.Points(4)}},
		{label: "fail", style: draw.GlyphStyle{Shape: draw.CrossGlyph{}, Color: FailColor, Radius: vg.Points(4)}},
	}
	for _, pt := range pts {
		i := 1
		if pt.Pass {
			i = 0
		}
		sets[i].xys = append(sets[i].xys, plotter.XY{X: pt.Target, Y: pt.Achieved})
	}
	return sets
}

func sweepIdeal(lo, hi float64) (*plotter.Line, error) {
	l, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
	if err != nil {
		return nil, err
	}
	l.Color = color.Gray{Y: 150}
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	return l, nil
}

// SweepPlotBare is the sweep plot without a legend: axes fitted to the
// trials (SweepRange) in tuples/s, the ideal diagonal, the answer's
// interval as a band between two lines (last pass, first fail), and the
// trials. A point whose achieved rate is 0 sits at the bottom of a log
// axis.
func SweepPlotBare(title string, pts []rundir.SweepPoint, lastPass, firstFail float64) (*plot.Plot, error) {
	lo, hi, log := SweepRange(pts, lastPass, firstFail)
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "target rate (tuples/s)"
	p.Y.Label.Text = "achieved rate (tuples/s)"
	if log {
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		lo = math.Max(lo, 1e-3)
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = RateTicks(log), RateTicks(log)
	p.Add(plotter.NewGrid())
	ideal, err := sweepIdeal(lo, hi)
	if err != nil {
		return nil, err
	}
	p.Add(ideal)
	if lastPass > 0 {
		right := firstFail
		if right <= 0 {
			right = hi
		}
		band, err := plotter.NewPolygon(plotter.XYs{{X: lastPass, Y: lo}, {X: lastPass, Y: hi}, {X: right, Y: hi}, {X: right, Y: lo}})
		if err != nil {
			return nil, err
		}
		band.Color = BandColor
		band.LineStyle.Width = 0
		p.Add(band)
		for _, x := range []float64{lastPass, firstFail} {
			if x <= 0 {
				continue
			}
			l, err := plotter.NewLine(plotter.XYs{{X: x, Y: lo}, {X: x, Y: hi}})
			if err != nil {
				return nil, err
			}
			l.Color, l.Width = PassColor, vg.Points(1.2)
			if x == firstFail {
				l.Color = FailColor
			}
			p.Add(l)
		}
	}
	for _, set := range sweepSets(pts) {
		if len(set.xys) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(set.xys))
		for i, xy := range set.xys {
			xys[i] = plotter.XY{X: math.Max(xy.X, lo), Y: math.Max(xy.Y, lo)}
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = set.style
		p.Add(sc)
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo, hi, lo, hi
	return p, nil
}
