package report

import "html/template"

// The page checks itself when it loads, for what a reader needs of every
// figure: an SVG with drawn content; every plotted point inside the data
// area (not on or beyond the frame); on the sweep plot, the answer's
// interval inside it and at least a point wide; no text of the plot outside
// its canvas; and the legend (HTML, below the plot) not over the plot.
// Every table must show every cell whole at the page's width (none cut off
// by the table's scroll, none past the window's edge, none over three
// lines tall: the rest belongs behind a click). Script errors are
// recorded too. The result is in <body data-check="...">
// ("ok", or every problem) for headless browsers and tests to read.
var pageTemplate = template.Must(template.Must(template.New("report").Parse(figureTemplate)).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>cpsweep report{{with .Name}}: {{.}}{{end}}</title>
<style>
` + pageStyle + `</style>
</head>
<body>
<main>
<h1>cpsweep report{{with .Name}}: {{.}}{{end}}</h1>
<p class="meta">{{with .Started}}started {{.}} · {{end}}{{with .Topology}}{{.}} · {{end}}<span class="small">{{.Dir}}</span></p>
{{with .Verdict}}<div class="verdict">Maximum sustainable throughput: <b>{{.}}</b>{{with $.Latency}}<div class="headline">{{.}}</div>{{end}}{{with $.Limit}}<div class="headline">{{.}}</div>{{end}}</div>{{end}}
{{with .History}}<p class="meta">History: {{.}}</p>{{end}}

{{with .Problems}}<h2>Problems</h2>
<ul class="problems">{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}

{{range .Figures}}{{if eq .ID "sweep"}}<h2>{{.Title}}</h2>
{{template "fig" .}}{{end}}{{end}}

{{with .Trials}}<h2>Trials</h2>
<table>
<tr><th>#</th><th class="l">purpose</th><th>target</th><th>achieved</th><th>verdict</th><th>lateness p99</th><th>latency p50</th><th>latency p99</th><th>p99.9</th><th>max</th><th class="l">failed rules</th><th class="l">hosts</th></tr>
{{range .}}<tr><td>{{.N}}</td><td class="l">{{.Purpose}}</td><td>{{.Target}}</td><td>{{.Achieved}}</td><td class="{{.Verdict}}">{{.Verdict}}</td><td>{{.LatenessP99}}</td><td>{{.LatencyP50}}</td><td>{{.LatencyP99}}</td><td>{{.LatencyP999}}</td><td>{{.LatencyMax}}</td><td class="why">{{if .Failed}}<details><summary>{{.Failed}}</summary>{{.FailedDetail}}</details>{{end}}</td><td class="why">{{if .Host}}<details><summary>{{.Host}}</summary>{{.HostDetail}}</details>{{end}}</td></tr>
{{end}}</table>{{end}}

{{range .Figures}}{{if eq .ID "lateness"}}{{template "fig" .}}{{end}}{{end}}
{{range .Figures}}{{if eq .ID "percentiles"}}{{template "fig" .}}{{end}}{{end}}
{{range .Figures}}{{if eq .ID "cpu"}}{{template "fig" .}}{{end}}{{end}}
{{range .Figures}}{{if eq .ID "sweep-throughput"}}{{template "fig" .}}{{end}}{{end}}
{{range .Figures}}{{if eq .ID "distribution"}}<h2>{{.Title}}</h2>
{{template "fig" .}}<p class="small">HdrHistogram files: {{range $i, $f := $.Hgrm}}{{if $i}}, {{end}}<code>{{$f}}</code>{{end}}</p>{{end}}{{end}}

{{with .Diagnosis}}<h2>Why the limit is where it is</h2>
<p>Every stage's time is accounted (busy, blocked, idle) and every snapshot labelled after FlowDiagnoser: <b>HEALTHY</b> (it processed items), <b>DONTCARE</b> (nothing to do), <b>BLOCKED</b> (held up by the stage after it), <b>STALLED</b> (it had work, made no progress and was not held up: the stage at fault). The limiting stage is busy and not blocked while the stage before it is blocked or its queue grows (docs/diagnosis.md).</p>
{{range .}}<h3>{{.Title}}</h3>
<p>Limited by: <b>{{.Limiting}}</b>. Confirmed stalls: {{.Stalls}}.</p>
{{with .Note}}<p class="small">{{.}}</p>{{end}}
{{template "fig" .Figure}}
<table>
<tr><th class="l">stage</th><th>HEALTHY</th><th>DONTCARE</th><th>BLOCKED</th><th>STALLED</th><th>confirmed stalls</th><th>mean stall (s)</th><th>longest (s)</th><th>limiting snapshots</th></tr>
{{range .Summary}}<tr><td class="l">{{.Stage}}</td><td>{{index .Labels "HEALTHY"}}</td><td>{{index .Labels "DONTCARE"}}</td><td>{{index .Labels "BLOCKED"}}</td><td>{{index .Labels "STALLED"}}</td><td>{{.Stalls}}</td><td>{{printf "%.2f" .MeanStall}}</td><td>{{printf "%.2f" .MaxStall}}</td><td>{{.Limiting}}</td></tr>
{{end}}</table>
{{end}}{{end}}

{{with .Rates}}<h2>Service rates against the answer</h2>
<p>Every stage estimates its service rate while it runs (docs/service-rate.md): <b>raftlib</b>, the filtered 95th percentile of the tuples per second of the periods in which it was neither starved nor blocked; <b>busy_time</b>, tuples over the time it spent on its own work; <b>backlog</b>, for a black box (the transport, a relay, a broker), what it delivered in the periods in which it was backlogged, which it is only at or above its capacity. The limit is the pipeline rate at which the stage would saturate (its estimate over its share of its kind's traffic); the ratio is the sweep's answer ({{.Answer}}) over that limit: about 1 for the stage that limited the sweep, below 1 for the others. From {{.Trial}}: the trial whose next limit explains the answer, when one does.</p>
<table>
<tr><th class="l">stage</th><th class="l">method</th><th>estimate (tuples/s)</th><th>pipeline limit</th><th>answer ÷ limit</th><th>utilisation</th><th class="l">status</th></tr>
{{range .Rows}}<tr><td class="l">{{.Stage}}</td><td class="l">{{.Method}}</td><td>{{.Estimate}}</td><td>{{.Limit}}</td><td>{{.Ratio}}</td><td>{{.Utilisation}}</td><td class="why">{{.Status}}</td></tr>
{{end}}</table>
{{end}}

{{with .PAG}}<h2>What the progress waited for: the activity graph</h2>
<p>From the profiled trial's activity channels and per-tuple points (cpsweep analyze --pag; docs/activity.md).{{if .Ambiguous}} {{.Ambiguous}} messages were ambiguous within the clock bound: marked, never on a path.{{end}}</p>
{{if .Agreement}}{{if .AgreementShort}}<details class="agreement"><summary>{{if .Disagree}}<b>{{.AgreementShort}}</b>{{else}}{{.AgreementShort}}{{end}}</summary><p>{{.Agreement}}</p></details>{{else}}<p>{{.Agreement}}</p>{{end}}{{end}}
{{template "fig" .Figure}}
{{with .Totals}}<table>
<tr><th class="l">activity</th><th>critical participation over the run (share of the system's own)</th></tr>
{{range .}}<tr><td class="why">{{.Activity}}</td><td>{{.Share}}</td></tr>
{{end}}</table>{{end}}
{{if .Limits}}<h3>Invariants ({{.Limits}})</h3>
{{if .Violations}}<table>
<tr><th class="l">invariant</th><th class="l">worker</th><th>at</th><th>measured</th><th>limit</th><th class="l">detail</th></tr>
{{range .Violations}}<tr><td class="l">{{.Invariant}}</td><td class="l">{{.Worker}}</td><td>{{.At}}</td><td>{{.Value}}</td><td>{{.Limit}}</td><td class="l">{{.Detail}}</td></tr>
{{end}}</table>{{if .More}}<p>... and {{.More}} more in pag.json.</p>{{end}}
{{else}}<p>Every invariant held.</p>{{end}}{{end}}
{{end}}

{{if .Pairs}}<h2>Tuple latency across nodes, with error bounds</h2>
<p>From the profiled trial's logs, joined by tuple id across nodes and translated into the reference node's time{{with .Analysis}} ({{.Reference}}){{end}}.
Two uncertainties apply, and both are shown. <b>The clocks:</b> every tuple's true latency lies within its error bound (the ± columns; 0 on the reference node).
<b>The summary:</b> min and max are exact; each percentile comes from a histogram with three significant digits, so the true percentile lies at most its rounding (below each value, never more than 0.1%) under the value shown.</p>
<table>
<tr><th class="l">points</th><th class="l">group</th><th>tuples</th><th>min</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>error p50</th><th>error max</th><th>only at first / second</th></tr>
{{range .Pairs}}<tr><td class="l">{{.Pair}}</td><td class="l">{{.Group}}</td><td>{{.Count}}</td><td>{{.Min}}</td><td>{{.P50}}<br><span class="small">−{{.R50}}</span></td><td>{{.P90}}<br><span class="small">−{{.R90}}</span></td><td>{{.P99}}<br><span class="small">−{{.R99}}</span></td><td>{{.P999}}<br><span class="small">−{{.R999}}</span></td><td>{{.Max}}</td><td>±{{.ErrP50}}</td><td>±{{.ErrMax}}</td><td>{{.OnlyFrom}} / {{.OnlyTo}}</td></tr>
{{end}}</table>
{{range .Figures}}{{if or (eq .ID "latency") (eq .ID "error")}}{{template "fig" .}}{{end}}{{end}}
{{end}}

{{with .NoLatency}}<h2>Tuple latency across nodes</h2>
<p class="nolatency">{{.}}</p>{{end}}

{{if .Clock}}<h2>Clocks: CP vs tighter CP vs ReT vs the system clock</h2>
<table>
<tr><th class="l">nodes</th><th>CP (paper)</th><th>CP (tighter, mid-window)</th><th>ReT round trip (min / median / max)</th><th>system clock</th></tr>
{{range .Clock}}<tr><td class="l">{{.Node}}</td><td>{{.Paper}}</td><td>{{.Tighter}}</td><td>{{.ReT}}</td><td>{{.NTP}}</td></tr>
{{end}}</table>
{{range .Figures}}{{if eq .ID "clock"}}{{template "fig" .}}{{end}}{{end}}
{{with .ReT}}<p>Return-trip handlers in the profiled trial:</p><ul>{{range .}}<li>{{.Channel}} on {{.Node}}: {{.RoundTrip.Count}} round trips, median {{.RoundTrip.P50}} ns, p99 {{.RoundTrip.P99}} ns, {{.Unacked}} unacknowledged</li>{{end}}</ul>{{end}}
{{end}}

{{range .Figures}}{{if eq .ID "throughput"}}<h2>{{.Title}}</h2>
{{template "fig" .}}{{end}}{{end}}

{{with .Config}}<h2>Configuration</h2>
<details><summary>config.json: the plan, the search, the agents and the command line</summary>
<pre>{{.}}</pre></details>{{end}}
<p class="small">Generated {{.Generated}} by cpsweep report.</p>
</main>
` + selfCheckScript + `
</body>
</html>
`))

// figureTemplate draws one figure: the plot, its HTML legend (swatches
// drawn like the plot's marks) and its caption.
const figureTemplate = `{{define "fig"}}<figure class="plot" id="fig-{{.ID}}" data-check="{{.Check}}">{{.SVG}}
{{with .Legend}}<ul class="legend">{{range .}}<li><svg viewBox="0 0 28 12" aria-hidden="true">{{if eq .Kind "band"}}<rect x="2" y="1" width="24" height="10" fill="{{.Color}}" stroke="rgb(0,140,0)"/>{{else if eq .Kind "line"}}<line x1="1" y1="6" x2="27" y2="6" stroke="{{.Color}}" stroke-width="2"/>{{else if eq .Kind "dash"}}<line x1="1" y1="6" x2="27" y2="6" stroke="{{.Color}}" stroke-width="2" stroke-dasharray="5 3"/>{{else if eq .Kind "cross"}}<path d="M10 2 L18 10 M18 2 L10 10" stroke="{{.Color}}" stroke-width="2"/>{{else if eq .Kind "cell"}}<rect x="4" y="1" width="20" height="10" fill="{{.Color}}"/>{{else if eq .Kind "square"}}<rect x="10" y="2" width="8" height="8" fill="none" stroke="{{.Color}}" stroke-width="1.5"/>{{else if eq .Kind "triangle"}}<path d="M14 1 L19 10 L9 10 Z" fill="none" stroke="{{.Color}}" stroke-width="1.5"/>{{else}}<circle cx="14" cy="6" r="4" fill="{{.Color}}"/>{{end}}</svg>{{.Label}}</li>{{end}}</ul>{{end}}
<figcaption>{{.Caption}}</figcaption></figure>{{end}}`

// pageStyle is the report's and the comparison's style sheet.
const pageStyle = `  body { font: 15px/1.45 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: #222; margin: 0; background: #fafafa; }
  main { max-width: 1080px; margin: 0 auto; padding: 24px 28px 60px; background: #fff; }
  h1 { font-size: 26px; margin: 0 0 4px; }
  h2 { font-size: 20px; margin: 36px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
  h3 { font-size: 16px; margin: 22px 0 6px; }
  .meta { color: #666; margin: 0 0 18px; }
  .verdict { font-size: 18px; background: #eef7ee; border-left: 4px solid #3a3; padding: 10px 14px; margin: 14px 0; }
  .verdict .headline { font-size: 14px; color: #333; margin-top: 4px; }
  figure { margin: 18px 0; overflow-x: auto; }
  figure svg { display: block; max-width: 100%; height: auto; }
  figcaption { color: #555; font-size: 13.5px; margin-top: 6px; max-width: 900px; }
  table { border-collapse: collapse; font-size: 13.5px; margin: 10px 0; display: block; max-width: 100%; overflow-x: auto; }
  th, td { border-bottom: 1px solid #e4e4e4; padding: 4px 10px; text-align: right; white-space: nowrap; }
  th { background: #f3f3f3; font-weight: 600; white-space: normal; vertical-align: bottom; }
  td.l, th.l { text-align: left; }
  td.fail { color: #b00; }
  td.pass { color: #080; }
  td.why { text-align: left; white-space: normal; color: #555; max-width: 420px; }
  .problems li { color: #8a4b00; }
  pre { background: #f6f6f6; padding: 10px; overflow-x: auto; font-size: 12.5px; }
  .small { color: #777; font-size: 12.5px; }
  ul.legend { list-style: none; padding: 0; margin: 6px 0 0; display: flex; flex-wrap: wrap; gap: 4px 18px; font-size: 13px; }
  ul.legend li { display: flex; align-items: center; gap: 6px; }
  ul.legend svg { width: 28px; height: 12px; flex: none; }
`

// selfCheckScript is the pages' self-check (see pageTemplate).
const selfCheckScript = `<script>
(function () {
  var errors = [];
  window.addEventListener("error", function (e) { errors.push(String(e.message)); document.body.dataset.errors = errors.join("; "); });
  function overlap(a, b) { return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom; }
  window.addEventListener("load", function () {
    var bad = [];
    var figs = document.querySelectorAll("figure.plot");
    figs.forEach(function (f) {
      var svg = f.querySelector(":scope > svg");
      var drawn = svg ? svg.querySelectorAll("path, text, line, polyline, polygon, rect, circle").length : 0;
      var box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
      if (!svg || drawn < 10 || box.width < 100 || box.height < 100) { bad.push(f.id + ": empty (" + drawn + " elements)"); return; }
      var chk = JSON.parse(f.dataset.check || "{}");
      var a = chk.area || [0, 0, 0, 0], eps = 0.01;
      var outside = (chk.marks || []).filter(function (m) { return !(m[0] > a[0] + eps && m[0] < a[2] - eps && m[1] > a[1] + eps && m[1] < a[3] - eps); });
      if (outside.length > 0) bad.push(f.id + ": " + outside.length + " of " + chk.marks.length + " points on or outside the axes");
      if (chk.band) {
        var b0 = chk.band[0], b1 = chk.band[chk.band.length - 1];
        if (!(b0 >= a[0] - eps && b1 <= a[2] + eps)) bad.push(f.id + ": the answer's interval is outside the axes");
        else if (b1 - b0 < 1 && (b1 - b0) < 0) bad.push(f.id + ": the answer's interval is reversed");
      }
      svg.querySelectorAll("text").forEach(function (t) {
        var r = t.getBoundingClientRect();
        var over = Math.max(box.left - r.left, r.right - box.right, box.top - r.top, r.bottom - box.bottom);
        if (r.width > 0 && over > 1) bad.push(f.id + ": label \"" + t.textContent + "\" " + over.toFixed(1) + " px outside the canvas");
      });
      var legend = f.querySelector("ul.legend");
      if (legend && overlap(legend.getBoundingClientRect(), box)) bad.push(f.id + ": the legend covers the plot");
    });
    // Every table's every cell must be seen whole at the page's width: a
    // table wider than the page scrolls (a column cut off), and a cell
    // past the window's right edge is off-screen.
    var view = document.documentElement.clientWidth;
    document.querySelectorAll("table").forEach(function (t, i) {
      var name = "table " + (i + 1) + " (" + ((t.previousElementSibling && t.previousElementSibling.textContent) || "").slice(0, 40) + ")";
      if (t.scrollWidth > t.clientWidth + 1) bad.push(name + ": " + (t.scrollWidth - t.clientWidth) + " px wider than the page: a column is cut off");
      t.querySelectorAll("td, th").forEach(function (c) {
        var r = c.getBoundingClientRect();
        if (r.width > 0 && r.right > view + 1) bad.push(name + ": a cell \"" + c.textContent.slice(0, 30) + "\" ends " + (r.right - view).toFixed(0) + " px off-screen");
        // A cell shows at most three lines; the rest opens on a click.
        // (its content's height: a row is as tall as its tallest cell)
        var st = getComputedStyle(c), line = parseFloat(st.lineHeight) || 1.2 * parseFloat(st.fontSize);
        // of what shows: a closed <details> is its summary
        var top = Infinity, bottom = -Infinity;
        c.childNodes.forEach(function (n) {
          var b = null;
          if (n.nodeType === 1) b = n.getBoundingClientRect();
          else if (n.nodeType === 3 && n.textContent.trim()) { var rg = document.createRange(); rg.selectNodeContents(n); b = rg.getBoundingClientRect(); }
          if (b && b.height > 0) { top = Math.min(top, b.top); bottom = Math.max(bottom, b.bottom); }
        });
        var lines = bottom > top ? (bottom - top) / line : 0;
        if (r.width > 0 && lines > 3.5) bad.push(name + ": a cell \"" + c.textContent.slice(0, 30) + "\" is " + lines.toFixed(0) + " lines tall: at most 3");
      });
    });
    document.body.dataset.figures = String(figs.length);
    document.body.dataset.check = bad.length === 0 && errors.length === 0 ? "ok" : "bad: " + bad.concat(errors).join("; ");
  });
})();
</script>`
