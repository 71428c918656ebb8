package report

import (
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"

	"github.com/inferbench/inferbench/benchkit"
	bplot "github.com/inferbench/inferbench/benchkit/plot"
)

// WriteSessions writes doc, the results of multi-turn sessions (the
// multi-turn program's --json-out), to w as one HTML page: the sessions'
// settings, the TTFT p50 of each turn of every run drawn as one line per
// run, and for each run its figures by turn (TTFT, TPOT and E2E p50 with
// their intervals, the tokens sent and those the server had cached, the
// measured and theoretical prefix hit rates), its latency over every
// turn, its warnings, errors and server's view and a per-request
// timeline. opts.Title heads the page ("" makes one of the model and the
// engine); opts.MaxTimeline bounds the timelines as on a load test's
// page; opts.SLO is not used. It fails only when w does or when a plot
// cannot be drawn.
func WriteSessions(w io.Writer, doc benchkit.SessionsDocument, opts Options) error {
	v, err := sessionsPage(doc, opts)
	if err != nil {
		return err
	}
	return v.write(w)
}

func sessionsPage(doc benchkit.SessionsDocument, opts Options) (view, error) {
	m := doc.Meta
	p := view{Title: opts.Title, Simulated: m.Simulated, Predicted: m.Predicted, Kind: "Multi-turn sessions"}
	if p.Title == "" {
		p.Title = "Multi-turn sessions of " + orNone(m.Model) + " on " + orNone(m.Engine)
	}
	p.About, p.Command = about(m.RunInfo, m.Predicted)
	p.About = append(p.About, sessionsAbout(m.Sessions, doc.Runs)...)
	p.Warnings = warningsOf(m.Warnings)
	if len(doc.Runs) == 0 {
		p.Sections = append(p.Sections, section{ID: "runs", Heading: "Runs", Blocks: []block{{Note: "No run of the sessions was measured."}}})
		return p, nil
	}
	f, err := turnsFigure(doc)
	if err != nil {
		return view{}, err
	}
	if f != nil {
		p.Sections = append(p.Sections, section{ID: "by-turn", Heading: "TTFT by turn", Blocks: []block{{Figure: f}}})
	}
	budget := opts.MaxTimeline
	if budget == 0 {
		budget = DefaultMaxTimeline
	}
	for i, r := range doc.Runs {
		sec, err := sessionsRun(i, r, len(doc.Runs), budget)
		if err != nil {
			return view{}, err
		}
		p.Sections = append(p.Sections, sec)
	}
	return p, nil
}

// sessionsAbout are the "what was measured" rows of the sessions'
// settings: how many, how long, what each turn sends, the prefix cache and
// the thinking setting of each run.
func sessionsAbout(s benchkit.SessionsSettings, runs []benchkit.SessionsRun) [][2]string {
	sessions := fmt.Sprint(s.Count)
	switch {
	case s.Rate > 0:
		sessions += fmt.Sprintf(", starting at %s per second (Poisson)", fmt.Sprintf("%g", s.Rate))
	default:
		sessions += ", all started at once"
	}
	if s.MaxActive > 0 {
		sessions += fmt.Sprintf(", at most %d under way at once", s.MaxActive)
	}
	think := "none"
	if s.ThinkS > 0 {
		think = fmt.Sprintf("%g", s.ThinkS) + " s before every turn after the first"
		if s.ThinkExp {
			think += " (drawn from an exponential distribution of that mean)"
		}
	}
	replies := "the server's own replies"
	if s.RecordedReplies {
		replies = "the dataset's recorded replies"
	}
	if s.TrimReplies {
		replies += ", without the white space around them"
	}
	rows := [][2]string{
		{"Sessions", sessions},
		{"Turns per session", span(s.Turns, s.TurnsMax)},
		{"New user tokens per turn", span(s.UserTokens, s.UserTokensMax)},
		{"Output tokens per turn (max_tokens)", span(s.Output, s.OutputMax)},
		{"Think time", think},
		{"History carries", replies},
		{"Round barrier", fmt.Sprint(s.Barrier)},
		{"Streamed", fmt.Sprint(s.Stream)},
		{"Seed of the session starts", fmt.Sprint(s.Seed)},
	}
	if s.Trace != nil {
		rows = append(rows, [2]string{"Sessions of", fmt.Sprintf("%s (%d rows)", orNone(s.Trace.Name), len(s.Trace.Rows))})
	}
	var caches, thinking []string
	for i, r := range runs {
		caches = append(caches, fmt.Sprintf("run %d: %s", i+1, cacheName(r.PrefixCache)))
		thinking = append(thinking, fmt.Sprintf("run %d: %s", i+1, thinkingName(r.Summary.Thinking)))
	}
	if len(runs) > 0 {
		rows = append(rows, [2]string{"Prefix cache", strings.Join(caches, "; ")}, [2]string{"Thinking", strings.Join(thinking, "; ")})
	}
	return rows
}

// span is a setting drawn from [lo, hi], or lo alone when hi is not above it.
func span(lo, hi int) string {
	if hi > lo {
		return fmt.Sprintf("%d to %d (each drawn uniformly)", lo, hi)
	}
	return fmt.Sprint(lo)
}

// cacheName says a run's prefix cache: the embedded engine's mode, or
// the server's own.
func cacheName(mode string) string {
	if mode == "" {
		return "the server's own"
	}
	return mode + " (the embedded engine's)"
}

// thinkingName says a run's thinking setting.
func thinkingName(s string) string {
	if s == "" {
		return "no thinking control"
	}
	return s
}

// plainLabel is a label a plot may carry as it stands: a short word of
// the program's own (a cache mode), nothing a server or a file could
// have made into something else.
var plainLabel = regexp.MustCompile(`^[a-z0-9_-]{1,16}$`)

// seriesName is run i's name on the plot, in the page's own words.
func seriesName(i int, r benchkit.SessionsRun) string {
	name := fmt.Sprintf("run %d", i+1)
	if plainLabel.MatchString(r.PrefixCache) {
		name += ": prefix cache " + r.PrefixCache
	}
	return name
}

// turnsFigure draws the TTFT p50 of each turn against the turn, one line
// per run (benchkit/plot.TTFTByTurn), each p50's interval as a bar where
// it has one; nil when no turn has a TTFT.
func turnsFigure(doc benchkit.SessionsDocument) (*figure, error) {
	series := map[string][]benchkit.Summary{}
	var names []string
	top := 0.0
	for i, r := range doc.Runs {
		name := seriesName(i, r)
		names = append(names, name)
		for _, t := range r.Turns {
			s := t.Summary
			s.Labels.Turn = t.Turn // not in the JSON: TurnSummary.Turn is
			series[name] = append(series[name], s)
			if s.TTFT.P50 != nil {
				top = max(top, *s.TTFT.P50)
			}
			if s.TTFT.P50CI != nil {
				top = max(top, s.TTFT.P50CI[1])
			}
		}
	}
	title := "TTFT by turn"
	switch {
	case doc.Meta.Predicted:
		title = "PREDICTED: " + title
	case doc.Meta.Simulated:
		title = "SIMULATED: " + title
	}
	p, err := bplot.TTFTByTurn(title, series)
	if errors.Is(err, bplot.ErrNoData) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	// TTFTByTurn colours its lines in the order of their sorted names.
	sorted := slices.Sorted(slices.Values(names))
	bars := 0
	for _, name := range names {
		var b struct {
			plotter.XYs
			plotter.YErrors
		}
		for _, s := range series[name] {
			if s.TTFT.P50 == nil || s.TTFT.P50CI == nil || s.Labels.Turn <= 0 {
				continue
			}
			v, ci := *s.TTFT.P50*1e3, *s.TTFT.P50CI
			b.XYs = append(b.XYs, plotter.XY{X: float64(s.Labels.Turn), Y: v})
			b.YErrors = append(b.YErrors, struct{ Low, High float64 }{v - ci[0]*1e3, ci[1]*1e3 - v})
		}
		if len(b.XYs) == 0 {
			continue
		}
		eb, err := plotter.NewYErrorBars(b)
		if err != nil {
			return nil, fmt.Errorf("report: interval bars: %w", err)
		}
		eb.Color = plotutil.Color(slices.Index(sorted, name))
		p.Add(eb)
		bars += len(b.XYs)
	}
	// Room above the highest point for the legend, so that it covers no line.
	if top > 0 && !math.IsInf(top, 0) {
		p.Y.Max = top * 1e3 * (1.2 + 0.08*float64(len(names)))
	}
	desc := "the median time to first token of each turn of the sessions against the turn, one line per run (" + strings.Join(names, ", ") + ")"
	if bars > 0 {
		desc += "; a vertical bar is a median's 95 % confidence interval where the turn's requests bound it"
	} else {
		desc += "; no turn has enough requests to bound its median, so no interval is drawn"
	}
	b, err := svgOf(p, bplot.Width*1.25, bplot.Height*1.25)
	if err != nil {
		return nil, err
	}
	return &figure{SVG: inlineSVG(b, title, desc), Caption: strings.ToUpper(desc[:1]) + desc[1:] + "."}, nil
}

// sessionsRun is run i's section: its figures by turn, over every turn,
// its warnings, errors, server's view and timeline.
func sessionsRun(i int, r benchkit.SessionsRun, nruns, budget int) (section, error) {
	s := r.Summary
	k := runKey(i)
	heading := fmt.Sprintf("Run %d: prefix cache %s", i+1, cacheName(r.PrefixCache))
	if s.Thinking != "" {
		heading += ", thinking " + s.Thinking
	}
	sec := section{ID: fmt.Sprintf("run-%d", i), Heading: heading}
	counts := [][2]string{
		{"Turns measured (requests)", fmt.Sprint(s.Requests)},
		{"Completed", fmt.Sprint(s.Completed)},
		{"Failed", fmt.Sprint(s.Failed)},
		{"Duration (s)", num(s.DurationS, 1)},
		{"Input tokens (all turns)", fmt.Sprint(s.TotalInputTokens)},
		{"Output tokens (all turns)", fmt.Sprint(s.TotalOutputTokens)},
		{"Cached prompt tokens (the server's count)", fmt.Sprint(s.CachedTokens)},
		{"Prefix hit rate, measured (%)", pctOf(s.PrefixHitRate)},
		{"Prefix hit rate, theoretical (%)", pctOf(s.TheoreticalHitRate)},
		{"Output throughput (tokens/s)", ptr(s.OutputThroughput, 1, "none")},
	}
	keys := []string{k + "requests", k + "completed", k + "failed", k + "duration_s",
		k + "total_input_tokens", k + "total_output_tokens", k + "cached_tokens", k + "prefix_hit_rate",
		k + "theoretical_prefix_hit_rate", k + "output_throughput"}
	sec.Blocks = append(sec.Blocks, block{Table: pairsTable("Counts over every turn", "Figure (unit)", "Value", counts, keys)})
	sec.Blocks = append(sec.Blocks, block{Table: turnsTable(r, k)})
	sec.Blocks = append(sec.Blocks,
		block{Note: "A turn's prompt is its session's history (the system prompt, the earlier turns and the replies) and its new user tokens: the measured hit rate is the server's cached tokens over its prompt tokens, the theoretical one the history over the prompt. The token counts and hit rates are this run's counts, with no interval."},
		block{Table: ptrTable(latencyTable("Latency over every turn", latencyRows(s, k)))})
	if len(s.Warnings) > 0 {
		sec.Blocks = append(sec.Blocks, block{Sub: "Warnings of this run"}, block{Warnings: warningsOf(s.Warnings)})
	}
	if errs := errorCounts(r.Requests); len(errs) > 0 {
		t := &table{Caption: "Errors of the failed turns (most frequent first)", Head: []string{"Error", "Turns"}}
		for _, e := range errs {
			t.Rows = append(t.Rows, row{Head: e.Error, Cells: []cell{numCell(fmt.Sprint(e.Count), "")}})
		}
		sec.Blocks = append(sec.Blocks, block{Table: t})
	}
	if s.Server != nil {
		var b strings.Builder
		if err := s.WriteServerView(&b); err == nil {
			sec.Blocks = append(sec.Blocks, block{Sub: "The server's view"}, block{Pre: b.String()})
		}
	}
	if budget > 0 && len(r.Requests) > 0 {
		f, err := timelineFigure(r.Requests, max(1, budget/nruns))
		if err != nil {
			return section{}, err
		}
		if f != nil {
			f.Caption = "Per-request timeline: every turn of every session. " + f.Caption
			sec.Blocks = append(sec.Blocks, block{Figure: f})
		}
	}
	return sec, nil
}

// turnsTable is a run's figures by turn: its requests, the p50 of TTFT,
// TPOT and E2E each with its interval, the tokens and the hit rates.
func turnsTable(r benchkit.SessionsRun, k string) *table {
	t := &table{
		Caption: "By turn: the p50 of each latency with its 95 % interval; tokens summed over the turn's completed requests",
		Head: []string{"Turn", "requests", "completed", "TTFT p50 (ms) [interval]", "TPOT p50 (ms) [interval]", "E2E p50 (ms) [interval]",
			"input tokens", "cached tokens", "prefix hit rate, measured (%)", "theoretical (%)"},
	}
	for _, ts := range r.Turns {
		s, tk := ts.Summary, fmt.Sprintf("%sturn%d.", k, ts.Turn)
		t.Rows = append(t.Rows, row{Head: fmt.Sprint(ts.Turn), Cells: []cell{
			numCell(fmt.Sprint(s.Requests), tk+"requests"),
			numCell(fmt.Sprint(s.Completed), tk+"completed"),
			numCell(withCI(s.TTFT.P50, s.TTFT.P50CI), tk+"ttft.p50"),
			numCell(withCI(s.TPOT.P50, s.TPOT.P50CI), tk+"tpot.p50"),
			numCell(withCI(s.E2E.P50, s.E2E.P50CI), tk+"e2e.p50"),
			numCell(fmt.Sprint(s.TotalInputTokens), tk+"total_input_tokens"),
			numCell(fmt.Sprint(s.CachedTokens), tk+"cached_tokens"),
			numCell(pctOf(s.PrefixHitRate), tk+"prefix_hit_rate"),
			numCell(pctOf(s.TheoreticalHitRate), tk+"theoretical_prefix_hit_rate"),
		}})
	}
	return t
}

// pctOf prints a fraction as a percentage with one decimal, "none" where
// absent.
func pctOf(v *float64) string {
	if v == nil {
		return "none"
	}
	return num(*v*100, 1)
}
