package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/inferbench/inferbench/benchkit"
	bplot "github.com/inferbench/inferbench/benchkit/plot"
	"github.com/inferbench/inferbench/precision"
	"github.com/inferbench/inferbench/timing"
)

// WriteExo writes doc, the results of exo's benchmark (exo-bench's
// results file), to w as one HTML page: what was measured and how, the
// cell table (each figure the mean over the cell's repeats ± the half
// width of its 95 % interval, as the program's table prints it), the
// energy where it was measured, and the generation rate and the energy
// per token of each cell as plots. The cells are doc.Summary, in the
// order the results file holds them (each cell's figures are named by
// its index there: "cell0.generation_tps"); a document without them is
// summarised from its rows. It fails only when w does or when a plot
// cannot be drawn.
func WriteExo(w io.Writer, doc benchkit.Document, opts Options) error {
	v, err := buildExo(doc, opts)
	if err != nil {
		return err
	}
	return v.write(w)
}

func buildExo(doc benchkit.Document, opts Options) (view, error) {
	var m benchkit.Meta
	if doc.Meta != nil {
		m = *doc.Meta
	}
	cells := doc.Summary
	if len(cells) == 0 && len(doc.Runs) > 0 {
		cells = m.Plan.Summarize(doc.Runs)
	}
	p := view{Title: opts.Title, Simulated: m.Simulated, Predicted: m.Predicted, Kind: "exo benchmark"}
	if p.Title == "" {
		p.Title = "exo benchmark of " + orNone(m.Model) + " on " + orNone(m.Engine)
	}
	p.About, p.Command = about(m.RunInfo, m.Predicted)
	p.About = append(p.About, exoPlanRows(m.Plan, cells, doc.Runs)...)
	warns := slices.Clone(m.Warnings)
	if m.ClientSaturated {
		warns = append(warns, "client saturated: the client could not release every burst at once, so those bursts' latencies include its own queueing: "+m.Saturation())
	}
	p.Warnings = warningsOf(warns)
	if len(cells) == 0 {
		p.Sections = append(p.Sections, section{ID: "cells", Heading: "Cells", Blocks: []block{{Note: "No cell was measured: the run has no rows."}}})
		return p, nil
	}
	labels := cellLabels(cells)
	p.Sections = append(p.Sections, exoCellSection(cells))
	gen, err := generationSection(cells, labels, m.Simulated)
	if err != nil {
		return view{}, err
	}
	p.Sections = append(p.Sections, gen)
	en, err := energySection(doc, cells, labels, m.Simulated)
	if err != nil {
		return view{}, err
	}
	p.Sections = append(p.Sections, en)
	return p, nil
}

// exoPlanRows are the "what was measured" rows of an exo benchmark: the
// placements, the cells, the repeats, the plan's settings and the
// requests.
func exoPlanRows(plan benchkit.Plan, cells []benchkit.Summary, runs []benchkit.Request) [][2]string {
	var places, thinking []string
	for _, c := range cells {
		if s := c.Labels.Placement.String(); s != "" && !slices.Contains(places, s) {
			places = append(places, s)
		}
		if s := c.Labels.Thinking; s != "" && !slices.Contains(thinking, s) {
			thinking = append(thinking, s)
		}
	}
	placeText := "none named"
	if len(places) > 0 {
		placeText = strings.Join(places, ", ")
	}
	var pairs []string
	for _, pr := range plan.Pairs() {
		pairs = append(pairs, fmt.Sprintf("(%d, %d)", pr[0], pr[1]))
	}
	conc := plan.Concurrency
	if len(conc) == 0 {
		conc = []int{1}
	}
	cellText := fmt.Sprintf("%d cells measured", len(cells))
	if len(pairs) > 0 {
		how := "paired"
		if plan.AllCombinations || len(plan.PP) != len(plan.TG) {
			how = "every combination"
		}
		cellText = fmt.Sprintf("(pp, tg) tokens %s (%s) × concurrency %s: %d cells of the plan; %s", strings.Join(pairs, ", "), how, ints(conc), len(plan.Cells()), cellText)
	}
	reps := fmt.Sprintf("%d per cell", max(plan.Repeat, 1))
	if len(plan.Until) > 0 {
		var ts []string
		for _, t := range plan.Until {
			ts = append(ts, t.String())
		}
		reps = fmt.Sprintf("at least %d per cell, until %s are met, at most %d", max(plan.Repeat, 1), strings.Join(ts, ", "), plan.MaxRepeat)
	}
	settings := fmt.Sprintf("streamed: %s; warmup requests: %d; prefix cache: %s; salted prompts: %s; pause before each burst %s s, after each group %s s",
		yesNo(plan.Stream), plan.Warmup, onOff(plan.UsePrefixCache), yesNo(plan.Salt),
		strconv.FormatFloat(plan.PauseBetweenRepeats.Seconds(), 'g', -1, 64), strconv.FormatFloat(plan.PauseBetweenGroups.Seconds(), 'g', -1, 64))
	failed := 0
	for _, r := range runs {
		if r.Failed() {
			failed++
		}
	}
	rows := [][2]string{
		{"Placements", placeText},
		{"Cells", cellText},
		{"Repeats", reps},
		{"Plan", settings},
	}
	if len(thinking) > 0 {
		rows = append(rows, [2]string{"Thinking", strings.Join(thinking, "; ")})
	}
	return append(rows, [2]string{"Requests", fmt.Sprintf("%d measured, %d failed", len(runs), failed)})
}

func ints(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// cellKey is the data-key prefix of the i-th cell of the results file's
// summary.
func cellKey(i int) string { return "cell" + strconv.Itoa(i) + "." }

// exoCellSection is the cell table: a row per cell, its figures each
// "mean ±half" over its repeats (FormatInterval), and the cells' notes.
func exoCellSection(cells []benchkit.Summary) section {
	clientTTFT := slices.ContainsFunc(cells, func(c benchkit.Summary) bool { return c.RepeatTTFT.N > 0 })
	ttftHead, ttftField := "TTFT (ms)", "ttft_s"
	if !clientTTFT {
		ttftHead, ttftField = "prefill (ms, server)", "server_prefill_s"
	}
	reasoned := slices.ContainsFunc(cells, func(c benchkit.Summary) bool { return c.RepeatReasoningTokens.N > 0 })
	places := slices.ContainsFunc(cells, func(c benchkit.Summary) bool {
		return c.Labels.Placement.String() != cells[0].Labels.Placement.String()
	})
	thinking := slices.ContainsFunc(cells, func(c benchkit.Summary) bool { return c.Labels.Thinking != "" })
	head := []string{"Cell", "pp (tokens)", "tg (tokens)", "concurrency (requests)", "repeats", "prompt (tokens/s)", "generation (tokens/s)", "exo max × N (tokens/s)", "Σ tokens / wall (tokens/s)", ttftHead}
	if reasoned {
		head = append(head, "TTFA (ms)", "reasoning (tokens)", "answer (tokens)")
	}
	head = append(head, "peak memory (bytes)", "failed (requests)")
	if thinking {
		head = slices.Insert(head, 1, "thinking")
	}
	if places {
		head = slices.Insert(head, 1, "placement")
	}
	t := &table{Caption: "Each cell over its repeats: mean ± the half width of its 95 % confidence interval", Head: head}
	var notes []string
	for i, c := range cells {
		k := cellKey(i)
		ttft := c.RepeatTTFT
		if !clientTTFT {
			ttft = c.ServerPrefillS
		}
		cs := []cell{
			numCell(strconv.Itoa(c.Cell.PP), k+"pp"), numCell(strconv.Itoa(c.Cell.TG), k+"tg"),
			numCell(strconv.Itoa(c.Cell.Concurrency), k+"concurrency"), numCell(strconv.Itoa(c.Repeats), k+"repeats"),
			numCell(FormatInterval(c.PromptTPS, 1), k+"prompt_tps"), numCell(FormatInterval(c.GenerationTPS, 1), k+"generation_tps"),
			numCell(FormatInterval(c.ExoAggregateTPS, 1), k+"exo_aggregate_tps"), numCell(FormatInterval(c.ThroughputTPS, 1), k+"throughput_tps"),
			numCell(FormatInterval(ttft, 1000), k+ttftField),
		}
		if reasoned {
			cs = append(cs, numCell(FormatInterval(c.RepeatTTFA, 1000), k+"ttfa_s"),
				numCell(FormatInterval(c.RepeatReasoningTokens, 1), k+"reasoning_tokens"), numCell(FormatInterval(c.RepeatAnswerTokens, 1), k+"answer_tokens"))
		}
		peak := "—"
		if c.PeakMemoryBytes > 0 {
			peak = strconv.FormatInt(c.PeakMemoryBytes, 10)
		}
		cs = append(cs, numCell(peak, k+"peak_memory_bytes"), numCell(strconv.Itoa(c.Failed), k+"failed"))
		if thinking {
			cs = slices.Insert(cs, 0, textCell(orDash(c.Labels.Thinking)))
		}
		if places {
			cs = slices.Insert(cs, 0, textCell(orDash(c.Labels.Placement.String())))
		}
		t.Rows = append(t.Rows, row{Head: strconv.Itoa(i + 1), Cells: cs})
		if len(c.Precision) > 0 {
			notes = append(notes, fmt.Sprintf("%s: %s: %s", cellName(i, c), orNone(c.Stopped), precision.Describe(c.Precision)))
		}
		for _, w := range c.Warnings {
			notes = append(notes, cellName(i, c)+": "+w)
		}
	}
	legend := "Cells are numbered as on the plots below; the placement is in the table above where every cell shares it. A figure is the mean over the cell's repeats ± the half width of its 95 % confidence interval (the center alone with one repeat; — where undefined), " +
		"to the precision the interval allows, as the program's table prints it; the results file has each with its bounds and sd. " +
		"Prompt and generation are the mean per-request rates (the server's, else the client's); exo max × N is exo's aggregate, " +
		"Σ tokens / wall the tokens a burst generated over its wall time."
	if clientTTFT {
		legend += " TTFT is the client's, from the streamed responses."
	} else {
		legend += " Prefill is the server's, prompt_tokens / prompt_tps: no response was streamed, so the client has no TTFT."
	}
	if reasoned {
		legend += " TTFA is the client's time to the first answer token (its TTFT where a request did not reason); reasoning tokens are the mean of the requests that reasoned."
	}
	sec := section{ID: "cells", Heading: "Cells", Blocks: []block{{Note: legend}, {Table: t}}}
	if len(notes) > 0 {
		sec.Blocks = append(sec.Blocks, block{Sub: "Notes on the cells"}, block{List: notes})
	}
	return sec
}

// cellName is cell i as the notes name it: its number and its name.
func cellName(i int, c benchkit.Summary) string {
	return fmt.Sprintf("Cell %d (%s)", i+1, c.Name())
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// FormatInterval is how the cell table prints an interval over repeats,
// scaled (1000 for seconds as ms): "center ±half", the half width to two
// significant digits and the center to the same decimal place, never
// more than four significant digits of the center; the center alone, to
// four significant digits, when the interval has no finite half width
// (one repeat); "—" when undefined. It is the rule of exo-bench's
// terminal table.
func FormatInterval(iv timing.Interval, scale float64) string {
	if iv.N == 0 {
		return "—"
	}
	return iv.Short(scale)
}

// cellLabels name the cells on the plots' axes with the page's own
// words: the cell's number in the table, its pp, tg and concurrency, and
// its placement and thinking setting where the cells differ in them
// (each kept to letters, digits and a few marks).
func cellLabels(cells []benchkit.Summary) []string {
	places := slices.ContainsFunc(cells, func(c benchkit.Summary) bool {
		return c.Labels.Placement.String() != cells[0].Labels.Placement.String()
	})
	thinking := slices.ContainsFunc(cells, func(c benchkit.Summary) bool { return c.Labels.Thinking != cells[0].Labels.Thinking })
	out := make([]string, len(cells))
	for i, c := range cells {
		s := fmt.Sprintf("%d: pp %d tg %d ×%d", i+1, c.Cell.PP, c.Cell.TG, c.Cell.Concurrency)
		if places {
			s += " " + plain(c.Labels.Placement.String())
		}
		if thinking {
			s += " thinking " + plain(orNone(c.Labels.Thinking))
		}
		out[i] = s
	}
	return out
}

// plain keeps letters, digits and "=,.-_" of s, at most 24 of them.
func plain(s string) string {
	s = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("=,.-_", r) {
			return r
		}
		return '_'
	}, s)
	if len(s) > 24 {
		s = s[:24]
	}
	return s
}

// generationSection plots each cell's generation rate.
func generationSection(cells []benchkit.Summary, labels []string, simulated bool) (section, error) {
	ivs := make([]timing.Interval, len(cells))
	for i, c := range cells {
		ivs[i] = c.GenerationTPS
	}
	title := "Generation rate per cell"
	desc := "each cell's mean per-request generation rate (tokens/s) over its repeats as a point, its 95 % confidence interval as a bar"
	f, drawn, err := cellFigure(title, "generation rate per request (tokens/s)", desc, labels, ivs, simulated)
	if err != nil {
		return section{}, err
	}
	sec := section{ID: "generation", Heading: "Generation rate"}
	if f == nil {
		sec.Blocks = append(sec.Blocks, block{Note: "No cell has a generation rate to plot."})
		return sec, nil
	}
	f.Caption = desc + "; " + drawnNote(drawn, len(cells)) + " The table's generation column holds the same figures."
	sec.Blocks = append(sec.Blocks, block{Figure: f})
	return sec, nil
}

func drawnNote(drawn, n int) string {
	if drawn == n {
		return fmt.Sprintf("all %d cells.", n)
	}
	return fmt.Sprintf("%d of %d cells (the others have no figure).", drawn, n)
}

// exoEnergy is the energy a cell's table shows and its source: the
// server's (exo's power_usage, every node) where it reported one, else
// the client's integral of sampled power unless its window was too short
// to trust; src is "" with neither. The fields name the results file's.
type exoEnergy struct {
	src                       string
	energy, perToken, perAns  timing.Interval
	energyF, perTokenF, perAF string
}

func energyOfCell(c benchkit.Summary) exoEnergy {
	switch {
	case c.ServerEnergyJ.N > 0:
		return exoEnergy{"server", c.ServerEnergyJ, c.ServerJPerToken, c.ServerJPerAnswerToken, "server_energy_j", "server_j_per_token", "server_j_per_answer_token"}
	case c.EnergyJ.N > 0 && !c.EnergyWindowShort:
		return exoEnergy{"client", c.EnergyJ, c.JPerToken, c.JPerAnswerToken, "energy_j", "j_per_token", "j_per_answer_token"}
	}
	return exoEnergy{}
}

// energySection is each cell's energy and energy per token, in a table
// and a plot, with the nodes' sampled metrics; or a line saying that no
// energy was measured.
func energySection(doc benchkit.Document, cells []benchkit.Summary, labels []string, simulated bool) (section, error) {
	sec := section{ID: "energy", Heading: "Energy"}
	es := make([]exoEnergy, len(cells))
	measured, answers := false, false
	var notes []string
	for i, c := range cells {
		es[i] = energyOfCell(c)
		measured = measured || es[i].src != ""
		answers = answers || es[i].perAns.N > 0
		if es[i].src == "" && c.EnergyWindowShort {
			notes = append(notes, fmt.Sprintf("%s: no client energy: its window, %.3g s, is shorter than %d × the %.3g s between samples (the rows keep the figure, flagged energy_window_short).",
				cellName(i, c), c.ShortWindowS, benchkit.ShortWindowFactor, c.SampleIntervalS))
		}
	}
	if !measured {
		sec.Blocks = append(sec.Blocks, block{Note: "No energy measured: the server reported no power_usage and no sampled node power covers a burst " +
			"(streamed responses carry no power_usage, and --no-system-metrics samples nothing), so there is no energy per token to plot."})
	} else {
		head := []string{"Cell (as above)", "source", "energy per burst (J)", "energy per token (J/token)"}
		if answers {
			head = append(head, "energy per answer token (J/token)")
		}
		t := &table{Caption: "Energy of each cell over its repeats: mean ± the half width of its 95 % confidence interval", Head: head}
		ivs := make([]timing.Interval, len(cells))
		for i := range cells {
			e, k := es[i], cellKey(i)
			ivs[i] = e.perToken
			if e.src == "" {
				row := row{Head: strconv.Itoa(i + 1), Cells: []cell{textCell("none"), numCell("—", ""), numCell("—", "")}}
				if answers {
					row.Cells = append(row.Cells, numCell("—", ""))
				}
				t.Rows = append(t.Rows, row)
				continue
			}
			cs := []cell{textCell(e.src), numCell(FormatInterval(e.energy, 1), k+e.energyF), numCell(FormatInterval(e.perToken, 1), k+e.perTokenF)}
			if answers {
				cs = append(cs, numCell(FormatInterval(e.perAns, 1), k+e.perAF))
			}
			t.Rows = append(t.Rows, row{Head: strconv.Itoa(i + 1), Cells: cs})
		}
		sec.Blocks = append(sec.Blocks, block{Note: "The server's energy is exo's power_usage of a burst's longest request, every node of the cluster; the client's is its integral of the nodes' sampled power over the burst. " +
			"A cell shows the server's where it reported one. Energy per token is a burst's energy over the tokens it generated (per answer token: over its answer tokens alone, the thinking included)."},
			block{Table: t})
		desc := "each cell's energy per generated token (J/token) over its repeats as a point, its 95 % confidence interval as a bar, from the source the table names"
		f, drawn, err := cellFigure("Energy per token per cell", "energy per generated token (J/token)", desc, labels, ivs, simulated)
		if err != nil {
			return section{}, err
		}
		if f != nil {
			f.Caption = desc + "; " + drawnNote(drawn, len(cells))
			sec.Blocks = append(sec.Blocks, block{Figure: f})
		}
	}
	if len(notes) > 0 {
		sec.Blocks = append(sec.Blocks, block{List: notes})
	}
	if t := metricsTable(doc); t != nil {
		sec.Blocks = append(sec.Blocks, block{Table: t})
	}
	return sec, nil
}

// metricsTable is each node's sampled metrics over the run, nodes and
// metrics in order.
func metricsTable(doc benchkit.Document) *table {
	if len(doc.SystemMetrics) == 0 {
		return nil
	}
	t := &table{Caption: "Each node's sampled metrics over the run", Head: []string{"Node / metric", "min", "mean", "max", "samples"}}
	nodes := make([]string, 0, len(doc.SystemMetrics))
	for n := range doc.SystemMetrics {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		ms := doc.SystemMetrics[n]
		names := make([]string, 0, len(ms))
		for m := range ms {
			names = append(names, m)
		}
		slices.Sort(names)
		for _, m := range names {
			s, k := ms[m], "system_metrics."+n+"."+m+"."
			f := func(v float64) string {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return "none"
				}
				return strconv.FormatFloat(v, 'g', 6, 64)
			}
			t.Rows = append(t.Rows, row{Head: n + " / " + m, Cells: []cell{numCell(f(s.Min), k+"min"), numCell(f(s.Mean), k+"mean"), numCell(f(s.Max), k+"max"), numCell(strconv.Itoa(s.Samples), k+"samples")}})
		}
	}
	return t
}

// cellPoints are the cells' figures, each with its interval as its x
// error.
type cellPoints struct {
	plotter.XYs
	plotter.XErrors
}

// cellFigure draws each cell's interval ivs[i] as a point at its center
// with a bar over its interval, a row per cell named by labels, the
// first at the top; the cells whose figure is undefined are left out. It
// returns nil when none is defined, and how many it drew.
func cellFigure(title, xlabel, desc string, labels []string, ivs []timing.Interval, simulated bool) (*figure, int, error) {
	var pts cellPoints
	n := len(ivs)
	for i, iv := range ivs {
		if iv.N == 0 || math.IsNaN(iv.Center) || math.IsInf(iv.Center, 0) {
			continue
		}
		lo, hi := iv.Center-iv.Lo, iv.Hi-iv.Center
		if math.IsNaN(lo) || math.IsInf(lo, 0) || lo < 0 {
			lo = 0
		}
		if math.IsNaN(hi) || math.IsInf(hi, 0) || hi < 0 {
			hi = 0
		}
		pts.XYs = append(pts.XYs, plotter.XY{X: iv.Center, Y: float64(n - 1 - i)})
		pts.XErrors = append(pts.XErrors, struct{ Low, High float64 }{lo, hi})
	}
	if len(pts.XYs) == 0 {
		return nil, 0, nil
	}
	if simulated {
		title = "SIMULATED: " + title
	}
	p := gplot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.X.Min = 0
	for i, pt := range pts.XYs {
		p.X.Max = max(p.X.Max, 1.08*(pt.X+pts.XErrors[i].High))
	}
	rev := slices.Clone(labels)
	slices.Reverse(rev)
	p.NominalY(rev...)
	p.Add(plotter.NewGrid())
	bars, err := plotter.NewXErrorBars(pts)
	if err != nil {
		return nil, 0, fmt.Errorf("report: %w", err)
	}
	bars.LineStyle.Color, bars.LineStyle.Width = streamColor, vg.Points(1.5)
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, 0, fmt.Errorf("report: %w", err)
	}
	sc.GlyphStyle.Color, sc.GlyphStyle.Radius = streamColor, vg.Points(3)
	p.Add(bars, sc)
	h := max(6*vg.Centimeter, vg.Length(n)*vg.Centimeter+3*vg.Centimeter)
	b, err := svgOf(p, bplot.Width*1.5, h)
	if err != nil {
		return nil, 0, err
	}
	return &figure{SVG: inlineSVG(b, title, desc)}, len(pts.XYs), nil
}
