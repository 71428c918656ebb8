package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/disagg"
	bplot "github.com/inferbench/inferbench/benchkit/plot"
	"github.com/inferbench/inferbench/timing"
)

// WritePrefillDecode writes doc, the results of a prefill/decode
// disaggregation run (examples/prefill-decode), to w as one HTML page:
// the two placements, the link and the sweep; where each phase's prefill
// ran; for each (pp, tg, concurrency) cell the phases' means and the
// disaggregated phase's speedup over each baseline, as the results file
// holds them, and each phase's latencies with their confidence
// intervals, summarised from the file's rows (benchkit.Summarize); and a
// plot of each phase's TTFT and TPOT against the sweep. It fails only
// when w does or when a plot cannot be drawn.
func WritePrefillDecode(w io.Writer, doc disagg.Document, opts Options) error {
	v, err := buildPrefillDecode(doc, opts)
	if err != nil {
		return err
	}
	return v.write(w)
}

// pdPhases are the phases in the order the results' comparisons list
// them, each with its colour and glyph on the plot.
var pdPhases = []struct {
	name  string
	col   color.Color
	glyph draw.GlyphDrawer
}{
	{disagg.PhaseDisaggregated, color.RGBA{R: 0x1f, G: 0x5f, B: 0xbf, A: 0xff}, draw.CircleGlyph{}},
	{disagg.PhaseDecodeAlone, color.RGBA{R: 0xb0, G: 0x4a, B: 0x00, A: 0xff}, draw.BoxGlyph{}},
	{disagg.PhasePrefillAlone, color.RGBA{R: 0x2a, G: 0x6e, B: 0x2a, A: 0xff}, draw.PyramidGlyph{}},
}

// pdCell is one (pp, tg, concurrency) cell: the results' comparison and
// each phase's summary of the cell's rows.
type pdCell struct {
	cmp disagg.Comparison
	sum map[string]benchkit.Summary
}

func buildPrefillDecode(doc disagg.Document, opts Options) (view, error) {
	m := doc.Meta
	prefillModel, decodeModel := m.Model, m.Model
	if len(doc.Runs) > 0 {
		prefillModel, decodeModel = doc.Runs[0].PrefillModelID, doc.Runs[0].DecodeModelID
	}
	p := view{Title: opts.Title, Simulated: m.Simulated, Kind: "Prefill/decode disaggregation"}
	if p.Title == "" {
		p.Title = "Prefill/decode disaggregation of " + orNone(firstOf(m.Model, decodeModel)) + " on " + orNone(m.Engine)
	}
	p.About, p.Command = about(m.RunInfo, false)
	if m.Model == "" {
		for i := range p.About {
			if p.About[i][0] == "Model" {
				p.About[i][1] = orNone(decodeModel)
			}
		}
	}
	baselines := "not measured (no --compare-baseline): the disaggregated phase alone"
	if m.CompareBaseline {
		baselines = "measured: prefill_alone (the prefill instance before the decode instance exists) and decode_alone (the decode instance after the link and the prefill instance are removed)"
	}
	p.About = append(p.About,
		[2]string{"Prefill placement", orNone(m.Prefill)},
		[2]string{"Prefill model", orNone(prefillModel)},
		[2]string{"Decode placement", orNone(m.Decode)},
		[2]string{"Decode model", orNone(decodeModel)},
		[2]string{"Link", orNone(m.LinkID)},
		[2]string{"Sweep", sweepOf(m.Plan)},
		[2]string{"Streamed", fmt.Sprint(m.Plan.Stream)},
		[2]string{"Baselines", baselines},
	)
	p.Warnings = warningsOf(m.Warnings)

	if len(doc.Phases) > 0 {
		t := &table{Caption: "Each phase as run, and where the engine reports its prefill ran (one probe request after the phase)",
			Head: []string{"Phase", "Model", "Instance", "Requests", "Failed", "Prefill ran"}}
		for _, ph := range doc.Phases {
			k := "phase." + ph.Phase + "."
			t.Rows = append(t.Rows, row{Head: ph.Phase, Cells: []cell{textCell(ph.Model), textCell(ph.InstanceID),
				numCell(fmt.Sprint(ph.Requests), k+"requests"), numCell(fmt.Sprint(ph.Failed), k+"failed"), textCell(checkText(ph.Check))}})
		}
		p.Sections = append(p.Sections, section{ID: "phases", Heading: "The phases", Blocks: []block{{Table: t}}})
	}

	cells := pdCells(doc)
	if f, err := pdFigure(cells, m.Simulated); err != nil {
		return view{}, err
	} else if f != nil {
		p.Sections = append(p.Sections, section{ID: "sweep", Heading: "TTFT and TPOT of each phase", Blocks: []block{{Figure: f}}})
	}
	for i, c := range cells {
		p.Sections = append(p.Sections, pdCellSection(i, c))
	}
	if errs := errorCounts(pdRequests(doc.Runs)); len(errs) > 0 {
		t := &table{Caption: "Errors of the failed requests (most frequent first)", Head: []string{"Error", "Requests"}}
		for _, e := range errs {
			t.Rows = append(t.Rows, row{Head: e.Error, Cells: []cell{numCell(fmt.Sprint(e.Count), "")}})
		}
		p.Sections = append(p.Sections, section{ID: "errors", Heading: "Failed requests", Blocks: []block{{Table: t}}})
	}
	return p, nil
}

// pdCellKey is the data-key prefix of cell i's comparison, as the results
// file's "comparison" lists it.
func pdCellKey(i int) string { return fmt.Sprintf("comparison%d.", i) }

func pdCellSection(i int, c pdCell) section {
	cmp := c.cmp
	sec := section{ID: fmt.Sprintf("cell-%d", i), Heading: fmt.Sprintf("pp=%d tg=%d concurrency=%d", cmp.PP, cmp.TG, cmp.Concurrency)}
	k := pdCellKey(i)
	t := &table{Caption: "Each phase's means over its successful requests (the results' comparison)",
		Head: []string{"Phase", "Requests", "Failed", "elapsed (ms)", "TTFT (ms)", "prompt TPS (tokens/s)", "generation TPS (tokens/s)"}}
	for _, f := range cmp.Phases {
		pk := k + f.Phase + "."
		t.Rows = append(t.Rows, row{Head: f.Phase, Cells: []cell{
			numCell(fmt.Sprint(f.Requests), pk+"requests"), numCell(fmt.Sprint(f.Failed), pk+"failed"),
			numCell(ms(f.ElapsedS), pk+"elapsed_s"), numCell(ms(f.TTFTS), pk+"ttft_s"),
			numCell(ptr(f.PromptTPS, 1, "none"), pk+"prompt_tps"), numCell(ptr(f.GenerationTPS, 2, "none"), pk+"generation_tps")}})
	}
	sec.Blocks = append(sec.Blocks, block{Table: t},
		block{Note: "Means without an interval, as the results file holds them; each phase's latencies below carry theirs. " +
			"Elapsed is the client's wall time of a request; prompt TPS the server's; generation TPS the server's where it reports one, else the client's."})
	if len(cmp.Speedups) > 0 {
		st := &table{Caption: "Speedup of the disaggregated phase over each baseline (above 1: disaggregated did better)",
			Head: []string{"Baseline", "elapsed (×)", "TTFT (×)", "prompt TPS (×)", "generation TPS (×)"}}
		for _, s := range cmp.Speedups {
			sk := k + "speedup." + s.Baseline + "."
			st.Rows = append(st.Rows, row{Head: s.Baseline, Cells: []cell{
				numCell(ptr(s.Elapsed, 2, "none"), sk+"elapsed"), numCell(ptr(s.TTFT, 2, "none"), sk+"ttft"),
				numCell(ptr(s.PromptTPS, 2, "none"), sk+"prompt_tps"), numCell(ptr(s.GenerationTPS, 2, "none"), sk+"generation_tps")}})
		}
		sec.Blocks = append(sec.Blocks, block{Table: st},
			block{Note: "Elapsed and TTFT speedups are baseline / disaggregated; the rates' are disaggregated / baseline. Each is a ratio of two means, without an interval."})
	}
	var rows []latencyRow
	var warns []string
	for _, ph := range pdPhases {
		s, ok := c.sum[ph.name]
		if !ok {
			continue
		}
		for _, lr := range latencyRows(s, fmt.Sprintf("cell%d.%s.", i, ph.name)) {
			if lr.N == 0 {
				continue
			}
			lr.Name = ph.name + " " + lr.Name
			rows = append(rows, lr)
		}
		for _, w := range s.Warnings {
			warns = append(warns, ph.name+": "+w)
		}
	}
	if len(rows) > 0 {
		sec.Blocks = append(sec.Blocks, block{Table: ptrTable(latencyTable("Each phase's latency over the cell's requests, with 95 % confidence intervals", rows))})
	} else {
		sec.Blocks = append(sec.Blocks, block{Note: "No request of this cell has a latency to summarise."})
	}
	if len(warns) > 0 {
		sec.Blocks = append(sec.Blocks, block{Sub: "Warnings of this cell"}, block{Warnings: warningsOf(warns)})
	}
	return sec
}

// pdRequests are the results' rows as requests, each labelled with its
// phase.
func pdRequests(rows []disagg.Row) []benchkit.Request {
	out := make([]benchkit.Request, len(rows))
	for i, r := range rows {
		out[i] = r.Request()
		out[i].Phase = r.Phase
	}
	return out
}

// pdCells pairs each of the results' comparisons with its phases'
// summaries: the rows of its (pp target, tg, concurrency), as Compare
// groups them, summarised by phase.
func pdCells(doc disagg.Document) []pdCell {
	reqs := pdRequests(doc.Runs)
	out := make([]pdCell, 0, len(doc.Comparison))
	for _, c := range doc.Comparison {
		var mine []benchkit.Request
		for _, r := range reqs {
			if r.PPTarget == c.PP && r.TGTarget == c.TG && r.Concurrency == c.Concurrency {
				mine = append(mine, r)
			}
		}
		cell := pdCell{cmp: c, sum: map[string]benchkit.Summary{}}
		for _, s := range benchkit.Summarize(mine, benchkit.ByPhase, timing.SLO{}) {
			cell.sum[s.Labels.Phase] = s
		}
		out = append(out, cell)
	}
	return out
}

// sweepOf says what the plan swept.
func sweepOf(p benchkit.Plan) string {
	ints := func(xs []int) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = fmt.Sprint(x)
		}
		return strings.Join(s, ", ")
	}
	conc := p.Concurrency
	if len(conc) == 0 {
		conc = []int{1}
	}
	pairs := ""
	switch {
	case len(p.PP) < 2 || len(p.TG) < 2:
	case p.AllCombinations || len(p.PP) != len(p.TG):
		pairs = " (every pp with every tg)"
	default:
		pairs = " (each pp with the tg of its place)"
	}
	return fmt.Sprintf("pp %s tokens; tg %s tokens%s; concurrency %s; %d repeats of each cell; %d warm-up requests",
		ints(p.PP), ints(p.TG), pairs, ints(conc), max(p.Repeat, 1), p.Warmup)
}

// checkText says in words what a phase's probe found.
func checkText(c *disagg.PrefillCheck) string {
	switch {
	case c == nil:
		return "not checked"
	case c.OK == nil:
		return "unknown: " + c.Note
	case *c.OK:
		return "ok: " + c.Note
	}
	return "WRONG: " + c.Note
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// pdAxis is the plot's x axis: the one of pp, tg and concurrency that the
// cells vary, else the cells themselves, side by side.
type pdAxis struct {
	label string
	x     func(i int, c disagg.Comparison) float64
	// ticks are the values marked, with their labels.
	ticks []gplot.Tick
	// joined says the points of a phase are joined by a line; offset is
	// how far apart the phases' points at one x are drawn.
	joined bool
	offset float64
}

func pdAxisOf(cells []pdCell) pdAxis {
	dims := []struct {
		label string
		of    func(disagg.Comparison) int
	}{
		{"prompt length pp (tokens)", func(c disagg.Comparison) int { return c.PP }},
		{"generation length tg (tokens)", func(c disagg.Comparison) int { return c.TG }},
		{"concurrency (requests at once)", func(c disagg.Comparison) int { return c.Concurrency }},
	}
	var varying []int
	for d, dim := range dims {
		seen := map[int]bool{}
		for _, c := range cells {
			seen[dim.of(c.cmp)] = true
		}
		if len(seen) > 1 {
			varying = append(varying, d)
		}
	}
	if len(varying) == 1 {
		dim := dims[varying[0]]
		a := pdAxis{label: dim.label, x: func(_ int, c disagg.Comparison) float64 { return float64(dim.of(c)) }, joined: true}
		var vals []int
		for _, c := range cells {
			vals = append(vals, dim.of(c.cmp))
		}
		slices.Sort(vals)
		// The phases' points at one value a little apart, so that their
		// whiskers do not hide one another.
		a.offset = float64(vals[len(vals)-1]-vals[0]) / 80
		for _, v := range slices.Compact(vals) {
			a.ticks = append(a.ticks, gplot.Tick{Value: float64(v), Label: fmt.Sprint(v)})
		}
		return a
	}
	a := pdAxis{label: "cell (pp, tg, concurrency)", x: func(i int, _ disagg.Comparison) float64 { return float64(i) }, offset: 0.12}
	for i, c := range cells {
		a.ticks = append(a.ticks, gplot.Tick{Value: float64(i), Label: fmt.Sprintf("pp=%d tg=%d c=%d", c.cmp.PP, c.cmp.TG, c.cmp.Concurrency)})
	}
	return a
}

// errPoints are points with their intervals, as gonum's error bars take
// them.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

// pdFigure draws the mean TTFT and TPOT of each phase of each cell, with
// the confidence interval of each mean as a whisker, against the sweep;
// nil when no cell has either.
func pdFigure(cells []pdCell, simulated bool) (*figure, error) {
	if len(cells) == 0 {
		return nil, nil
	}
	axis := pdAxisOf(cells)
	title := "TTFT and TPOT of each phase"
	if simulated {
		title = "SIMULATED: " + title
	}
	fig := &bplot.Figure{Title: title, Cols: 2, Width: bplot.FigureWidth, Height: bplot.FigureHeight * 0.6}
	drawn := 0
	for _, f := range []struct {
		name, long string
		get        func(benchkit.Summary) benchkit.Quantiles
	}{
		{"TTFT", "time to first token", func(s benchkit.Summary) benchkit.Quantiles { return s.TTFT }},
		{"TPOT", "time per output token", func(s benchkit.Summary) benchkit.Quantiles { return s.TPOT }},
	} {
		pl := gplot.New()
		pl.Title.Text = f.name + ": " + f.long + ", mean"
		pl.X.Label.Text = axis.label
		pl.Y.Label.Text = f.name + " (ms)"
		pl.X.Tick.Marker = gplot.ConstantTicks(axis.ticks)
		panel := bplot.Panel{Name: f.name, Plot: pl}
		hi := 0.0
		for j, ph := range pdPhases {
			type point struct{ x, y, lo, up float64 }
			var found []point
			for i, c := range cells {
				s, ok := c.sum[ph.name]
				q := f.get(s)
				if !ok || q.Mean == nil || !isFinite(*q.Mean) {
					continue
				}
				y := *q.Mean * 1e3
				lo, up := 0.0, 0.0
				if q.MeanCI != nil {
					lo, up = max(0, y-q.MeanCI[0]*1e3), max(0, q.MeanCI[1]*1e3-y)
				}
				found = append(found, point{axis.x(i, c.cmp) + axis.offset*float64(j-1), y, lo, up})
				hi = max(hi, y+up)
			}
			if len(found) == 0 {
				continue
			}
			drawn += len(found)
			slices.SortStableFunc(found, func(a, b point) int { return cmpF(a.x, b.x) })
			var pts errPoints
			for _, q := range found {
				pts.XYs = append(pts.XYs, plotter.XY{X: q.x, Y: q.y})
				pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{q.lo, q.up})
			}
			thumbs, err := pdSeries(pl, pts, ph.col, ph.glyph, axis.joined)
			if err != nil {
				return nil, fmt.Errorf("report: %s %s: %w", f.name, ph.name, err)
			}
			panel.Series = append(panel.Series, bplot.Series{Label: ph.name, Points: pts.XYs, Thumbs: thumbs})
		}
		if len(panel.Series) == 0 {
			pl.Title.Text += " (no phase measured it)"
			hi = 1
		}
		pl.Y.Min, pl.Y.Max = 0, hi*1.1
		lo, up := axis.ticks[0].Value, axis.ticks[len(axis.ticks)-1].Value
		pad := max((up-lo)/10, 0.5)
		if axis.joined {
			pad = max((up-lo)/10, up/10)
		}
		pl.X.Min, pl.X.Max = lo-pad, up+pad
		fig.Panels = append(fig.Panels, panel)
	}
	if drawn == 0 {
		return nil, nil
	}
	b, err := svgOf(fig, fig.Width, fig.Height)
	if err != nil {
		return nil, err
	}
	desc := "the mean time to first token and the mean time per output token, in ms, of each phase (" + pdPhaseNames(cells) + ") in each cell, against " + axis.label +
		"; each whisker is the 95 % confidence interval of its mean over the cell's requests of that phase"
	return &figure{SVG: inlineSVG(b, title, desc), Caption: strings.ToUpper(desc[:1]) + desc[1:] + " (none where fewer than two requests)."}, nil
}

// pdSeries draws one phase's points, joined or not, with their whiskers,
// and returns the key's thumbnails.
func pdSeries(pl *gplot.Plot, pts errPoints, col color.Color, glyph draw.GlyphDrawer, joined bool) ([]gplot.Thumbnailer, error) {
	style := draw.GlyphStyle{Color: col, Radius: vg.Points(3), Shape: glyph}
	bars, err := plotter.NewYErrorBars(pts)
	if err != nil {
		return nil, err
	}
	bars.Color, bars.Width = col, vg.Points(1.2)
	if joined && len(pts.XYs) > 1 {
		l, sc, err := plotter.NewLinePoints(pts.XYs)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = col, vg.Points(1.5)
		sc.GlyphStyle = style
		pl.Add(l, bars, sc)
		return []gplot.Thumbnailer{l, sc}, nil
	}
	sc, err := plotter.NewScatter(pts.XYs)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle = style
	pl.Add(bars, sc)
	return []gplot.Thumbnailer{sc}, nil
}

// pdPhaseNames lists the phases the cells have, in the plot's order.
func pdPhaseNames(cells []pdCell) string {
	var names []string
	for _, ph := range pdPhases {
		for _, c := range cells {
			if _, ok := c.sum[ph.name]; ok {
				names = append(names, ph.name)
				break
			}
		}
	}
	return strings.Join(names, ", ")
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
