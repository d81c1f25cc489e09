// Package report renders a run directory as one self-contained HTML page
// (report.html): the sweep curve, lateness and latency per trial, per-pair
// latency with its error bound (the paper's Fig. 17), the clock methods
// side by side (Fig. 15), throughput over time and the configuration.
// Plots are inline SVG (gonum/plot); the page loads nothing from anywhere.
package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/results"
	"github.com/cloudprofiler-go/cp/results/analysis"
)

// File is the report's name inside the run directory.
const File = "report.html"

// Figure is one plot with its caption.
type Figure struct {
	ID      string
	Title   string
	Caption string
	SVG     template.HTML
}

// page is what the template renders.
type page struct {
	Name, Dir, Started, Topology, Verdict string
	Trials                                []trialRow
	Figures                               []Figure
	Pairs                                 []pairRow
	Clock                                 []clockRow
	ReT                                   []analysis.ReTResult
	Problems                              []string
	Config                                string
	Generated                             string
	Analysis                              *analysis.Report
}

type trialRow struct {
	N                                   int
	Purpose, Target, Achieved, Verdict  string
	Pass                                bool
	Failed                              string
	LatenessP99, LatencyP50, LatencyP99 string
}

type pairRow struct {
	Pair, Group              string
	Count                    uint64
	P50, P90, P99, P999, Max string
	ErrP50, ErrMax           string
	OnlyFrom, OnlyTo         uint64
}

type clockRow struct {
	Node, Paper, Tighter, ReT, NTP string
}

// Build renders the report of a run directory. It uses analysis.json when
// present, and analyses the profiles itself otherwise.
func Build(d *results.Dir) ([]byte, error) {
	pg := page{Dir: d.Path, Generated: time.Now().UTC().Format(time.RFC3339), Problems: append([]string(nil), d.Problems...)}
	if s := d.Summary; s != nil {
		pg.Name, pg.Started, pg.Topology = s.Name, s.Started.Format(time.RFC3339), s.Topology
		pg.Verdict = verdict(s)
		pg.Trials = trialRows(d)
		if f, err := sweepFigure(s); err == nil {
			pg.Figures = append(pg.Figures, f)
		} else {
			pg.Problems = append(pg.Problems, "sweep plot: "+err.Error())
		}
		if f, ok := percentileFigure(d, s); ok {
			pg.Figures = append(pg.Figures, f)
		}
	}
	an := loadAnalysis(d, &pg)
	if an != nil {
		pg.Analysis = an
		pg.Pairs = pairRows(an)
		pg.ReT = an.ReT
		pg.Figures = append(pg.Figures, pairFigures(an)...)
		if f, ok := throughputFigure(an); ok {
			pg.Figures = append(pg.Figures, f)
		}
	}
	if d.Relation != nil {
		pg.Clock = clockRows(d, an)
		if f, ok := clockFigure(d, an); ok {
			pg.Figures = append(pg.Figures, f)
		}
	}
	if cfg := d.Config(); cfg != nil {
		var v any
		_ = json.Unmarshal(cfg, &v)
		b, _ := json.MarshalIndent(v, "", "  ")
		pg.Config = string(b)
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, pg); err != nil {
		return nil, fmt.Errorf("render report: %w", err)
	}
	return buf.Bytes(), nil
}

// Write renders the report into the run directory and returns its path.
func Write(d *results.Dir) (string, error) {
	b, err := Build(d)
	if err != nil {
		return "", err
	}
	path := filepath.Join(d.Path, File)
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	return path, os.Rename(path+".tmp", path)
}

func loadAnalysis(d *results.Dir, pg *page) *analysis.Report {
	if b, err := os.ReadFile(filepath.Join(d.Path, analysis.JSONFile)); err == nil {
		var an analysis.Report
		if err := json.Unmarshal(b, &an); err == nil {
			return &an
		}
		pg.Problems = append(pg.Problems, analysis.JSONFile+" is damaged: analysing the profiles again")
	}
	if len(d.Nodes) == 0 {
		return nil
	}
	an, err := analysis.Analyze(d, analysis.Options{})
	if err != nil {
		pg.Problems = append(pg.Problems, "analysis: "+err.Error())
		return nil
	}
	pg.Problems = append(pg.Problems, an.Problems...)
	return an
}

func verdict(s *results.Summary) string {
	r := s.Result
	switch {
	case r.LastPass == 0:
		return "no rate passed"
	case r.FirstFail == 0:
		return fmt.Sprintf("at least %s (nothing failed)", numfmt.Rate(r.LastPass))
	}
	lo, hi := numfmt.RateInterval(r.LastPass, r.FirstFail)
	return fmt.Sprintf("between %s (passed) and %s (failed), ±%.1f%%", lo, hi, 50*(r.FirstFail-r.LastPass)/r.LastPass)
}

func dur(ns int64) string { return numfmt.Ns(float64(ns)) }

func trialRows(d *results.Dir) []trialRow {
	var rows []trialRow
	for _, t := range d.Summary.Result.Trials {
		r := trialRow{N: t.N, Purpose: t.Purpose, Target: numfmt.Rate(t.Rate), Achieved: numfmt.Rate(t.Achieved), Pass: t.Verdict.Pass, Verdict: "fail"}
		if t.Verdict.Pass {
			r.Verdict = "pass"
		}
		var failed []string
		for _, c := range t.Verdict.Checks {
			if !c.Pass {
				failed = append(failed, c.Rule+": "+c.Detail)
			}
		}
		r.Failed = strings.Join(failed, "; ")
		if o, err := d.Outcome(t.N); err == nil {
			if len(o.Outcome.Senders) > 0 {
				r.LatenessP99 = dur(o.Outcome.Senders[0].Lateness.P99)
			}
			if len(o.Outcome.Receivers) > 0 {
				r.LatencyP50, r.LatencyP99 = dur(o.Outcome.Receivers[0].Latency.P50), dur(o.Outcome.Receivers[0].Latency.P99)
			}
		}
		rows = append(rows, r)
	}
	return rows
}

func pairRows(an *analysis.Report) []pairRow {
	var rows []pairRow
	for _, p := range an.Pairs {
		for _, g := range p.Groups {
			l, e := g.Latency, g.Error
			rows = append(rows, pairRow{Pair: p.From + " → " + p.To, Group: g.Name, Count: l.Count, P50: dur(l.P50), P90: dur(l.P90),
				P99: dur(l.P99), P999: dur(l.P999), Max: dur(l.Max), ErrP50: dur(e.P50), ErrMax: dur(e.Max), OnlyFrom: p.OnlyFrom, OnlyTo: p.OnlyTo})
		}
	}
	return rows
}

func clockRows(d *results.Dir, an *analysis.Report) []clockRow {
	var rows []clockRow
	for _, r := range d.Relation.Relations {
		c := r.Compare
		if c == nil {
			continue
		}
		ntp := fmt.Sprintf("±%s (est. %s)", dur(int64(c.NTPMaxNs)), dur(int64(c.NTPEstNs)))
		if !c.NTPSynced {
			ntp += ", not synchronised"
		}
		rows = append(rows, clockRow{Node: r.Node + " → " + r.Reference, Paper: "±" + dur(int64(c.PaperNs)), Tighter: "±" + dur(int64(c.TighterNs)),
			ReT: fmt.Sprintf("%s / %s / %s", dur(int64(c.ReTMinNs)), dur(int64(c.ReTMedianNs)), dur(int64(c.ReTMaxNs))), NTP: ntp})
	}
	return rows
}

// svgOf renders a plot as inline SVG at a laptop-friendly size.
func svgOf(p *plot.Plot, w, h vg.Length) (template.HTML, error) {
	wt, err := p.WriterTo(w, h, "svg")
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return "", err
	}
	s := buf.String()
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:] // drop the XML prolog: the SVG is inline
	}
	return template.HTML(s), nil // generated by gonum from numbers, not user text
}

func style(p *plot.Plot) {
	p.Title.TextStyle.Font.Size = vg.Points(13)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(11)
		a.Tick.Label.Font.Size = vg.Points(10)
	}
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Add(plotter.NewGrid())
}

func sweepFigure(s *results.Summary) (Figure, error) {
	var pts []results.SweepPoint
	for _, t := range s.Result.Trials {
		pts = append(pts, results.SweepPoint{Target: t.Rate, Achieved: t.Achieved, Pass: t.Verdict.Pass})
	}
	if len(pts) == 0 {
		return Figure{}, errors.New("no trials")
	}
	p, err := results.SweepPlot("target vs achieved rate", pts, s.Result.LastPass, s.Result.FirstFail)
	if err != nil {
		return Figure{}, err
	}
	style(p)
	svg, err := svgOf(p, 18*vg.Centimeter, 12*vg.Centimeter)
	return Figure{ID: "sweep", Title: "Sweep", SVG: svg,
		Caption: "Every trial's achieved rate against its target; the green band is where the maximum sustainable throughput lies (last pass to first fail)."}, err
}

var palette = []color.Color{
	color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 255, G: 127, B: 14, A: 255}, color.RGBA{R: 44, G: 160, B: 44, A: 255},
	color.RGBA{R: 214, G: 39, B: 40, A: 255}, color.RGBA{R: 148, G: 103, B: 189, A: 255}, color.RGBA{R: 140, G: 86, B: 75, A: 255},
}

// logY puts the y axis on a log scale (values must be > 0).
func logY(p *plot.Plot) {
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
}

func percentileFigure(d *results.Dir, s *results.Summary) (Figure, bool) {
	series := map[string]plotter.XYs{}
	order := []string{"lateness p50", "lateness p99", "latency p50", "latency p99"}
	for _, t := range s.Result.Trials {
		o, err := d.Outcome(t.N)
		if err != nil {
			continue
		}
		x := t.Rate / 1e6
		add := func(name string, ns int64) {
			if ns > 0 {
				series[name] = append(series[name], plotter.XY{X: x, Y: float64(ns) / 1e3})
			}
		}
		if len(o.Outcome.Senders) > 0 {
			add("lateness p50", o.Outcome.Senders[0].Lateness.P50)
			add("lateness p99", o.Outcome.Senders[0].Lateness.P99)
		}
		if len(o.Outcome.Receivers) > 0 {
			add("latency p50", o.Outcome.Receivers[0].Latency.P50)
			add("latency p99", o.Outcome.Receivers[0].Latency.P99)
		}
	}
	p := plot.New()
	p.Title.Text = "lateness and end-to-end latency per trial"
	p.X.Label.Text = "target rate (M tuples/s)"
	p.Y.Label.Text = "µs (log scale)"
	style(p)
	logY(p)
	n := 0
	for i, name := range order {
		xys := series[name]
		if len(xys) == 0 {
			continue
		}
		sort.Slice(xys, func(a, b int) bool { return xys[a].X < xys[b].X })
		l, sc, err := plotter.NewLinePoints(xys)
		if err != nil {
			continue
		}
		l.Color, sc.Color = palette[i], palette[i]
		if strings.HasSuffix(name, "p99") {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l, sc)
		p.Legend.Add(name, l, sc)
		n++
	}
	if n == 0 {
		return Figure{}, false
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Y.Max *= 30 // room for the legend above the lines (log scale)
	svg, err := svgOf(p, 18*vg.Centimeter, 11*vg.Centimeter)
	if err != nil {
		return Figure{}, false
	}
	return Figure{ID: "percentiles", Title: "Lateness and latency per trial", SVG: svg,
		Caption: "Lateness: how late the sender's slots were against the schedule. Latency: the receivers' end-to-end latency (emit to consume). Solid p50, dashed p99."}, true
}

// boxes draws one box per category from precomputed quantiles
// (p1, p25, p50, p75, p99), in µs on a log scale.
func boxes(title, ylabel string, names []string, qs [][5]int64, log bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	style(p)
	if log {
		logY(p)
	}
	floor := math.Inf(1)
	for _, q := range qs {
		for _, v := range q {
			if v > 0 {
				floor = math.Min(floor, float64(v)/1e3)
			}
		}
	}
	if math.IsInf(floor, 1) {
		floor = 1e-3
	}
	y := func(ns int64) float64 {
		if !log {
			return float64(ns) / 1e3
		}
		return math.Max(float64(ns)/1e3, floor/2) // log scale: an exact 0 sits at the bottom
	}
	for i, q := range qs {
		x := float64(i)
		col := palette[i%len(palette)]
		box, err := plotter.NewPolygon(plotter.XYs{{X: x - 0.3, Y: y(q[1])}, {X: x + 0.3, Y: y(q[1])}, {X: x + 0.3, Y: y(q[3])}, {X: x - 0.3, Y: y(q[3])}})
		if err != nil {
			return nil, err
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
				return nil, err
			}
			l.Color, l.Width = col, vg.Points(1.5)
			p.Add(l)
		}
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	if !log {
		p.Y.Min = 0
	}
	return p, nil
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
	if p, err := boxes("tuple latency per pair of points", "latency (µs, log scale)", names, lat, true); err == nil {
		if svg, err := svgOf(p, w, 11*vg.Centimeter); err == nil {
			out = append(out, Figure{ID: "latency", Title: "Where a tuple's time goes", SVG: svg,
				Caption: "Per pair of instrumentation points, same-node and cross-node pairs apart (the paper's Fig. 17): box from p25 to p75, line at the median, whiskers at p1 and p99, in the reference node's time."})
		}
	}
	if p, err := boxes("error bound of those latencies (±)", "half-width (µs)", names, errs, false); err == nil {
		if svg, err := svgOf(p, w, 9*vg.Centimeter); err == nil {
			out = append(out, Figure{ID: "error", Title: "How well it is known", SVG: svg,
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
	p.Y.Label.Text = "M tuples/s"
	style(p)
	n := 0
	add := func(xys plotter.XYs, label string, dashed bool) {
		if len(xys) < 2 {
			return
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return
		}
		l.Color, l.Width = palette[n%len(palette)], vg.Points(1.5)
		if dashed {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(label, l)
		n++
	}
	for _, r := range an.PointRates {
		var xys plotter.XYs
		for k, v := range r.PerSec {
			xys = append(xys, plotter.XY{X: r.StartS + (float64(k)+0.5)*r.BinS, Y: v / 1e6})
		}
		add(xys, r.Point+" (log records)", false)
	}
	for _, s := range an.Throughput {
		var xys plotter.XYs
		for k, v := range s.PerSec {
			xys = append(xys, plotter.XY{X: (float64(k) + 0.5) * s.PeriodS, Y: v / 1e6})
		}
		add(xys, s.Channel+" on "+s.Node+" (counter)", true)
	}
	if n == 0 {
		return Figure{}, false
	}
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	if _, max := p.Y.Min, p.Y.Max; max > 0 {
		p.Y.Max = max * 1.45 // room for the legend
	}
	svg, err := svgOf(p, 18*vg.Centimeter, 10*vg.Centimeter)
	if err != nil {
		return Figure{}, false
	}
	return Figure{ID: "throughput", Title: "Throughput over time", SVG: svg,
		Caption: "Records per 100 ms at each instrumentation point of the profiled trial, from its logs, in the reference node's time (solid), and the periodic counters of counter channels (dashed; each counter's own start)."}, true
}

func clockFigure(d *results.Dir, an *analysis.Report) (Figure, bool) {
	methods := []string{"CP (paper)", "CP (tighter)", "ReT (median round trip)", "system clock (NTP maxerror)"}
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{}}
	pts := make([]plotter.XYs, len(methods))
	var names []string
	for i, r := range d.Relation.Relations {
		c := r.Compare
		if c == nil {
			continue
		}
		x := float64(len(names))
		names = append(names, r.Node+" → "+r.Reference)
		for k, v := range []float64{c.PaperNs, c.TighterNs, c.ReTMedianNs, c.NTPMaxNs} {
			if v > 0 {
				pts[k] = append(pts[k], plotter.XY{X: x + 0.12*float64(k) - 0.18, Y: v / 1e3})
			}
		}
		_ = i
	}
	if len(names) == 0 {
		return Figure{}, false
	}
	p := plot.New()
	p.Title.Text = "error bound of one cross-node timestamp, by method"
	p.Y.Label.Text = "µs (log scale)"
	style(p)
	logY(p)
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
		p.Legend.Add(methods[k], sc)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	p.Legend.Top = true
	p.Y.Max *= 100 // room for the legend (log scale)
	svg, err := svgOf(p, 18*vg.Centimeter, 10*vg.Centimeter)
	if err != nil {
		return Figure{}, false
	}
	return Figure{ID: "clock", Title: "Clock methods side by side", SVG: svg,
		Caption: "The paper's Fig. 15 for this run: CP is half the MinRTT of the probes before and after; the tighter bound uses every probe; ReT pays a whole return trip, measured on the same paths; the system clock's is the kernel's own NTP estimate (adjtimex), summed over both nodes."}, true
}
