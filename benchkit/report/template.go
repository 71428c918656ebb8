package report

import "html/template"

// pageTemplate is the page. Its style is inline and it has no script:
// it fetches nothing. Text is near-black on white and the links and
// marks keep a contrast of at least 4.5:1 (WCAG AA).
var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"lat": func(c string, rows []latencyRow) latencyTable { return latencyTable{c, rows} }}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a1a1a;background:#fff;margin:1.5rem auto;max-width:80rem;padding:0 1rem;line-height:1.4}
h1{font-size:1.5rem}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #767676}h3{font-size:1.05rem}
table{border-collapse:collapse;margin:.5rem 0 1rem}
th,td{border:1px solid #767676;padding:.25rem .5rem;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}
th{background:#eaeaea}
caption{text-align:left;font-weight:600;padding:.25rem 0}
.banner{background:#fff3cd;color:#3d2e00;border:1px solid #8a6d00;padding:.5rem .75rem}
.warn li{color:#6b1d00}
.pair{display:flex;flex-wrap:wrap;gap:2rem}
pre,code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9rem;white-space:pre-wrap;word-break:break-all}
figure{margin:1rem 0}figure svg{max-width:100%;height:auto}figcaption{font-size:.9rem}
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{if .Simulated}}<p class="banner"><strong>SIMULATED:</strong> measured on the embedded engine; every figure is a model's, not a machine's.</p>{{end}}
{{if .Predicted}}<p class="banner"><strong>PREDICTED:</strong> computed on a virtual clock; nothing was sent.</p>{{end}}
<h2 id="measured">What was measured</h2>
<table>
<caption>The run</caption>
<tbody>
{{range .About}}<tr><th scope="row">{{index . 0}}</th><td>{{index . 1}}</td></tr>
{{end}}</tbody>
</table>
{{with .Command}}<p>Command: <code>{{.}}</code></p>{{end}}
{{with .Warnings}}<h2 id="warnings">Warnings</h2>
<ul class="warn">{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{with .Capacity}}<h2 id="capacity">Capacity</h2>
<ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{with .Sweep}}<h2 id="sweep">Latency against offered rate</h2>
<figure>{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}
{{range $i, $r := .Runs}}<h2 id="run-{{$i}}">{{$r.Name}}</h2>
<table>
<caption>Counts and throughput</caption>
<thead><tr><th scope="col">Figure (unit)</th><th scope="col">Value</th></tr></thead>
<tbody>
{{range $r.Counts}}<tr><th scope="row">{{index . 0}}</th><td class="num">{{index . 1}}</td></tr>
{{end}}</tbody>
</table>
<div class="pair">
{{template "latency" (lat "Latency over the whole run" $r.Whole)}}
{{if $r.Steady}}{{template "latency" (lat (print "Latency over the steady state " $r.Window) $r.Steady)}}{{else}}<p>Steady state: none (no window that means anything).</p>{{end}}
</div>
{{with $r.Warnings}}<h3>Warnings of this run</h3><ul class="warn">{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{with $r.Errors}}<table>
<caption>Errors of the failed requests (most frequent first)</caption>
<thead><tr><th scope="col">Error</th><th scope="col">Requests</th></tr></thead>
<tbody>{{range .}}<tr><td>{{.Error}}</td><td class="num">{{.Count}}</td></tr>
{{end}}</tbody>
</table>{{end}}
{{with $r.Server}}<h3>The server's view</h3><pre>{{.}}</pre>{{end}}
{{with $r.Timeline}}<figure>{{.SVG}}<figcaption>Per-request timeline. {{.Caption}}</figcaption></figure>{{end}}
{{end}}
<p><small>Intervals are confidence intervals of each figure; "none" where the sample cannot bound it (a p99 of fewer than 368 samples). Written by inferbench; this page fetches nothing.</small></p>
</body>
</html>
{{define "latency"}}<table>
<caption>{{.Caption}}</caption>
<thead><tr><th scope="col">Figure</th><th scope="col">n</th><th scope="col">mean (ms) [interval]</th><th scope="col">p50 (ms) [interval]</th><th scope="col">p90 (ms) [interval]</th><th scope="col">p99 (ms) [interval]</th><th scope="col">max (ms)</th></tr></thead>
<tbody>
{{range .Rows}}<tr><th scope="row">{{.Name}}</th><td class="num">{{.N}}</td><td class="num">{{.Mean}}</td><td class="num">{{.P50}}</td><td class="num">{{.P90}}</td><td class="num">{{.P99}}</td><td class="num">{{.Max}}</td></tr>
{{end}}</tbody>
</table>{{end}}`))

// latencyTable is a latency table's caption and rows.
type latencyTable struct {
	Caption string
	Rows    []latencyRow
}
