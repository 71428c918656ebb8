// Package report writes a run's results as one self-contained HTML page,
// for every program: a load test (WriteLoad), an offline batch
// (WriteOffline), multi-turn sessions (WriteSessions), exo's bench
// (WriteExo), a prefill/decode disaggregation (WritePrefillDecode), a
// trace replay against mini-sglang's figures (WriteQwen) and a comparison
// of two runs (WriteCompare). Each holds what was measured and where the figures came from, the summary
// tables with every figure's interval, the server's own view, the
// warnings, and the plots as inline SVG. The page fetches nothing: its
// style is inline, its plots are drawn into it, and it has no script, so
// that it opens offline and from a mail attachment. Every string a server
// or a file supplied (model names, errors, warnings, labels) is escaped
// by html/template, so that a hostile server cannot script the page.
// docs/REPORT.md says what the page holds.
package report

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/timing"
)

// DefaultMaxTimeline is the most requests a page's timeline draws
// unless Options say otherwise; a run of more is thinned (Thin).
const DefaultMaxTimeline = 2000

// Options shape a page.
type Options struct {
	// Title heads the page; "" makes one of the model and the engine.
	Title string
	// MaxTimeline is the most requests the timelines draw, over all
	// runs; 0 means DefaultMaxTimeline, a negative value draws none.
	MaxTimeline int
	// SLO is the objectives drawn as dashed lines on the latency plot of
	// a sweep; the zero SLO draws none.
	SLO timing.SLO
}

// WriteLoad writes doc, a load test's results, to w as one HTML page.
// It fails only when w does or when a plot cannot be drawn.
func WriteLoad(w io.Writer, doc benchkit.LoadDocument, opts Options) error {
	v, err := buildPage(doc, opts)
	if err != nil {
		return err
	}
	return v.write(w)
}

// errorCount is one distinct error and how many requests failed with it.
type errorCount struct {
	Error string
	Count int
}

// maxErrors is the most distinct errors a run's table lists.
const maxErrors = 20

// latencyRow is one figure's row of a latency table, each cell a value
// with its interval ("none" where absent).
type latencyRow struct {
	Name                     string
	Key                      string
	N                        int
	Mean, P50, P90, P99, Max string
}

// about is the "what was measured" rows every page shares: the model,
// engine, target, simulated or real, the run's times and its provenance.
// It also returns the command line.
func about(m benchkit.RunInfo, predicted bool) (rows [][2]string, command string) {
	kind := "real server"
	if m.Simulated {
		kind = "simulated (embedded engine, preset " + orNone(m.Preset) + "): every figure is a model's, not a machine's"
	}
	if predicted {
		kind += "; predicted on a virtual clock, never sent"
	}
	rows = [][2]string{
		{"Model", orNone(m.Model)},
		{"Engine", orNone(m.Engine)},
		{"Target", orNone(m.BaseURL)},
		{"Measured on", kind},
		{"Started", orNone(m.Started)},
		{"Finished", orNone(m.Finished)},
	}
	if m.Interrupted {
		rows = append(rows, [2]string{"Interrupted", "yes: the run stopped before it was done"})
	}
	if pv := m.Provenance; pv != nil {
		command = strings.Join(pv.Command, " ")
		rows = append(rows,
			[2]string{"Nonce", orNone(pv.Nonce)},
			[2]string{"Seed", fmt.Sprintf("%d (given: %v)", pv.Seed, pv.Seeded)},
			[2]string{"Host", orNone(pv.Host)},
			[2]string{"Program", strings.TrimSpace(pv.Module + " " + pv.Version + " " + pv.Revision)},
			[2]string{"Platform", fmt.Sprintf("%s/%s, %d CPUs %s, %s", pv.OS, pv.Arch, pv.CPUs, pv.CPUModel, pv.GoVersion)},
		)
	}
	return rows, command
}

func buildPage(doc benchkit.LoadDocument, opts Options) (view, error) {
	m := doc.Meta
	p := view{Title: opts.Title, Simulated: m.Simulated, Predicted: m.Predicted, Kind: "Load test"}
	if p.Title == "" {
		p.Title = "Load test of " + orNone(m.Model) + " on " + orNone(m.Engine)
	}
	p.About, p.Command = about(m.RunInfo, m.Predicted)
	p.About = append(p.About, [2]string{"Traffic", traffic(m)}, [2]string{"Streamed", fmt.Sprint(m.Stream)})
	if m.SLO != "" {
		p.About = append(p.About, [2]string{"SLO", m.SLO})
	}
	warns := slices.Clone(m.Warnings)
	if m.ClientSaturated {
		warns = append(warns, "client saturated: the load generator could not keep its schedule, so latencies include its own queueing: "+m.Saturation())
	}
	p.Warnings = warningsOf(warns)
	var capa []string
	if c := doc.Capacity; c != nil {
		capa = append(capa, "knee: "+c.Knee.String(), "capacity at the SLO: "+c.Capacity.String())
	}
	if r := doc.MaxRate; r != nil {
		capa = append(capa, fmt.Sprintf("highest rate meeting %s for %.0f%% of requests: %.3g requests/s (next probe up %.3g/s; %d probes)", r.SLO, r.Attainment*100, r.RateRPS, r.Hi, r.Probes))
	}
	if capa != nil {
		p.Sections = append(p.Sections, section{ID: "capacity", Heading: "Capacity", Blocks: []block{{List: capa}}})
	}
	runs := doc.AllRuns()
	if len(runs) > 1 {
		f, err := sweepFigure(doc, runs, opts.SLO)
		if err != nil {
			return view{}, err
		}
		if f != nil {
			p.Sections = append(p.Sections, section{ID: "sweep", Heading: "Latency against offered rate", Blocks: []block{{Figure: f}}})
		}
	}
	budget := opts.MaxTimeline
	if budget == 0 {
		budget = DefaultMaxTimeline
	}
	for i, r := range runs {
		sec, err := buildRun(i, r, len(runs), budget, opts.SLO.ITL)
		if err != nil {
			return view{}, err
		}
		p.Sections = append(p.Sections, sec)
	}
	return p, nil
}

// runKey is the data-key prefix of run i's figures.
func runKey(i int) string { return fmt.Sprintf("run%d.", i) }

func buildRun(i int, r benchkit.LoadRun, nruns, budget int, itlObjective time.Duration) (section, error) {
	s := r.Summary
	sec := section{ID: fmt.Sprintf("run-%d", i), Heading: fmt.Sprintf("Run %d: %s", i+1, s.Traffic)}
	k := runKey(i)
	counts := [][2]string{
		{"Offered rate (requests/s)", ptr(s.RequestRate, 1, "inf")},
		{"Achieved rate (requests/s)", ptr(s.AchievedRate, 1, "none")},
		{"Requests (scheduled / measured / completed / failed)", fmt.Sprintf("%d / %d / %d / %d", s.Scheduled, s.Requests, s.Completed, s.Failed)},
		{"Duration (s)", num(s.DurationS, 1)},
		{"Peak in flight (requests)", fmt.Sprint(s.PeakInFlight)},
		{"Request throughput (requests/s)", ptr(s.RequestThroughput, 1, "none")},
		{"Output throughput (tokens/s)", ptr(s.OutputThroughput, 1, "none")},
		{"Total throughput (tokens/s)", ptr(s.TotalThroughput, 1, "none")},
		{"Input / output tokens", fmt.Sprintf("%d / %d", s.TotalInputTokens, s.TotalOutputTokens)},
	}
	keys := []string{k + "request_rate", k + "achieved_rate", k + "requests", k + "duration_s", k + "peak_in_flight",
		k + "request_throughput", k + "output_throughput", k + "total_throughput", k + "tokens"}
	if s.Goodput != nil {
		g := s.Goodput
		frac := "none"
		if g.Fraction != nil {
			frac = num(*g.Fraction*100, 1) + "%"
		}
		counts = append(counts, [2]string{"Goodput (requests meeting " + g.SLO + ")", fmt.Sprintf("%d of %d (%s), %s requests/s", g.Good, g.Total, frac, ptr(g.RateRPS, 2, "none"))})
		keys = append(keys, k+"goodput")
		if s.MeetsSLO != nil {
			counts = append(counts, [2]string{"Meets the SLO", fmt.Sprint(*s.MeetsSLO)})
			keys = append(keys, k+"meets_slo")
		}
	}
	sec.Blocks = append(sec.Blocks, block{Table: pairsTable("Counts and throughput", "Figure (unit)", "Value", counts, keys)})
	pair := []table{latencyTable("Latency over the whole run", latencyRows(s, k))}
	var steadyNote string
	if st := s.Steady; st != nil {
		caption := "Latency over the steady state"
		if st.WindowStartS != nil && st.WindowEndS != nil {
			caption += fmt.Sprintf(" [%s, %s) s from the run's start (rule %s, %d requests)", num(*st.WindowStartS, 2), num(*st.WindowEndS, 2), orNone(st.SteadyRule), st.Requests)
		}
		pair = append(pair, latencyTable(caption, latencyRows(*st, k+"steady.")))
	} else {
		steadyNote = "Steady state: none (no window that means anything)."
	}
	sec.Blocks = append(sec.Blocks, block{Pair: pair})
	if steadyNote != "" {
		sec.Blocks = append(sec.Blocks, block{Note: steadyNote})
	}
	if len(s.Warnings) > 0 {
		sec.Blocks = append(sec.Blocks, block{Sub: "Warnings of this run"}, block{Warnings: warningsOf(s.Warnings)})
	}
	if errs := errorCounts(r.Requests); len(errs) > 0 {
		t := &table{Caption: "Errors of the failed requests (most frequent first)", Head: []string{"Error", "Requests"}}
		for _, e := range errs {
			t.Rows = append(t.Rows, row{Head: e.Error, Cells: []cell{numCell(fmt.Sprint(e.Count), "")}})
		}
		sec.Blocks = append(sec.Blocks, block{Table: t})
	}
	if s.Server != nil {
		var b bytes.Buffer
		if err := s.WriteServerView(&b); err == nil {
			sec.Blocks = append(sec.Blocks, block{Sub: "The server's view"}, block{Pre: b.String()})
		}
	}
	if budget > 0 && len(r.Requests) > 0 {
		f, err := timelineFigure(r.Requests, max(1, budget/nruns), itlObjective)
		if err != nil {
			return section{}, err
		}
		if f != nil {
			f.Caption = "Per-request timeline. " + f.Caption
			sec.Blocks = append(sec.Blocks, block{Figure: f})
		}
	}
	return sec, nil
}

// latencyTable is a latency table: n, mean, p50, p90, p99 each with its
// interval, and the max, in ms.
func latencyTable(caption string, rows []latencyRow) table {
	t := table{Caption: caption, Head: []string{"Figure", "n", "mean (ms) [interval]", "p50 (ms) [interval]", "p90 (ms) [interval]", "p99 (ms) [interval]", "max (ms)"}}
	for _, r := range rows {
		t.Rows = append(t.Rows, row{Head: r.Name, Cells: []cell{
			numCell(fmt.Sprint(r.N), r.Key+".n"), numCell(r.Mean, r.Key+".mean"), numCell(r.P50, r.Key+".p50"),
			numCell(r.P90, r.Key+".p90"), numCell(r.P99, r.Key+".p99"), numCell(r.Max, r.Key+".max")}})
	}
	return t
}

// latencyRows are a summary's latency figures in ms.
func latencyRows(s benchkit.Summary, keyPrefix string) []latencyRow {
	var rows []latencyRow
	for _, f := range []struct {
		name string
		q    benchkit.Quantiles
	}{{"TTFT", s.TTFT}, {"TPOT", s.TPOT}, {"ITL", s.ITL}, {"E2E", s.E2E}, {"TTFA", s.TTFA}} {
		// TTFA is TTFT's but for a model that reasons.
		if f.name == "TTFA" && (f.q.N == 0 || s.LastReasoning.N == 0) {
			continue
		}
		q := f.q
		rows = append(rows, latencyRow{Name: f.name, Key: keyPrefix + strings.ToLower(f.name), N: q.N,
			Mean: withCI(q.Mean, q.MeanCI), P50: withCI(q.P50, q.P50CI), P90: withCI(q.P90, q.P90CI), P99: withCI(q.P99, q.P99CI),
			Max: ms(q.Max)})
	}
	return rows
}

// FormatMS is how the page prints a latency in seconds: in ms with two
// decimals, "none" where undefined.
func FormatMS(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "none"
	}
	return fmt.Sprintf("%.2f", v*1000)
}

func ms(v *float64) string {
	if v == nil {
		return "none"
	}
	return FormatMS(*v)
}

func withCI(v *float64, ci *[2]float64) string {
	s := ms(v)
	if v == nil {
		return s
	}
	if ci == nil {
		return s + " [interval: none]"
	}
	return s + " [" + FormatMS(ci[0]) + ", " + FormatMS(ci[1]) + "]"
}

func ptr(v *float64, prec int, absent string) string {
	if v == nil {
		return absent
	}
	return num(*v, prec)
}

func num(v float64, prec int) string { return fmt.Sprintf("%.*f", prec, v) }

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// svgStart is everything the SVG backend writes before the <svg> element
// (the XML declaration and doctype), which HTML does not take inline.
var svgStart = regexp.MustCompile(`(?s)^.*?<svg`)

// inlineSVG makes an SVG document an element to inline in the page, with
// a role, an accessible name (aria-label), a <title> and a <desc>.
func inlineSVG(svg []byte, title, desc string) template.HTML {
	s := svgStart.ReplaceAllString(string(svg), "<svg")
	end := strings.IndexByte(s, '>')
	if end < 0 {
		return ""
	}
	open := strings.TrimSuffix(s[:end], "/")
	head := open + ` role="img" aria-label="` + html.EscapeString(title) + `">` +
		"<title>" + html.EscapeString(title) + "</title><desc>" + html.EscapeString(desc) + "</desc>"
	return template.HTML(head + s[end+1:]) // #nosec: drawn here, every text escaped by the SVG backend
}

// errorCounts counts the failed requests' distinct errors.
func errorCounts(reqs []benchkit.Request) []errorCount {
	seen := map[string]int{}
	var out []errorCount
	for _, r := range reqs {
		if !r.Failed() {
			continue
		}
		if i, ok := seen[r.Error]; ok {
			out[i].Count++
			continue
		}
		seen[r.Error] = len(out)
		out = append(out, errorCount{r.Error, 1})
	}
	slices.SortStableFunc(out, func(a, b errorCount) int { return b.Count - a.Count })
	return out[:min(len(out), maxErrors)]
}

// traffic is the load as asked for: the offered rates where the meta
// lists them (each run's heading says its own traffic in full), else the
// traffic's own description.
func traffic(m benchkit.LoadMeta) string {
	if len(m.Rates) > 0 {
		return "offered rate " + strings.Join(m.Rates, ", ") + " requests/s (each run below says its arrivals)"
	}
	return m.Traffic.String()
}
