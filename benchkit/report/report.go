// Package report writes a load test's results as one self-contained HTML
// page: what was measured and where the figures came from, the summary
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
	p, err := buildPage(doc, opts)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("report: write: %w", err)
	}
	return nil
}

// page is what the template shows.
type page struct {
	Title     string
	Simulated bool
	Predicted bool
	About     [][2]string
	Command   string
	Runs      []runView
	Capacity  []string
	Warnings  []string
	Sweep     *figure
}

// runView is one run's tables and timeline.
type runView struct {
	Name     string
	Counts   [][2]string
	Whole    []latencyRow
	Steady   []latencyRow
	Window   string
	Server   string
	Timeline *figure
	Warnings []string
	// Errors are the failed requests' distinct errors with their
	// counts, most frequent first, at most maxErrors of them.
	Errors []errorCount
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
	N                        int
	Mean, P50, P90, P99, Max string
}

// figure is an inline SVG plot with its caption.
type figure struct {
	SVG     template.HTML
	Caption string
}

func buildPage(doc benchkit.LoadDocument, opts Options) (page, error) {
	m := doc.Meta
	p := page{Title: opts.Title, Simulated: m.Simulated, Predicted: m.Predicted}
	if p.Title == "" {
		p.Title = "Load test of " + orNone(m.Model) + " on " + orNone(m.Engine)
	}
	kind := "real server"
	if m.Simulated {
		kind = "simulated (embedded engine, preset " + orNone(m.Preset) + "): every figure is a model's, not a machine's"
	}
	if m.Predicted {
		kind += "; predicted on a virtual clock, never sent"
	}
	p.About = [][2]string{
		{"Model", orNone(m.Model)},
		{"Engine", orNone(m.Engine)},
		{"Target", orNone(m.BaseURL)},
		{"Measured on", kind},
		{"Traffic", traffic(m)},
		{"Started", orNone(m.Started)},
		{"Finished", orNone(m.Finished)},
		{"Streamed", fmt.Sprint(m.Stream)},
	}
	if m.SLO != "" {
		p.About = append(p.About, [2]string{"SLO", m.SLO})
	}
	if m.Interrupted {
		p.About = append(p.About, [2]string{"Interrupted", "yes: the run stopped before it was done"})
	}
	if pv := m.Provenance; pv != nil {
		p.Command = strings.Join(pv.Command, " ")
		p.About = append(p.About,
			[2]string{"Nonce", orNone(pv.Nonce)},
			[2]string{"Seed", fmt.Sprintf("%d (given: %v)", pv.Seed, pv.Seeded)},
			[2]string{"Host", orNone(pv.Host)},
			[2]string{"Program", strings.TrimSpace(pv.Module + " " + pv.Version + " " + pv.Revision)},
			[2]string{"Platform", fmt.Sprintf("%s/%s, %d CPUs %s, %s", pv.OS, pv.Arch, pv.CPUs, pv.CPUModel, pv.GoVersion)},
		)
	}
	p.Warnings = append(p.Warnings, m.Warnings...)
	if m.ClientSaturated {
		p.Warnings = append(p.Warnings, "client saturated: the load generator could not keep its schedule, so latencies include its own queueing: "+m.Saturation())
	}
	if c := doc.Capacity; c != nil {
		p.Capacity = append(p.Capacity, "knee: "+c.Knee.String(), "capacity at the SLO: "+c.Capacity.String())
	}
	if r := doc.MaxRate; r != nil {
		p.Capacity = append(p.Capacity, fmt.Sprintf("highest rate meeting %s for %.0f%% of requests: %.3g requests/s (next probe up %.3g/s; %d probes)", r.SLO, r.Attainment*100, r.RateRPS, r.Hi, r.Probes))
	}
	runs := doc.AllRuns()
	budget := opts.MaxTimeline
	if budget == 0 {
		budget = DefaultMaxTimeline
	}
	for i, r := range runs {
		v, err := buildRun(i, r, len(runs), budget)
		if err != nil {
			return page{}, err
		}
		p.Runs = append(p.Runs, v)
	}
	if len(runs) > 1 {
		f, err := sweepFigure(doc, runs, opts.SLO)
		if err != nil {
			return page{}, err
		}
		p.Sweep = f
	}
	return p, nil
}

func buildRun(i int, r benchkit.LoadRun, nruns, budget int) (runView, error) {
	s := r.Summary
	v := runView{Name: fmt.Sprintf("Run %d: %s", i+1, s.Traffic), Warnings: s.Warnings}
	v.Counts = [][2]string{
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
	if s.Goodput != nil {
		g := s.Goodput
		frac := "none"
		if g.Fraction != nil {
			frac = num(*g.Fraction*100, 1) + "%"
		}
		v.Counts = append(v.Counts, [2]string{"Goodput (requests meeting " + g.SLO + ")", fmt.Sprintf("%d of %d (%s), %s requests/s", g.Good, g.Total, frac, ptr(g.RateRPS, 2, "none"))})
		if s.MeetsSLO != nil {
			v.Counts = append(v.Counts, [2]string{"Meets the SLO", fmt.Sprint(*s.MeetsSLO)})
		}
	}
	v.Whole = latencyRows(s)
	if st := s.Steady; st != nil {
		v.Steady = latencyRows(*st)
		if st.WindowStartS != nil && st.WindowEndS != nil {
			v.Window = fmt.Sprintf("[%s, %s) s from the run's start (rule %s, %d requests)", num(*st.WindowStartS, 2), num(*st.WindowEndS, 2), orNone(st.SteadyRule), st.Requests)
		}
	}
	v.Errors = errorCounts(r.Requests)
	if s.Server != nil {
		var b bytes.Buffer
		if err := s.WriteServerView(&b); err == nil {
			v.Server = b.String()
		}
	}
	if budget > 0 && len(r.Requests) > 0 {
		f, err := timelineFigure(r.Requests, max(1, budget/nruns))
		if err != nil {
			return runView{}, err
		}
		v.Timeline = f
	}
	return v, nil
}

// latencyRows are a summary's latency figures in ms.
func latencyRows(s benchkit.Summary) []latencyRow {
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
		rows = append(rows, latencyRow{Name: f.name, N: q.N,
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
