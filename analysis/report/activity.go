package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"sort"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/analysis/activity"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/rundir"
)

// maxPAGBytes bounds the pag.json the report reads.
const maxPAGBytes = 256 << 20

// pagSection is the program activity graph (cpsweep analyze --pag): the
// critical participation per window as stacked bars, the run's totals
// and the invariants that did not hold.
type pagSection struct {
	Figure     Figure
	Totals     []pagShare
	Violations []pagViolation
	More       int // violations not listed
	Limits     string
	Ambiguous  int
	// Agreement says whether the diagnosis, the service rates and this
	// graph name the same stage (pag.json's, as analyze printed it).
	// Agreement is the analyses' whole statement, AgreementShort its two
	// lines: the page shows those, the reasons behind a click.
	Agreement, AgreementShort string
	Disagree                  bool
}

type pagShare struct {
	Activity, Share string
}

type pagViolation struct {
	Invariant, Worker, At, Value, Limit, Detail string
}

// pagSectionOf reads pag.json when the run has one (nil otherwise; a
// damaged one is a problem on the page).
func pagSectionOf(d *rundir.Dir, pg *page) *pagSection {
	b, err := d.ReadFile(rundir.PAGFile, maxPAGBytes)
	if err != nil {
		return nil // none: the section is not there
	}
	var f activity.File
	if err := json.Unmarshal(b, &f); err != nil || f.Report == nil {
		pg.Problems = append(pg.Problems, fmt.Sprintf("%s: %v (run cpsweep analyze --pag again)", rundir.PAGFile, err))
		return nil
	}
	r := f.Report
	sec := &pagSection{Ambiguous: r.Ambiguous}
	if a := r.Agreement; a != nil {
		sec.Agreement, sec.AgreementShort, sec.Disagree = a.Statement, a.Short, !a.Agree
	}
	shares := r.SystemCP // the system's own activities, the input's schedule left out
	if len(shares) == 0 && r.InputShare == 0 {
		shares = r.CP // a pag.json from before the split
	}
	for _, s := range shares {
		if s.Value >= 0.001 {
			sec.Totals = append(sec.Totals, pagShare{Activity: s.Worker + " " + s.Kind, Share: fmt.Sprintf("%.1f%%", 100*s.Value)})
		}
	}
	if c := r.CPUWait; c != nil && c.Share > 0 {
		sec.Totals = append(sec.Totals, pagShare{Activity: fmt.Sprintf("(cpu-wait: threads runnable but not running, from their host accounting sampled every %s and spread evenly over their time on the paths, in %d of %d windows; of all the paths)",
			time.Duration(c.PeriodNs), c.Windows, c.PathWindows), Share: fmt.Sprintf("%.1f%%", 100*c.Share)})
	}
	if r.InputShare > 0 {
		sec.Totals = append(sec.Totals, pagShare{Activity: "(the input's schedule: senders waiting for their next slot, of all the paths; not part of the system)",
			Share: fmt.Sprintf("%.1f%%", 100*r.InputShare)})
	}
	var t0 int64
	if len(r.Windows) > 0 {
		t0 = r.Windows[0].From
	}
	const maxRows = 50
	for i, v := range r.Violations {
		if i == maxRows {
			sec.More = len(r.Violations) - maxRows
			break
		}
		sec.Violations = append(sec.Violations, pagViolation{Invariant: v.Invariant, Worker: v.Worker,
			At: fmt.Sprintf("+%.1f ms", float64(v.FromNs-t0)/1e6), Value: numfmt.Ns(float64(v.ValueNs)), Limit: numfmt.Ns(float64(v.LimitNs)), Detail: v.Detail})
	}
	var lim []string
	if l := r.Limits; l.MessageMaxNs > 0 {
		lim = append(lim, "message-max "+time.Duration(l.MessageMaxNs).String())
	}
	if l := r.Limits; l.OperatorMaxNs > 0 {
		lim = append(lim, "operator-max "+time.Duration(l.OperatorMaxNs).String())
	}
	if l := r.Limits; l.ProgressMaxNs > 0 {
		lim = append(lim, "progress-max "+time.Duration(l.ProgressMaxNs).String())
	}
	if r.Limits.EveryWindow {
		lim = append(lim, "progress in every window")
	}
	sec.Limits = strings.Join(lim, ", ")
	sec.Figure = cpFigure(r.Windows, r.CP)
	return sec
}

// cpPalette colours the activities, the largest over the run first.
var cpPalette = []string{"rgb(31,119,180)", "rgb(255,127,14)", "rgb(44,160,44)", "rgb(214,39,40)", "rgb(148,103,189)",
	"rgb(140,86,75)", "rgb(227,119,194)", "rgb(127,127,127)", "rgb(188,189,34)", "rgb(23,190,207)"}

// cpFigure draws one stacked bar per window: each activity's critical
// participation, in the run's order (largest first); a window without a
// path is an empty column.
func cpFigure(windows []activity.Result, totals []activity.Share) Figure {
	const (
		left, right, top, bottom = 60.0, 20.0, 10.0, 40.0
		plotW, plotH             = 760.0, 220.0
	)
	order := map[string]int{}
	var legend []LegendEntry
	for _, s := range totals {
		key := s.Worker + " " + s.Kind
		if _, ok := order[key]; !ok && len(order) < len(cpPalette)-1 {
			order[key] = len(order)
			legend = append(legend, LegendEntry{Label: key, Color: cpPalette[order[key]], Kind: "cell"})
		}
	}
	other := len(cpPalette) - 1 // everything past the palette
	w, h := left+plotW+right, top+plotH+bottom
	var b strings.Builder
	svgf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif">`, w, h, w, h)
	chk := figCheck{Area: [4]float64{left, top, left + plotW, top + plotH}, Marks: [][2]float64{}}
	n := max(len(windows), 1)
	colW := plotW / float64(n)
	usedOther := false
	for i, win := range windows {
		shares := append([]activity.Share(nil), win.CP...)
		sort.SliceStable(shares, func(a, b int) bool { return rank(order, shares[a], other) < rank(order, shares[b], other) })
		y := top + plotH
		x := left + float64(i)*colW
		for _, s := range shares {
			hgt := s.Value * plotH
			if hgt <= 0 {
				continue
			}
			c := rank(order, s, other)
			usedOther = usedOther || c == other
			y -= hgt
			svgf(&b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"><title>window %d: %s %s %.1f%%</title></rect>`,
				x+colW*0.1, y, colW*0.8, hgt, cpPalette[c], win.Window, s.Worker, s.Kind, 100*s.Value)
		}
		if win.HasPath && y < top+plotH { // the middle of the bar: inside the axes even when full
			chk.Marks = append(chk.Marks, [2]float64{x + colW/2, (y + top + plotH) / 2})
		}
	}
	if usedOther {
		legend = append(legend, LegendEntry{Label: "other activities", Color: cpPalette[other], Kind: "cell"})
	}
	axisY := top + plotH
	svgf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#444"/>`, left, axisY, left+plotW, axisY)
	for _, v := range []float64{0, 0.5, 1} {
		yy := top + plotH*(1-v)
		svgf(&b, `<text x="%.0f" y="%.1f" font-size="11" text-anchor="end">%.0f%%</text>`, left-6, yy+4, 100*v)
	}
	step := max(1, n/10)
	for i := 0; i < len(windows); i += step {
		svgf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle">%d</text>`, left+(float64(i)+0.5)*colW, axisY+16, windows[i].Window)
	}
	svgf(&b, `<text x="%.0f" y="%.1f" font-size="11" text-anchor="middle">window</text>`, left+plotW/2, axisY+32)
	b.WriteString(`</svg>`)
	js, _ := json.Marshal(chk)
	return Figure{ID: "pag", Title: "Critical participation per window", SVG: template.HTML(b.String()), Legend: legend, Check: string(js),
		Caption: "Each column is one window of the program activity graph: every activity's share of all the paths from the window's start to its end, weighted by its time (SnailTrail's critical participation; docs/activity.md). The largest share is what the run's progress waited for. An empty column: no path crossed the window (every worker waited on something outside the graph)."}
}

func rank(order map[string]int, s activity.Share, other int) int {
	if i, ok := order[s.Worker+" "+s.Kind]; ok {
		return i
	}
	return other
}
