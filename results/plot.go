package results

import (
	"fmt"
	"image/color"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// SweepPoint is one trial on the sweep plot.
type SweepPoint struct {
	Target, Achieved float64 // tuples/s
	Pass             bool
}

// PlotSweep draws achieved against target rate, passes and fails marked,
// the ideal diagonal, and the max-sustainable interval, to name (SVG or
// PNG by extension) inside the run directory.
func (r *Run) PlotSweep(name, title string, pts []SweepPoint, lastPass, firstFail float64) error {
	p, err := SweepPlot(title, pts, lastPass, firstFail)
	if err != nil {
		return err
	}
	if err := p.Save(16*vg.Centimeter, 11*vg.Centimeter, filepath.Join(r.Dir, name)); err != nil {
		return fmt.Errorf("plot %s: %w", name, err)
	}
	return nil
}

// SweepPlot is the sweep's plot (see PlotSweep), for embedding.
func SweepPlot(title string, pts []SweepPoint, lastPass, firstFail float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "target rate (M tuples/s)"
	p.Y.Label.Text = "achieved rate (M tuples/s)"
	p.Add(plotter.NewGrid())
	var pass, fail plotter.XYs
	maxV := 0.0
	for _, pt := range pts {
		xy := plotter.XY{X: pt.Target / 1e6, Y: pt.Achieved / 1e6}
		maxV = max(maxV, xy.X, xy.Y)
		if pt.Pass {
			pass = append(pass, xy)
		} else {
			fail = append(fail, xy)
		}
	}
	ideal, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: maxV * 1.05, Y: maxV * 1.05}})
	if err != nil {
		return nil, err
	}
	ideal.Color = color.Gray{Y: 150}
	ideal.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(ideal)
	p.Legend.Add("achieved = target", ideal)
	if lastPass > 0 {
		band, err := plotter.NewPolygon(plotter.XYs{{X: lastPass / 1e6, Y: 0}, {X: lastPass / 1e6, Y: maxV * 1.05},
			{X: max(firstFail, lastPass) / 1e6, Y: maxV * 1.05}, {X: max(firstFail, lastPass) / 1e6, Y: 0}})
		if err == nil {
			band.Color = color.RGBA{R: 120, G: 200, B: 120, A: 90}
			band.LineStyle.Width = 0
			p.Add(band)
			label := fmt.Sprintf("max sustainable [%.3f, %.3f) M/s", lastPass/1e6, firstFail/1e6)
			if firstFail == 0 {
				label = fmt.Sprintf("max sustainable >= %.3f M/s", lastPass/1e6)
			}
			p.Legend.Add(label, band)
		}
	}
	for _, set := range []struct {
		xys   plotter.XYs
		label string
		shape draw.GlyphDrawer
		col   color.Color
	}{
		{pass, "pass", draw.CircleGlyph{}, color.RGBA{G: 140, A: 255}},
		{fail, "fail", draw.CrossGlyph{}, color.RGBA{R: 200, A: 255}},
	} {
		if len(set.xys) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(set.xys)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle.Shape, sc.GlyphStyle.Color, sc.GlyphStyle.Radius = set.shape, set.col, vg.Points(4)
		p.Add(sc)
		p.Legend.Add(set.label, sc)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.X.Min, p.Y.Min = 0, 0
	return p, nil
}
