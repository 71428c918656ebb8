package report

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/compare"
)

// WriteCompare writes c, a comparison of B against A (package
// benchkit/compare), to w as one HTML page: what each side measured,
// side by side; the settings in which they differ, refused or allowed;
// the gate's outcome where c has a threshold; each figure's A, B,
// relative change with its interval, test, p-values and verdict; a plot
// of the changes with their intervals around 0; and, where both files
// are load documents, each run's latencies side by side. A refused
// comparison (the Result Compare returns beside its *RefusedError) gives
// a page that names every difference and holds no verdicts. Options'
// Title heads the page; its other fields are the load page's. It fails
// only when w does, when a plot cannot be drawn, or without two sides.
func WriteCompare(w io.Writer, c *compare.Result, opts Options) error {
	if c == nil || c.A == nil || c.B == nil {
		return errors.New("report: a comparison needs its two sides")
	}
	v, err := buildCompare(c, opts)
	if err != nil {
		return err
	}
	return v.write(w)
}

// The verdicts' colours, from Okabe and Ito's palette, which readers of
// every common colour-vision deficiency tell apart; each verdict also
// has its own marker and is named in the row's label.
var (
	worseColor    = rgb(0xd5, 0x5e, 0x00) // vermillion
	betterColor   = rgb(0x00, 0x9e, 0x73) // bluish green
	noChangeColor = rgb(0x59, 0x59, 0x59) // dark grey
)

func buildCompare(c *compare.Result, opts Options) (view, error) {
	a, b := c.A, c.B
	p := view{Title: opts.Title, Kind: "Comparison", Predicted: a.Predicted || b.Predicted}
	p.Simulated = a.Info != nil && a.Info.Simulated || b.Info != nil && b.Info.Simulated
	if p.Title == "" {
		p.Title = "B against A: " + orNone(b.Path) + " against " + orNone(a.Path)
	}
	p.About = [][2]string{
		{"A (the baseline)", orNone(a.Path) + " (" + kindText(a.Kind) + ")"},
		{"B (compared with A)", orNone(b.Path) + " (" + kindText(b.Kind) + ")"},
		{"Outcome", outcome(c)},
	}
	if c.Refused == nil {
		p.About = append(p.About, [2]string{"Test", fmt.Sprintf("Welch's t-test over each side's independent units; verdicts Holm-corrected over the %d figures tested, %s family-wise; each interval at %s",
			c.Tests, comparePct(c.Alpha), comparePct(c.Confidence))})
	}
	warns := slices.Clone(c.Warnings)
	for i, sd := range []*compare.Side{a, b} {
		if sd.Info != nil {
			for _, w := range sd.Info.Warnings {
				warns = append(warns, []string{"A", "B"}[i]+"'s run: "+w)
			}
		}
	}
	p.Warnings = warningsOf(warns)
	p.Sections = append(p.Sections, sidesSection(c), differencesSection(c))
	if c.Refused == nil {
		if c.Threshold > 0 {
			p.Sections = append(p.Sections, gateSection(c))
		}
		sec, err := verdictsSection(c)
		if err != nil {
			return view{}, err
		}
		p.Sections = append(p.Sections, sec)
	}
	if sec, ok := latenciesSection(a, b); ok {
		p.Sections = append(p.Sections, sec)
	}
	return p, nil
}

// kindText says what a kind of results file is.
func kindText(kind string) string {
	switch kind {
	case compare.KindLoad:
		return "a load test's document (serve-load, offline)"
	case compare.KindExo:
		return "exo-bench's document"
	case compare.KindSessions:
		return "multi-turn's document"
	case compare.KindBenchQwen:
		return "bench-qwen's document"
	case compare.KindMerged:
		return "a merged load (serve-load merge)"
	case compare.KindJSONL:
		return "JSONL rows"
	case compare.KindExoJSONL:
		return "exo-bench's JSONL rows"
	}
	return orNone(kind)
}

// outcome is the comparison's outcome in one line.
func outcome(c *compare.Result) string {
	if c.Refused != nil {
		return fmt.Sprintf("refused: the runs measured different things (%s, each named below); nothing was tested", plural(len(c.Refused), "difference"))
	}
	counts := verdictCounts(c.Rows)
	s := fmt.Sprintf("%d worse, %d better, %d no change detected, %d not comparable", counts[compare.Worse], counts[compare.Better],
		counts[compare.NoChange], counts[compare.NotComparable])
	if c.Threshold > 0 {
		s += "; gate: " + gateOutcome(c)
	}
	return s
}

func verdictCounts(rows []compare.Row) map[compare.Verdict]int {
	n := map[compare.Verdict]int{}
	for _, r := range rows {
		n[r.Verdict]++
	}
	return n
}

// gateOutcome is what the gate decided, as examples/compare exits.
func gateOutcome(c *compare.Result) string {
	reg := c.Regressions()
	switch {
	case c.GatedTests == 0:
		return "nothing to test (exit 1): no gated figure has two units on both sides, and a gate that cannot see is no pass"
	case len(reg) > 0:
		return fmt.Sprintf("failed (exit 4): %s worse by more than %s", plural(len(reg), "figure"), comparePct(c.Threshold))
	}
	return fmt.Sprintf("passed: no gated figure is worse by more than %s", comparePct(c.Threshold))
}

// plural is n things: "1 figure", "2 figures".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func comparePct(x float64) string { return fmt.Sprintf("%g %%", 100*x) }

// sidesSection shows what each side measured, side by side.
func sidesSection(c *compare.Result) section {
	type side struct {
		vals    map[string]string
		command string
	}
	var names []string
	sides := make([]side, 2)
	for i, s := range []*compare.Side{c.A, c.B} {
		sides[i].vals = map[string]string{"File": orNone(s.Path), "Kind": kindText(s.Kind), "Preset": "none", "Groups": groupsText(s)}
		if s.Info == nil {
			sides[i].vals["Model"] = "none: the file does not describe its run"
			continue
		}
		rows, cmd := about(*s.Info, s.Predicted)
		sides[i].command = cmd
		sides[i].vals["Preset"] = orNone(s.Info.Preset)
		for _, r := range rows {
			if !slices.Contains(names, r[0]) {
				names = append(names, r[0])
			}
			sides[i].vals[r[0]] = r[1]
		}
	}
	if !slices.Contains(names, "Model") {
		names = append([]string{"Model"}, names...)
	}
	// The file first, the preset after the engine.
	order := []string{"File", "Kind"}
	for _, n := range names {
		order = append(order, n)
		if n == "Engine" {
			order = append(order, "Preset")
		}
	}
	if !slices.Contains(order, "Preset") {
		order = append(order, "Preset")
	}
	order = append(order, "Groups", "Command")
	sides[0].vals["Command"], sides[1].vals["Command"] = orNone(sides[0].command), orNone(sides[1].command)
	t := &table{Caption: "What each side measured", Head: []string{"", "A", "B"}}
	for _, n := range order {
		va, okA := sides[0].vals[n]
		vb, okB := sides[1].vals[n]
		if !okA {
			va = "none"
		}
		if !okB {
			vb = "none"
		}
		t.Rows = append(t.Rows, row{Head: n, Cells: []cell{textCell(va), textCell(vb)}})
	}
	return section{ID: "runs", Heading: "The two runs", Blocks: []block{{Table: t}}}
}

// groupsText lists a side's groups and their units.
func groupsText(s *compare.Side) string {
	if len(s.Groups) == 0 {
		return "none"
	}
	parts := make([]string, len(s.Groups))
	for i, g := range s.Groups {
		parts[i] = fmt.Sprintf("%s: %s of %d requests", g.Name, unitsText(len(g.Units), g.UnitKind), g.Requests)
	}
	return strings.Join(parts, "; ")
}

// unitsText says how many units of a kind: "10 batches", "1 run".
func unitsText(n int, kind string) string {
	switch {
	case n == 1:
		return "1 " + kind
	case kind == compare.UnitBatch:
		return fmt.Sprintf("%d batches", n)
	}
	return fmt.Sprintf("%d %ss", n, kind)
}

// differencesSection names each setting in which the runs differ, and
// whether it refused the comparison or was allowed.
func differencesSection(c *compare.Result) section {
	sec := section{ID: "differences", Heading: "What differs between the runs"}
	if len(c.Refused) == 0 && len(c.Allowed) == 0 {
		sec.Blocks = append(sec.Blocks, block{Note: "Every setting compared is the same on both sides (docs/COMPARE.md lists what is compared; the seeds, the number of requests, the duration, the host and the address are not)."})
		return sec
	}
	if len(c.Refused) > 0 {
		sec.Blocks = append(sec.Blocks, block{Note: "The comparison was refused: the runs measured different things, so a change in their figures would say nothing about the server. Each difference is named below; compare --allow NAME lets a named difference through."})
	}
	t := &table{Caption: "Settings that differ", Head: []string{"Setting", "A", "B", "Status"}}
	for _, d := range c.Refused {
		t.Rows = append(t.Rows, row{Head: d.Name, Cells: []cell{textCell(d.A), textCell(d.B), textCell("refused")}})
	}
	for _, d := range c.Allowed {
		t.Rows = append(t.Rows, row{Head: d.Name, Cells: []cell{textCell(d.A), textCell(d.B), textCell("allowed (--allow " + d.Name + ")")}})
	}
	sec.Blocks = append(sec.Blocks, block{Table: t})
	return sec
}

// gateSection is the gate's threshold, what it looked at and its
// outcome, with each regression.
func gateSection(c *compare.Result) section {
	reg := c.Regressions()
	gated := "every figure"
	if len(c.GateFigures) > 0 {
		gated = strings.Join(c.GateFigures, ", ")
	}
	pairs := [][2]string{
		{"Threshold (relative change)", comparePct(c.Threshold)},
		{"Figures gated", gated},
		{"Tests the gate looks at", fmt.Sprint(c.GatedTests)},
		{"Regressions", fmt.Sprint(len(reg))},
		{"Outcome", gateOutcome(c)},
	}
	keys := []string{"gate.threshold", "", "gate.tests", "gate.regressions", "gate.outcome"}
	sec := section{ID: "gate", Heading: "The gate", Blocks: []block{
		{Note: "A figure is a regression when its verdict is worse and its relative change (the point estimate) is worse than the threshold."},
		{Table: pairsTable("The gate's outcome", "Setting", "Value", pairs, keys)},
	}}
	if len(reg) > 0 {
		var items []string
		for _, r := range reg {
			items = append(items, fmt.Sprintf("%s, %s: %s, worse by more than %s", r.Group, r.Figure.Name, relText(r), comparePct(c.Threshold)))
		}
		sec.Blocks = append(sec.Blocks, block{Sub: "Regressions"}, block{List: items})
	}
	return sec
}

// verdictsSection is every group's figures: a plot of the changes and
// the table of the verdicts.
func verdictsSection(c *compare.Result) (section, error) {
	sec := section{ID: "verdicts", Heading: "Is B better than A: each figure"}
	groups := groupsOf(c.Rows)
	if len(groups) == 0 {
		sec.Blocks = append(sec.Blocks, block{Note: "No figure is held by both sides: nothing was compared."})
	}
	for gi, rows := range groups {
		caption := fmt.Sprintf("%s (A: %s, B: %s)", rows[0].Group, unitsText(rows[0].NA, rows[0].UnitA), unitsText(rows[0].NB, rows[0].UnitB))
		if len(groups) > 1 {
			sec.Blocks = append(sec.Blocks, block{Sub: fmt.Sprintf("Group %d: %s", gi+1, caption)})
		}
		f, err := changeFigure(rows, gi, len(groups), c)
		if err != nil {
			return section{}, err
		}
		if f != nil {
			sec.Blocks = append(sec.Blocks, block{Figure: f})
		}
		sec.Blocks = append(sec.Blocks, block{Table: verdictTable(caption, rows, gi, c.Confidence)})
	}
	sec.Blocks = append(sec.Blocks, block{Note: fmt.Sprintf("Each interval is that figure's own %s interval: Fieller's for the ratio of the means, minus one. "+
		"The verdicts are family-wise: Holm's procedure over the %d figures tested holds the chance that two runs of the same thing read better or worse anywhere to at most %s. "+
		"So an interval may leave out 0 beside \"no change detected\", which weighs every figure tested together; "+
		"the Holm-adjusted p is the smallest family-wise level at which the figure would read better or worse. "+
		"The units are each side's independent runs, repeats, or batches of one run's consecutive requests (batch means), "+
		"never its single requests, whose latencies share a queue; \"widened\" marks correlated batches, whose variance was inflated (docs/COMPARE.md).",
		comparePct(c.Confidence), c.Tests, comparePct(c.Alpha))})
	return sec, nil
}

// groupsOf splits rows by group, in the order of first appearance.
func groupsOf(rows []compare.Row) [][]compare.Row {
	var out [][]compare.Row
	idx := map[string]int{}
	for _, r := range rows {
		i, ok := idx[r.Group]
		if !ok {
			i = len(out)
			idx[r.Group] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], r)
	}
	return out
}

// compareKey is the data-key prefix of group gi's figure name.
func compareKey(gi int, name string) string { return fmt.Sprintf("g%d.%s.", gi, name) }

func verdictTable(caption string, rows []compare.Row, gi int, confidence float64) *table {
	t := &table{Caption: caption, Head: []string{"Figure (unit)", "A (mean over its units)", "B (mean over its units)",
		"Change (B − A)/A (%) [" + comparePct(confidence) + " interval]", "Test", "p", "Holm-adjusted p", "Verdict"}}
	for _, r := range rows {
		k := compareKey(gi, r.Figure.Name)
		change := numCell(relText(r), k+"rel")
		test := numCell("none: a side has fewer than two units", k+"df")
		if r.Verdict != compare.NotComparable {
			if math.IsNaN(r.Rel) {
				change = numCell(diffText(r), k+"diff")
			}
			s := "Welch's t, ν = " + fixed(r.DF, 1)
			if r.Widened {
				s += ", widened (correlated batches)"
			}
			test = numCell(s, k+"df")
		}
		verdict := string(r.Verdict)
		if r.Regression {
			verdict += ": regression"
		}
		t.Rows = append(t.Rows, row{Head: r.Figure.Name + " (" + r.Figure.Unit + ")", Cells: []cell{
			numCell(figureText(r.MeanA, r.Figure), k+"mean_a"), numCell(figureText(r.MeanB, r.Figure), k+"mean_b"),
			change, test, numCell(pText(r.P), k+"p"), numCell(pText(r.PHolm), k+"p_holm"), textKeyed(verdict, k+"verdict")}})
	}
	return t
}

// textKeyed is a left-aligned text named key.
func textKeyed(text, key string) cell { return cell{Text: text, Key: key} }

// figureText prints a figure's value, stored in seconds, fractions or
// rates, in the unit the figure prints in: latencies in ms as FormatMS
// does, fractions in % and rates with two decimals, energy with four
// significant digits.
func figureText(v float64, f compare.Figure) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "none"
	}
	switch f.Unit {
	case "ms":
		return FormatMS(v)
	case "J/tok":
		return fmt.Sprintf("%.4g", v*f.Scale)
	}
	return fixed(v*f.Scale, 2)
}

func fixed(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "none"
	}
	return num(v, prec)
}

// signedPct prints a relative change as a signed percentage.
func signedPct(v float64) string { return fmt.Sprintf("%+.1f", 100*v) }

// relText is a row's relative change with its interval, in %.
func relText(r compare.Row) string {
	switch {
	case r.Verdict == compare.NotComparable:
		return fmt.Sprintf("none (%d and %d units)", r.NA, r.NB)
	case math.IsNaN(r.Rel):
		return "none (A's mean is 0)"
	case math.IsNaN(r.RelLo) || math.IsNaN(r.RelHi):
		return signedPct(r.Rel) + " [unbounded]"
	}
	return signedPct(r.Rel) + " [" + signedPct(r.RelLo) + ", " + signedPct(r.RelHi) + "]"
}

// diffText is a row's difference B − A with its interval, in the
// figure's unit, where the relative change is undefined.
func diffText(r compare.Row) string {
	f := r.Figure
	return fmt.Sprintf("B − A: %s [%s, %s] %s", figureText(r.Diff, f), figureText(r.DiffLo, f), figureText(r.DiffHi, f), f.Unit)
}

// pText prints a p-value with two significant digits.
func pText(p float64) string {
	if math.IsNaN(p) || math.IsInf(p, 0) {
		return "none"
	}
	return fmt.Sprintf("%.2g", p)
}

// latenciesSection shows each load run's latencies as the files'
// summaries have them: per run, one table whose rows put A's figure
// above B's, so that each pair reads down one column.
func latenciesSection(a, b *compare.Side) (section, bool) {
	if len(a.Summaries) == 0 || len(b.Summaries) == 0 {
		return section{}, false
	}
	sec := section{ID: "latencies", Heading: "Each run's latencies, A beside B"}
	sec.Blocks = append(sec.Blocks, block{Note: "Each run's own summary as its file holds it: over its requests, with each figure's confidence interval. " +
		"These intervals treat the requests as independent, which they are not; the verdicts above use independent units."})
	for i := range min(len(a.Summaries), len(b.Summaries)) {
		sa, sb := a.Summaries[i], b.Summaries[i]
		ra, rb := latencyRows(sa, fmt.Sprintf("a.run%d.", i)), latencyRows(sb, fmt.Sprintf("b.run%d.", i))
		var rows []latencyRow
		for _, r := range ra {
			r.Name += ", A"
			rows = append(rows, r)
			for _, o := range rb {
				if o.Name+", A" == r.Name {
					o.Name += ", B"
					rows = append(rows, o)
				}
			}
		}
		for _, o := range rb {
			if !slices.ContainsFunc(ra, func(r latencyRow) bool { return r.Name == o.Name }) {
				o.Name += ", B"
				rows = append(rows, o)
			}
		}
		caption := fmt.Sprintf("Run %d. A: %s; B: %s", i+1, runText(sa), runText(sb))
		sec.Blocks = append(sec.Blocks, block{Table: ptrTable(latencyTable(caption, rows))})
	}
	if len(a.Summaries) != len(b.Summaries) {
		sec.Blocks = append(sec.Blocks, block{Note: fmt.Sprintf("A holds %d runs, B %d: only the first %d are shown.",
			len(a.Summaries), len(b.Summaries), min(len(a.Summaries), len(b.Summaries)))})
	}
	return sec, true
}

// runText says what a run was: its traffic and its requests.
func runText(s benchkit.Summary) string {
	return fmt.Sprintf("%s, %d requests (%d completed, %d failed)", orNone(s.Traffic), s.Requests, s.Completed, s.Failed)
}
