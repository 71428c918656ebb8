package report

import "html/template"

// pageTemplate is the page of a view. Its style is inline and it has no
// script: it fetches nothing. Text is near-black on white and the links
// and marks keep a contrast of at least 4.5:1 (WCAG AA). Every warning is
// drawn with its code and what to do, so that the markup around a
// warning is the same whatever its text.
var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
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
.warn li{color:#6b1d00;margin-bottom:.25rem}.warn .todo{color:#1a1a1a;display:block;font-size:.9rem}
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
<caption>{{with .Kind}}{{.}}: {{end}}the run</caption>
<tbody>
{{range .About}}<tr><th scope="row">{{index . 0}}</th><td>{{index . 1}}</td></tr>
{{end}}</tbody>
</table>
{{with .Command}}<p>Command: <code>{{.}}</code></p>{{end}}
{{with .Warnings}}<h2 id="warnings">Warnings</h2>
{{template "warnings" .}}{{end}}
{{range .Sections}}<h2{{with .ID}} id="{{.}}"{{end}}>{{.Heading}}</h2>
{{range .Blocks}}{{template "block" .}}
{{end}}{{end}}
<p><small>Intervals are confidence intervals of each figure; "none" where the sample cannot bound it (a p99 of fewer than 368 samples). Written by inferbench; this page fetches nothing.</small></p>
</body>
</html>
{{define "block"}}{{if .Sub}}<h3>{{.Sub}}</h3>{{else if .Note}}<p>{{.Note}}</p>{{else if .List}}<ul>{{range .List}}<li>{{.}}</li>{{end}}</ul>{{else if .Warnings}}{{template "warnings" .Warnings}}{{else if .Table}}{{template "table" .Table}}{{else if .Pair}}<div class="pair">
{{range .Pair}}{{template "table" .}}
{{end}}</div>{{else if .Figure}}<figure>{{.Figure.SVG}}<figcaption>{{.Figure.Caption}}</figcaption></figure>{{else if .Pre}}<pre>{{.Pre}}</pre>{{end}}{{end}}
{{define "warnings"}}<ul class="warn">{{range .}}<li><code>{{.Code}}</code> {{.Text}}<span class="todo">What to do: {{.Advice}}</span></li>{{end}}</ul>{{end}}
{{define "table"}}<table>
<caption>{{.Caption}}</caption>
{{with .Head}}<thead><tr>{{range .}}<th scope="col">{{.}}</th>{{end}}</tr></thead>
{{end}}<tbody>
{{range .Rows}}<tr><th scope="row">{{.Head}}</th>{{range .Cells}}<td{{if .Num}} class="num"{{end}}{{with .Key}} data-key="{{.}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</tbody>
</table>{{end}}`))
