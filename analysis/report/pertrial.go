package report

import (
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/rundir"
)

// trialPoint is one trial's worst-agent lateness and latency.
type trialPoint struct {
	rate float64
	pass bool
	v    [4]int64 // lateness p50, p99, latency p50, p99
}

// trialPoints reads them from every trial's file, by rate.
func trialPoints(d *rundir.Dir, s *rundir.Summary) []trialPoint {
	var pts []trialPoint
	for _, t := range s.Result.Trials {
		f, err := d.Trial(t.N)
		if err != nil || f.Outcome == nil {
			continue
		}
		late, _ := f.Outcome.WorstLateness()
		lat, _ := f.Outcome.WorstLatency()
		pts = append(pts, trialPoint{rate: t.Rate, pass: t.Verdict.Pass, v: [4]int64{late.P50, late.P99, lat.P50, lat.P99}})
	}
	sort.SliceStable(pts, func(a, b int) bool { return pts[a].rate < pts[b].rate })
	return pts
}

// trialFigures reads every trial's worst-agent lateness and latency
// (p50, p99) and draws them apart: lateness is the sender's (how late its
// slots were against the schedule), latency the receivers' (intended send
// to consumed). A failing trial is marked with a cross on each line.
func trialFigures(d *rundir.Dir, s *rundir.Summary) []Figure {
	pts := trialPoints(d, s)
	var out []Figure
	for _, fig := range []struct {
		id, what, title, caption string
		at                       int
	}{
		{"lateness", "lateness", "Lateness per trial", "How late the senders' slots were against the schedule (the worst sender's), solid p50, dashed p99; a red cross marks a failing trial.", 0},
		{"percentiles", "latency", "Latency per trial", "The receivers' end-to-end latency, intended send to consumed (the worst receiver's), solid p50, dashed p99; a red cross marks a failing trial.", 2},
	} {
		p := plot.New()
		p.Title.Text = fig.title
		p.Y.Label.Text = "time (log scale)"
		style(p)
		var marks, fails plotter.XYs
		var legend []LegendEntry
		var rates []float64
		lo, hi := math.Inf(1), 0.0
		for k, name := range []string{"p50", "p99"} {
			var xys plotter.XYs
			for _, pt := range pts {
				if v := pt.v[fig.at+k]; v > 0 {
					xys = append(xys, plotter.XY{X: pt.rate, Y: float64(v)})
					rates = append(rates, pt.rate)
					lo, hi = math.Min(lo, float64(v)), math.Max(hi, float64(v))
					if !pt.pass {
						fails = append(fails, plotter.XY{X: pt.rate, Y: float64(v)})
					}
				}
			}
			if len(xys) == 0 {
				continue
			}
			l, sc, err := plotter.NewLinePoints(xys)
			if err != nil {
				continue
			}
			c := palette[k]
			l.Color, sc.Color = c, c
			kind := "line"
			if k == 1 {
				l.Dashes, kind = []vg.Length{vg.Points(5), vg.Points(3)}, "dash"
			}
			p.Add(l, sc)
			legend = append(legend, LegendEntry{Label: fig.what + " " + name, Color: css(c), Kind: kind})
			marks = append(marks, xys...)
		}
		if len(marks) == 0 {
			continue
		}
		legend = crossFailures(p, fails, legend)
		rateAxis(&p.X, rates)
		fitLog(&p.Y, lo, hi, NsTicks(true))
		svg, chk, err := render(p, 18*vg.Centimeter, 10*vg.Centimeter, marks, nil)
		if err != nil {
			continue
		}
		out = append(out, Figure{ID: fig.id, Title: fig.title, SVG: svg, Legend: legend, Check: chk, Caption: fig.caption})
	}
	return out
}

// cpuFigure draws every trial's CPU: the sender agents' and the receiver
// agents' processes (cores, summed by role), the system under test's named
// processes, and every host's busy cores, against the target rate; a
// failing trial is marked with a cross on the host line.
func cpuFigure(s *rundir.Summary) (Figure, bool) {
	type point struct {
		rate float64
		pass bool
		v    [4]float64 // senders, receivers, system, hosts busy
	}
	var pts []point
	for _, t := range s.Result.Trials {
		if len(t.Hosts) == 0 {
			continue
		}
		p := point{rate: t.Rate, pass: t.Verdict.Pass}
		p.v[0], p.v[1] = cpustat.RoleCores(t.Hosts)
		for _, v := range cpustat.HostViews(t.Hosts) {
			p.v[2] += v.SUT
			p.v[3] += v.Busy * float64(v.CPUs)
		}
		pts = append(pts, p)
	}
	if len(pts) == 0 {
		return Figure{}, false
	}
	sort.SliceStable(pts, func(a, b int) bool { return pts[a].rate < pts[b].rate })
	p := plot.New()
	p.Title.Text = "CPU per trial"
	p.Y.Label.Text = "cores"
	style(p)
	var marks, fails plotter.XYs
	var legend []LegendEntry
	var rates []float64
	hi := 0.0
	for k, name := range []string{"sender agents", "receiver agents", "system under test", "hosts busy (all processes)"} {
		var xys plotter.XYs
		for _, pt := range pts {
			xys = append(xys, plotter.XY{X: pt.rate, Y: pt.v[k]})
			rates, hi = append(rates, pt.rate), math.Max(hi, pt.v[k])
			if k == 3 && !pt.pass {
				fails = append(fails, plotter.XY{X: pt.rate, Y: pt.v[k]})
			}
		}
		if allZero(xys) {
			continue // no named system under test
		}
		l, sc, err := plotter.NewLinePoints(xys)
		if err != nil {
			continue
		}
		c := palette[[]int{0, 1, 2, 4}[k]] // the hosts line is not the failing crosses' red
		l.Color, sc.Color = c, c
		p.Add(l, sc)
		legend = append(legend, LegendEntry{Label: name, Color: css(c), Kind: "line"})
		marks = append(marks, xys...)
	}
	if len(marks) == 0 {
		return Figure{}, false
	}
	legend = crossFailures(p, fails, legend)
	rateAxis(&p.X, rates)
	fitLinear(&p.Y, 0, hi, true, plot.DefaultTicks{})
	svg, chk, err := render(p, 18*vg.Centimeter, 10*vg.Centimeter, marks, nil)
	if err != nil {
		return Figure{}, false
	}
	return Figure{ID: "cpu", Title: "CPU per trial", SVG: svg, Legend: legend, Check: chk,
		Caption: "Every trial's CPU over its measured window, from the agents' host accounting: the sender and receiver agents' processes (cores, summed by role), the system under test's named processes (--sut-process), and the cores the hosts were busy, every process included. A harness that is not the bottleneck leaves the hosts room; a red cross marks a failing trial."}, true
}

func allZero(xys plotter.XYs) bool {
	for _, xy := range xys {
		if xy.Y != 0 {
			return false
		}
	}
	return true
}

// sweepThroughputFigure draws what the receivers consumed over the whole
// sweep, trial after trial: from each receiver's backlog samples (every
// 100 ms, cumulative consumed counts), the rate between consecutive
// samples, summed over receivers, against the time since the first
// trial; a trial's segment is green when it passed, red when it failed.
func sweepThroughputFigure(d *rundir.Dir, s *rundir.Summary) (Figure, bool) {
	p := plot.New()
	p.Title.Text = "throughput over the sweep"
	p.X.Label.Text = "time since the first trial (s)"
	p.Y.Label.Text = "tuples/s consumed"
	style(p)
	var marks plotter.XYs
	start := int64(0)
	yhi := 0.0
	drawn := map[bool]bool{}
	for _, t := range s.Result.Trials {
		f, err := d.Trial(t.N)
		if err != nil || f.Outcome == nil {
			continue
		}
		rates := map[int64]float64{} // sample instant (rounded to 10 ms) -> tuples/s over receivers
		for _, r := range f.Outcome.Receivers {
			if r == nil {
				continue
			}
			for i := 1; i < len(r.Backlog); i++ {
				a, b := r.Backlog[i-1], r.Backlog[i]
				if dt := b.UnixNs - a.UnixNs; dt > 0 && b.Consumed >= a.Consumed {
					rates[b.UnixNs/1e7] += float64(b.Consumed-a.Consumed) / (float64(dt) / 1e9)
				}
			}
		}
		keys := make([]int64, 0, len(rates))
		for k := range rates {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(a, b int) bool { return keys[a] < keys[b] })
		var xys plotter.XYs
		for _, k := range keys {
			if start == 0 {
				start = k
			}
			xys = append(xys, plotter.XY{X: float64(k-start) / 100, Y: rates[k]})
			yhi = math.Max(yhi, rates[k])
		}
		if len(xys) < 2 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			continue
		}
		l.Color = FailColor
		if t.Verdict.Pass {
			l.Color = PassColor
		}
		p.Add(l)
		drawn[t.Verdict.Pass] = true
		marks = append(marks, xys...)
	}
	if len(marks) < 2 {
		return Figure{}, false
	}
	var legend []LegendEntry
	if drawn[true] {
		legend = append(legend, LegendEntry{Label: "a passing trial", Color: css(PassColor), Kind: "line"})
	}
	if drawn[false] {
		legend = append(legend, LegendEntry{Label: "a failing trial", Color: css(FailColor), Kind: "line"})
	}
	xlo, xhi := math.Inf(1), math.Inf(-1)
	for _, m := range marks {
		xlo, xhi = math.Min(xlo, m.X), math.Max(xhi, m.X)
	}
	fitLinear(&p.X, xlo, xhi, false, plot.DefaultTicks{})
	fitLinear(&p.Y, 0, math.Max(yhi, 1), true, RateTicks(false))
	svg, chk, err := render(p, 18*vg.Centimeter, 10*vg.Centimeter, marks, nil)
	if err != nil {
		return Figure{}, false
	}
	return Figure{ID: "sweep-throughput", Title: "Throughput over the sweep", SVG: svg, Legend: legend, Check: chk,
		Caption: "What the receivers consumed, per 100 ms, trial after trial (warm-up included; the gaps are the pauses between trials), from their backlog samples: a failing trial's line shows how far below its target it fell, or that it kept up and failed another rule."}, true
}

// crossFailures marks the failing trials' points with red crosses and
// says so in the legend (nothing when none failed).
func crossFailures(p *plot.Plot, fails plotter.XYs, legend []LegendEntry) []LegendEntry {
	if len(fails) == 0 {
		return legend
	}
	x, err := plotter.NewScatter(fails)
	if err != nil {
		return legend
	}
	x.GlyphStyle = draw.GlyphStyle{Shape: draw.CrossGlyph{}, Color: FailColor, Radius: vg.Points(5)}
	p.Add(x)
	return append(legend, LegendEntry{Label: "failing trial", Color: css(FailColor), Kind: "cross"})
}
