package report

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/cloudprofiler-go/cp/analysis/compare"
	"github.com/cloudprofiler-go/cp/internal/atomicfile"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/rundir"
)

// comparePage is cpsweep compare's HTML page.
type comparePage struct {
	C         *compare.Comparison
	Figures   []Figure
	Generated string
}

// WriteComparison writes the comparison as one self-contained HTML page
// at path: the table, the runs' sweeps overlaid, their latency
// distributions at the answer overlaid, and where they differ. The page
// checks itself as the report does.
func WriteComparison(path string, c *compare.Comparison) error {
	pg := comparePage{C: c, Generated: time.Now().UTC().Format(time.RFC3339)}
	if f, ok := overlaidSweeps(c); ok {
		pg.Figures = append(pg.Figures, f)
	}
	var dists []answerDist
	var labels []string
	for i, r := range c.Runs {
		var problems []string
		d, err := rundir.Open(r.Dir)
		if err != nil {
			continue
		}
		for _, a := range answerDists(d, &problems) {
			dists = append(dists, a)
			labels = append(labels, fmt.Sprintf("run %d (%s), trial %d, receiver%d", i+1, r.Name, a.Trial, a.Receiver))
		}
	}
	if f, ok := distributionFigure(dists); ok {
		for i := range f.Legend {
			f.Legend[i].Label = labels[i]
		}
		f.Caption = "Every receiver's end-to-end latency in every run at each run's answer, on HdrHistogram's percentile axis."
		pg.Figures = append(pg.Figures, f)
	}
	var b bytes.Buffer
	if err := comparePageTemplate.Execute(&b, pg); err != nil {
		return err
	}
	return atomicfile.Write(path, b.Bytes(), 0o644)
}

// runMarks are the passing trials' marks of the runs in order (a run's
// failing trials are crosses in its colour): distinct shapes, so that one
// run's trials never hide another's at the same rates.
var runMarks = []struct {
	shape draw.GlyphDrawer
	kind  string
}{{draw.CircleGlyph{}, "circle"}, {draw.TriangleGlyph{}, "triangle"}, {draw.SquareGlyph{}, "square"}}

// overlaidSweeps draws every run's trials, achieved against target, one
// colour and one shape a run, its failed trials as crosses.
func overlaidSweeps(c *compare.Comparison) (Figure, bool) {
	p := plot.New()
	p.Title.Text = "target vs achieved rate, every run"
	p.Y.Label.Text = "achieved rate (tuples/s)"
	style(p)
	var marks plotter.XYs
	var legend []LegendEntry
	var rates []float64
	lo, hi := math.Inf(1), 0.0
	failed := false
	for i, r := range c.Runs {
		var pass, fail plotter.XYs
		for _, pt := range r.Points {
			if pt.Target > 0 && pt.Achieved > 0 {
				xy := plotter.XY{X: pt.Target, Y: pt.Achieved}
				if pt.Pass {
					pass = append(pass, xy)
				} else {
					fail = append(fail, xy)
				}
				rates = append(rates, pt.Target)
				lo, hi = math.Min(lo, math.Min(pt.Target, pt.Achieved)), math.Max(hi, math.Max(pt.Target, pt.Achieved))
			}
		}
		if len(pass)+len(fail) == 0 {
			continue
		}
		col, m := palette[i%len(palette)], runMarks[i%len(runMarks)]
		// the later runs' marks smaller, so that a mark on another stays visible
		radius := vg.Points(6 - 1.5*float64(i%3))
		for _, set := range []struct {
			xys   plotter.XYs
			shape draw.GlyphDrawer
		}{{pass, m.shape}, {fail, draw.CrossGlyph{}}} {
			if len(set.xys) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(set.xys)
			if err != nil {
				continue
			}
			sc.GlyphStyle = draw.GlyphStyle{Shape: set.shape, Color: col, Radius: radius}
			p.Add(sc)
		}
		failed = failed || len(fail) > 0
		legend = append(legend, LegendEntry{Label: fmt.Sprintf("run %d (%s): answer %s; %d passed, %d failed", i+1, r.Name, rateOr(r.LastPass), len(pass), len(fail)), Color: css(col), Kind: m.kind})
		marks = append(append(marks, pass...), fail...)
	}
	if len(marks) == 0 {
		return Figure{}, false
	}
	if failed {
		legend = append(legend, LegendEntry{Label: "a failed trial, in its run's colour", Color: "rgb(90,90,90)", Kind: "cross"})
	}
	rateAxis(&p.X, rates)
	if hi/lo >= 10 {
		fitLog(&p.Y, lo, hi, RateTicks(true))
	} else {
		fitLinear(&p.Y, lo, hi, false, RateTicks(false))
	}
	svg, chk, err := render(p, 18*vg.Centimeter, 12*vg.Centimeter, marks, nil)
	if err != nil {
		return Figure{}, false
	}
	return Figure{ID: "sweeps", Title: "Sweeps", SVG: svg, Legend: legend, Check: chk,
		Caption: "Every trial of every run, achieved against target: one colour and shape a run (the later runs' marks smaller, so that both show where they coincide), a failed trial as a cross in its run's colour."}, true
}

func rateOr(v float64) string {
	if v <= 0 {
		return "none"
	}
	return numfmt.Rate(v)
}

var compareFuncs = template.FuncMap{
	"inc": func(i int) int { return i + 1 },
	"pct": func(f float64) string { return fmt.Sprintf("+%.1f%%", 100*f) },
	"ns": func(v int64) string {
		if v <= 0 {
			return "-"
		}
		return numfmt.Ns(float64(v))
	},
}

var comparePageTemplate = template.Must(template.Must(template.New("compare").Funcs(compareFuncs).Parse(figureTemplate)).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>cpsweep compare</title>
<style>` + pageStyle + `</style>
</head>
<body>
<main>
<h1>cpsweep compare</h1>
<div class="verdict">{{.C.Statement}}</div>
<table>
<tr><th>#</th><th class="l">name</th><th class="l">started</th><th class="l">answer</th><th>reproducible</th><th>spread</th><th>latency p50</th><th>latency p99</th><th>trials</th><th class="l">to be used</th></tr>
{{range $i, $r := .C.Runs}}<tr><td>{{inc $i}}</td><td class="l">{{$r.Name}}</td><td class="l">{{$r.Started}}</td><td class="why">{{$r.Answer}}</td><td>{{if not $r.Boundary}}-{{else if $r.Reproducible}}yes{{else}}no{{end}}</td><td>{{if $r.Boundary}}{{pct $r.Spread}}{{else}}-{{end}}</td><td>{{ns $r.LatencyP50Ns}}</td><td>{{ns $r.LatencyP99Ns}}</td><td>{{$r.Trials}}</td><td class="why">{{if $r.Trust}}NO: {{$r.Trust}}{{else}}yes{{end}}</td></tr>
{{end}}</table>
{{with .C.Changes}}<h2>Against run 1</h2>
<p>A difference is a change only when the two runs' own repeats do not overlap.</p>
<ul>{{range .}}<li>{{if .Exceeds}}<b>{{.Statement}}</b>{{else}}{{.Statement}}{{end}}</li>{{end}}</ul>{{end}}
{{range .Figures}}<h2>{{.Title}}</h2>
{{template "fig" .}}{{end}}
<h2>What limited each run</h2>
<ul>{{range $i, $r := .C.Runs}}<li>run {{inc $i}} ({{$r.Name}}): {{with $r.Limit}}{{.}}{{else}}not diagnosed{{end}}{{with $r.Hosts}}<br><span class="small">hosts at the answer: {{.}}</span>{{end}}</li>{{end}}</ul>
{{if .C.PlanDiffers}}<h2>The plans differ</h2>
<p>Values in run order (run 1 | run 2 | ...): the answers measure different things.</p>
<ul>{{range .C.PlanDiffers}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
{{with .C.MachinesDiffer}}<h2>The machines differ</h2><p>{{.}}</p>{{end}}
<p class="small">Generated {{.Generated}} by cpsweep compare.</p>
</main>
` + selfCheckScript + `
</body>
</html>
`))
