package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/limits"
	"github.com/cloudprofiler-go/cp/rundir"
)

// labelColor is each diagnosis label's colour in the timeline (Ch. 3.5.4:
// one row per stage, one cell per snapshot).
var labelColor = map[diagnose.Label]string{
	diagnose.Healthy:  "rgb(76,175,80)",
	diagnose.DontCare: "rgb(215,215,215)",
	diagnose.Blocked:  "rgb(240,190,50)",
	diagnose.Stalled:  "rgb(214,39,40)",
}

// diagnosisSection is one trial's label timeline and summary.
type diagnosisSection struct {
	Title, Limiting, Stalls string
	// Note says why the stage table shows no limiting stage beside the
	// host's CPUs ("": the limit is a stage's).
	Note    string
	Figure  Figure
	Summary []diagnose.ModuleSummary
}

// diagnosisSections picks the trials worth showing: the one that set the
// limit (the latest at the first failing rate) and any with a confirmed
// stall, at most maxTimelines.
func diagnosisSections(d *rundir.Dir) []diagnosisSection {
	rf := d.Diagnosis
	if rf == nil || len(rf.Trials) == 0 {
		return nil
	}
	var firstFail float64
	if d.Summary != nil {
		firstFail = d.Summary.Result.FirstFail
	}
	var pick []diagnose.Trial
	limit := -1
	for i, t := range rf.Trials {
		if !t.Pass && t.Rate == firstFail {
			limit = i
		}
	}
	if limit >= 0 {
		pick = append(pick, rf.Trials[limit])
	}
	for i, t := range rf.Trials {
		if i != limit && len(t.Stalls) > 0 && len(pick) < maxTimelines {
			pick = append(pick, t)
		}
	}
	if len(pick) == 0 {
		pick = append(pick, rf.Trials[len(rf.Trials)-1])
	}
	var out []diagnosisSection
	for _, t := range pick {
		if t.Diagnosis == nil || len(t.Snapshots) == 0 || len(t.Modules) == 0 {
			continue
		}
		s := diagnosisSection{Title: fmt.Sprintf("Trial %d (%s, %s, %s)", t.N, t.Purpose, numfmt.Rate(t.Rate), map[bool]string{true: "pass", false: "FAIL"}[t.Pass]),
			Limiting: limits.Named(t.Limiting, t.Evidence), Note: limits.HostCPUNote(t.Limiting), Stalls: "none", Summary: t.Summary}
		if t.Limiting == "" {
			s.Limiting = limits.Named("none", "")
		}
		var st []string
		for _, x := range t.Stalls {
			st = append(st, fmt.Sprintf("%s %v", x.Stage, time.Duration(x.Seconds*float64(time.Second)).Round(time.Millisecond)))
		}
		if len(st) > 0 {
			s.Stalls = strings.Join(st, ", ")
		}
		s.Figure = timelineFigure(t)
		out = append(out, s)
	}
	return out
}

const maxTimelines = 3

// timelineFigure draws a trial's labels as a heatmap: a row per stage, a
// cell per snapshot, the limiting stage's cells dotted.
func timelineFigure(t diagnose.Trial) Figure {
	const (
		left, right, top, bottom = 130.0, 20.0, 10.0, 40.0
		rowH                     = 22.0
		plotW                    = 760.0
	)
	n, rows := len(t.Snapshots), len(t.Modules)
	w, h := left+plotW+right, top+float64(rows)*rowH+bottom
	cellW := plotW / float64(n)
	var b strings.Builder
	svgf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif">`, w, h, w, h)
	chk := figCheck{Area: [4]float64{left, top, left + plotW, top + float64(rows)*rowH}, Marks: [][2]float64{}}
	for m, mod := range t.Modules {
		y := top + float64(m)*rowH
		svgf(&b, `<text x="%.0f" y="%.1f" font-size="12" text-anchor="end">%s</text>`, left-8, y+rowH/2+4, mod.Name)
		for s := 0; s < n; s++ {
			snap := &t.Snapshots[s]
			if m >= len(snap.Labels) {
				continue
			}
			x := left + float64(s)*cellW
			svgf(&b, `<rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s"/>`, x, y+1, cellW+0.05, rowH-2, labelColor[snap.Labels[m]])
			if snap.Limiting == mod.Name {
				svgf(&b, `<circle cx="%.2f" cy="%.1f" r="%.1f" fill="rgb(30,30,30)"/>`, x+cellW/2, y+rowH/2, min(2.5, cellW/2.5))
			}
		}
		chk.Marks = append(chk.Marks, [2]float64{left + cellW/2, y + rowH/2}, [2]float64{left + plotW - cellW/2, y + rowH/2})
	}
	// Time axis: seconds from the first snapshot's period start.
	t0 := t.Snapshots[0].UnixNs - t.PeriodNs
	span := float64(t.Snapshots[n-1].UnixNs-t0) / 1e9
	step := niceStep(span / 8)
	axisY := top + float64(rows)*rowH
	svgf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#444"/>`, left, axisY, left+plotW, axisY)
	for v := 0.0; v <= span+1e-9; v += step {
		x := left + v/span*plotW
		svgf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#444"/>`, x, axisY, x, axisY+4)
		svgf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle">%s</text>`, x, axisY+16, trimFloat(v))
	}
	svgf(&b, `<text x="%.0f" y="%.1f" font-size="11" text-anchor="middle">seconds (snapshots every %v)</text>`, left+plotW/2, axisY+32, time.Duration(t.PeriodNs))
	b.WriteString(`</svg>`)
	js, _ := json.Marshal(chk)
	legend := []LegendEntry{{Label: "HEALTHY: processed items", Color: labelColor[diagnose.Healthy], Kind: "cell"},
		{Label: "DONTCARE: nothing to do", Color: labelColor[diagnose.DontCare], Kind: "cell"},
		{Label: "BLOCKED: held up by the stage after it", Color: labelColor[diagnose.Blocked], Kind: "cell"},
		{Label: "STALLED: had work, did not progress, did not wait", Color: labelColor[diagnose.Stalled], Kind: "cell"},
		{Label: "the period's limiting stage (confirmed)", Color: "rgb(30,30,30)", Kind: "circle"}}
	return Figure{ID: fmt.Sprintf("diagnosis-%d", t.N), Title: "Stage labels over time", SVG: template.HTML(b.String()), Legend: legend, Check: string(js),
		Caption: fmt.Sprintf("Trial %d: every stage's FlowDiagnoser label in every snapshot (%s). A confirmed stall is %d or more red cells in a row.", t.N, t.Aligned, t.Confirm)}
}

// niceStep rounds a tick step to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := 1.0
	for p*10 <= raw {
		p *= 10
	}
	for p > raw {
		p /= 10
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}
