package report

import "html/template"

// The page checks itself when it loads: every figure must hold an SVG with
// drawn content, and any script error is recorded. The result is in
// <body data-check="..."> for headless browsers (and tests) to read.
var pageTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>cpsweep report{{with .Name}}: {{.}}{{end}}</title>
<style>
  body { font: 15px/1.45 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: #222; margin: 0; background: #fafafa; }
  main { max-width: 1080px; margin: 0 auto; padding: 24px 28px 60px; background: #fff; }
  h1 { font-size: 26px; margin: 0 0 4px; }
  h2 { font-size: 20px; margin: 36px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
  .meta { color: #666; margin: 0 0 18px; }
  .verdict { font-size: 18px; background: #eef7ee; border-left: 4px solid #3a3; padding: 10px 14px; margin: 14px 0; }
  figure { margin: 18px 0; overflow-x: auto; }
  figure svg { display: block; max-width: 100%; height: auto; }
  figcaption { color: #555; font-size: 13.5px; margin-top: 6px; max-width: 900px; }
  table { border-collapse: collapse; font-size: 13.5px; margin: 10px 0; }
  th, td { border-bottom: 1px solid #e4e4e4; padding: 4px 10px; text-align: right; white-space: nowrap; }
  th { background: #f3f3f3; font-weight: 600; }
  td.l, th.l { text-align: left; }
  td.fail { color: #b00; }
  td.pass { color: #080; }
  td.why { text-align: left; white-space: normal; color: #555; max-width: 420px; }
  .problems li { color: #8a4b00; }
  pre { background: #f6f6f6; padding: 10px; overflow-x: auto; font-size: 12.5px; }
  .small { color: #777; font-size: 12.5px; }
</style>
</head>
<body>
<main>
<h1>cpsweep report{{with .Name}}: {{.}}{{end}}</h1>
<p class="meta">{{with .Started}}started {{.}} · {{end}}{{with .Topology}}{{.}} · {{end}}<span class="small">{{.Dir}}</span></p>
{{with .Verdict}}<div class="verdict">Maximum sustainable throughput: <b>{{.}}</b></div>{{end}}

{{with .Problems}}<h2>Problems</h2>
<ul class="problems">{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}

{{range .Figures}}{{if eq .ID "sweep"}}<h2>{{.Title}}</h2>
<figure class="plot" id="fig-{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}{{end}}

{{with .Trials}}<h2>Trials</h2>
<table>
<tr><th>#</th><th class="l">purpose</th><th>target</th><th>achieved</th><th>verdict</th><th>lateness p99</th><th>latency p50</th><th>latency p99</th><th class="l">failed rules</th></tr>
{{range .}}<tr><td>{{.N}}</td><td class="l">{{.Purpose}}</td><td>{{.Target}}</td><td>{{.Achieved}}</td><td class="{{.Verdict}}">{{.Verdict}}</td><td>{{.LatenessP99}}</td><td>{{.LatencyP50}}</td><td>{{.LatencyP99}}</td><td class="why">{{.Failed}}</td></tr>
{{end}}</table>{{end}}

{{range .Figures}}{{if eq .ID "percentiles"}}<figure class="plot" id="fig-{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}{{end}}

{{if .Pairs}}<h2>Tuple latency across nodes, with error bounds</h2>
<p>From the profiled trial's logs, joined by tuple id across nodes and translated into the reference node's time{{with .Analysis}} ({{.Reference}}){{end}}. Every latency's true value lies within its error bound.</p>
<table>
<tr><th class="l">points</th><th class="l">group</th><th>tuples</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>error p50</th><th>error max</th><th>only at first / second</th></tr>
{{range .Pairs}}<tr><td class="l">{{.Pair}}</td><td class="l">{{.Group}}</td><td>{{.Count}}</td><td>{{.P50}}</td><td>{{.P90}}</td><td>{{.P99}}</td><td>{{.P999}}</td><td>{{.Max}}</td><td>±{{.ErrP50}}</td><td>±{{.ErrMax}}</td><td>{{.OnlyFrom}} / {{.OnlyTo}}</td></tr>
{{end}}</table>
{{range .Figures}}{{if or (eq .ID "latency") (eq .ID "error")}}<figure class="plot" id="fig-{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}{{end}}
{{end}}

{{if .Clock}}<h2>Clocks: CP vs tighter CP vs ReT vs the system clock</h2>
<table>
<tr><th class="l">nodes</th><th>CP (paper)</th><th>CP (tighter, mid-window)</th><th>ReT round trip (min / median / max)</th><th>system clock</th></tr>
{{range .Clock}}<tr><td class="l">{{.Node}}</td><td>{{.Paper}}</td><td>{{.Tighter}}</td><td>{{.ReT}}</td><td>{{.NTP}}</td></tr>
{{end}}</table>
{{range .Figures}}{{if eq .ID "clock"}}<figure class="plot" id="fig-{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}{{end}}
{{with .ReT}}<p>Return-trip handlers in the profiled trial:</p><ul>{{range .}}<li>{{.Channel}} on {{.Node}}: {{.RoundTrip.Count}} round trips, median {{.RoundTrip.P50}} ns, p99 {{.RoundTrip.P99}} ns, {{.Unacked}} unacknowledged</li>{{end}}</ul>{{end}}
{{end}}

{{range .Figures}}{{if eq .ID "throughput"}}<h2>{{.Title}}</h2>
<figure class="plot" id="fig-{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}{{end}}

{{with .Config}}<h2>Configuration</h2>
<details><summary>config.json: the plan, the search, the agents and the command line</summary>
<pre>{{.}}</pre></details>{{end}}
<p class="small">Generated {{.Generated}} by cpsweep report.</p>
</main>
<script>
(function () {
  var errors = [];
  window.addEventListener("error", function (e) { errors.push(String(e.message)); document.body.dataset.errors = errors.join("; "); });
  window.addEventListener("load", function () {
    var bad = [];
    var figs = document.querySelectorAll("figure.plot");
    figs.forEach(function (f) {
      var svg = f.querySelector("svg");
      var drawn = svg ? svg.querySelectorAll("path, text, line, polyline, polygon, rect, circle").length : 0;
      var box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
      if (!svg || drawn < 10 || box.width < 100 || box.height < 100) bad.push(f.id + " (" + drawn + " elements)");
    });
    document.body.dataset.figures = String(figs.length);
    document.body.dataset.check = bad.length === 0 && errors.length === 0 ? "ok" : "empty: " + bad.join(", ");
  });
})();
</script>
</body>
</html>
`))
