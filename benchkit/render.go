package benchkit

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/inferbench/inferbench/capacity"
	"github.com/inferbench/inferbench/timing"
)

// TableOptions configure WriteTable.
type TableOptions struct {
	// Simulated labels every figure as simulated.
	Simulated bool
	// Title is printed above the table.
	Title string
	// Markdown writes a Markdown table instead of aligned columns.
	Markdown bool
	// Capacity, for a load test's capacity search (Load.FindCapacity),
	// adds each run's state (stable, over-saturated, …) with the knee and
	// the capacity marked, and lines below with the knee, the capacity at
	// the SLO and the search's cost.
	Capacity *capacity.Result
	// Predicted labels a table as predicted on the embedded engine's
	// virtual clock (package benchkit/predict), not measured: a cell
	// table's title, a line under a load table's title, and "predicted"
	// before each of a capacity search's lines.
	Predicted bool
}

// WriteTable writes one line per summary, for people: the layout may
// change between releases (parse the JSON, CSV or benchfmt outputs
// instead). Its columns follow the summaries' key.
//
// ByCell summaries (a Runner's cells, with a placement column when they
// carry one and a thinking column when their thinking settings differ)
// show prompt TPS, generation TPS, exo's aggregate beside Σ
// tokens / wall, TTFT, peak memory, energy and J/token, each as "mean ±
// the half width of its repeat-level 95 % confidence interval"; the
// terminal table says once what ± means and fits 120 columns, Markdown
// adds each interval's sd. Where figures come from is in the headers:
//   - TTFT is the client's, from streamed responses; when no cell was
//     streamed the column is the server's prefill time instead,
//     prompt_tokens / prompt_tps, headed "prefill ms (server)".
//   - energy prefers the server's figure (exo's power_usage, whole
//     cluster) and falls back on the client's integral of sampled power;
//     the header says which ("energy J (server)", "(client)", or each
//     value marked s or c when cells differ). A client figure whose window
//     spans fewer than ShortWindowFactor sample intervals is left out, with
//     a note ("window 1.2 s < 3 × 1 s samples").
//
// When a request of some summary reasoned before it answered, the cells
// add its time to the first answer token (TTFA: TTFT where a request did
// not reason), its reasoning and answer tokens per request and the energy
// per answer token (J/answer, the thinking included); without reasoning
// these columns are not printed.
//
// A column with no figure in any line is left out. Other summaries (a
// load test's runs, led by a thinking column when any run set a thinking
// control) show the offered load, requests, throughputs, TTFT, TPOT, ITL
// and E2E (mean, p50, p99 in ms) and goodput, and, when a request
// reasoned, TTFA, the reasoning and answer tokens and the answer's TPOT.
// Each summary's warnings follow as numbered notes.
func WriteTable(w io.Writer, sums []Summary, opts TableOptions) error {
	if len(sums) > 0 && sums[0].Key != ByCell {
		return writeLoadGrid(w, sums, opts)
	}
	if opts.Markdown {
		return writeGrid(w, sums, opts, "| ", " | ", " |")
	}
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	if err := writeGrid(tw, sums, opts, "", "\t", "\t"); err != nil {
		return err
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Right-aligned cells are padded on the left: the lines of the grid
	// lose the padding of their first cell and the trailing blanks.
	lines := strings.SplitAfter(b.String(), "\n")
	for i, l := range lines {
		l = strings.TrimRight(l, " \n")
		if strings.HasPrefix(l, "  ") && strings.Contains(l, "  ") {
			l = l[2:]
		}
		if i < len(lines)-1 {
			l += "\n"
		}
		lines[i] = l
	}
	_, err := io.WriteString(w, strings.Join(lines, ""))
	return err
}

// energyOf returns the energy and J/token intervals the table shows for
// c, and their source: "server", "client", or "" with none.
func energyOf(c Summary) (timing.Interval, timing.Interval, string) {
	switch {
	case c.ServerEnergyJ.N > 0:
		return c.ServerEnergyJ, c.ServerJPerToken, "server"
	case c.EnergyJ.N > 0 && !c.EnergyWindowShort:
		return c.EnergyJ, c.JPerToken, "client"
	}
	nan := math.NaN()
	none := timing.Interval{Center: nan, Lo: nan, Hi: nan}
	return none, none, ""
}

// answerEnergyOf returns the J per answer token interval of c from the
// source energyOf chose.
func answerEnergyOf(c Summary, src string) timing.Interval {
	switch src {
	case "server":
		return c.ServerJPerAnswerToken
	case "client":
		return c.JPerAnswerToken
	}
	nan := math.NaN()
	return timing.Interval{Center: nan, Lo: nan, Hi: nan}
}

// reasoned reports whether a request of some summary reasoned: the
// tables then show the figures of the reasoning and the answer.
func reasoned(sums []Summary) bool {
	return slices.ContainsFunc(sums, func(s Summary) bool { return s.ReasoningTokens.N > 0 })
}

// reasoningNote says what the reasoning columns of the terminal's cell
// table hold, a line each within 120 columns.
const reasoningNote = "TTFA is the client's time to the first answer token (its TTFT where a request did not reason)\n" +
	"think/answer tok: the mean reasoning tokens of a request that reasoned / the mean answer tokens of a request\n" +
	"J/answer is the energy over the answer's tokens alone: what an answer token costs, its thinking included"

func writeGrid(w io.Writer, cells []Summary, opts TableOptions, start, sep, end string) error {
	if start != "" {
		header, lines, notes := cellGrid(cells, true)
		return writeLines(w, opts, header, lines, notes, "", start, sep, end)
	}
	header, lines, notes, legend := terminalGrid(cells)
	return writeLines(w, opts, header, lines, notes, legend, start, sep, end)
}

// terminalGrid is the cell table for a terminal, within 120 columns: each
// interval as "mean ±half" to the precision its half width allows (two
// significant digits of it), what ± means, where the TTFT and energy come
// from, and the placement and repeats when every cell shares them, said
// once in the legend instead of in every line.
func terminalGrid(cells []Summary) (header []string, lines [][]string, notes []string, legend string) {
	clientTTFT := slices.ContainsFunc(cells, func(c Summary) bool { return c.RepeatTTFT.N > 0 })
	ttftHead, ttftNote := "TTFT ms", "TTFT is the client's, from the streamed responses"
	if !clientTTFT {
		ttftHead, ttftNote = "prefill ms", "prefill ms is the server's, prompt_tokens / prompt_tps (pass --stream for the client's TTFT)"
	}
	sources := map[string]bool{}
	for _, c := range cells {
		if _, _, src := energyOf(c); src != "" {
			sources[src] = true
		}
	}
	energyNote := ""
	switch {
	case len(sources) == 2:
		energyNote = "J/tok marked s is the server's energy (exo's power_usage, whole cluster), c the client's integral of sampled power; the JSON has each burst's joules"
	case sources["server"]:
		energyNote = "J/tok is the server's energy (exo's power_usage, whole cluster) over the tokens; the JSON has each burst's joules"
	case sources["client"]:
		energyNote = "J/tok is the client's integral of sampled power over the tokens; the JSON has each burst's joules"
	}
	place := func(c Summary) string { return c.Labels.Placement.String() }
	samePlace := len(cells) > 0 && !slices.ContainsFunc(cells, func(c Summary) bool { return place(c) != place(cells[0]) })
	sameThink := len(cells) > 0 && !slices.ContainsFunc(cells, func(c Summary) bool { return c.Labels.Thinking != cells[0].Labels.Thinking })
	sameReps := len(cells) > 0 && !slices.ContainsFunc(cells, func(c Summary) bool { return c.Repeats != cells[0].Repeats })
	sameTG := len(cells) > 0 && !slices.ContainsFunc(cells, func(c Summary) bool { return c.Cell.TG != cells[0].Cell.TG })
	thinking := reasoned(cells)
	header = []string{"pp", "tg", "conc", "prompt tok/s", "gen tok/s", "exo max×N", "Σtok/wall", ttftHead}
	if thinking {
		header = append(header, "TTFA ms", "think/answer tok")
	}
	header = append(header, "peak mem", "J/tok")
	if thinking {
		header = append(header, "J/answer")
	}
	header = append(header, "failed")
	if !sameReps {
		header = slices.Insert(header, 3, "reps")
	}
	if sameTG {
		header = slices.Delete(header, 1, 2)
	}
	if !sameThink {
		header = append([]string{"thinking"}, header...)
	}
	if !samePlace {
		header = append([]string{"placement"}, header...)
	}
	for _, c := range cells {
		var cols []string
		if !samePlace {
			cols = append(cols, place(c))
		}
		if !sameThink {
			cols = append(cols, thinkingCol(c))
		}
		cols = append(cols, strconv.Itoa(c.Cell.PP))
		if !sameTG {
			cols = append(cols, strconv.Itoa(c.Cell.TG))
		}
		cols = append(cols, strconv.Itoa(c.Cell.Concurrency))
		if !sameReps {
			cols = append(cols, strconv.Itoa(c.Repeats))
		}
		ttft := c.RepeatTTFT
		if !clientTTFT {
			ttft = c.ServerPrefillS
		}
		figures, src := terminalFigures(c, ttft, len(sources) == 2, thinking)
		lines = append(lines, append(cols, figures...))
		notes = append(notes, cellNotes(c, src)...)
	}
	var lg []string
	if len(cells) > 0 {
		over := "the repeats"
		if sameReps {
			over = fmt.Sprintf("the %d repeats", cells[0].Repeats)
		}
		lg = append(lg, fmt.Sprintf("± is the half width of each figure's 95 %% confidence interval over %s (the JSON has each with its sd)", over))
		if samePlace && place(cells[0]) != "" {
			lg = append(lg, "placement: "+place(cells[0]))
		}
		if sameThink && cells[0].Labels.Thinking != "" {
			lg = append(lg, "thinking: "+cells[0].Labels.Thinking)
		}
		if sameTG {
			lg = append(lg, fmt.Sprintf("tg = %d tokens in every cell", cells[0].Cell.TG))
		}
		lg = append(lg, ttftNote)
		if thinking {
			lg = append(lg, reasoningNote)
		}
		if energyNote != "" {
			lg = append(lg, energyNote)
		}
	}
	return header, lines, notes, strings.Join(lg, "\n")
}

// terminalFigures are the figure columns of c's line in the terminal's
// cell table, from prompt tok/s to failed, the reasoning's with thinking;
// marked marks each energy figure with its source, which it returns.
func terminalFigures(c Summary, ttft timing.Interval, marked, thinking bool) ([]string, string) {
	_, jpt, src := energyOf(c)
	js, ja := pmShort(jpt, 1), pmShort(answerEnergyOf(c, src), 1)
	if marked && src != "" {
		js += " " + src[:1]
		if ja != "—" {
			ja += " " + src[:1]
		}
	}
	cols := []string{pmShort(c.PromptTPS, 1), pmShort(c.GenerationTPS, 1), pmShort(c.ExoAggregateTPS, 1),
		pmShort(c.ThroughputTPS, 1), pmShort(ttft, 1000)}
	if thinking {
		cols = append(cols, pmShort(c.RepeatTTFA, 1000), meanTokens(c.RepeatReasoningTokens)+"/"+meanTokens(c.RepeatAnswerTokens))
	}
	cols = append(cols, bytesIEC(c.PeakMemoryBytes), js)
	if thinking {
		cols = append(cols, ja)
	}
	return append(cols, strconv.Itoa(c.Failed)), src
}

// cellNotes are a cell's notes: a client energy left out, its warnings.
func cellNotes(c Summary, src string) []string {
	var notes []string
	if src == "" && c.EnergyWindowShort {
		notes = append(notes, fmt.Sprintf("%s: no client energy: window %.3g s < %d × %.3g s samples (the rows keep the figure, flagged energy_window_short)",
			c.Name(), c.ShortWindowS, ShortWindowFactor, c.SampleIntervalS))
	}
	for _, w := range c.Warnings {
		notes = append(notes, fmt.Sprintf("%s: %s", c.Name(), w))
	}
	return notes
}

// meanTokens formats the center of an interval of token counts as a
// whole number; "—" when undefined.
func meanTokens(iv timing.Interval) string {
	if math.IsNaN(iv.Center) || math.IsInf(iv.Center, 0) {
		return "—"
	}
	return strconv.FormatFloat(iv.Center, 'f', 0, 64)
}

// pmShort formats iv, scaled, as "center ±half" with the half width to
// two significant digits and the center to the same decimal place (at
// most four significant digits of the center: a half width below them
// shows as zeros): no digit finer than the interval can tell. Without a half width (one
// repeat) the center has four significant digits; "—" when undefined.
func pmShort(iv timing.Interval, scale float64) string { return iv.Short(scale) }

// cellGrid is the cell table's header, lines and notes.
func cellGrid(cells []Summary, md bool) (header []string, lines [][]string, notes []string) {
	// TTFT: the client's when any cell streamed, else the server's prefill.
	clientTTFT := slices.ContainsFunc(cells, func(c Summary) bool { return c.RepeatTTFT.N > 0 })
	ttftHead := "TTFT ms"
	if !clientTTFT {
		ttftHead = "prefill ms (server)"
	}
	// Energy: which sources the shown figures come from.
	sources := map[string]bool{}
	for _, c := range cells {
		if _, _, src := energyOf(c); src != "" {
			sources[src] = true
		}
	}
	energyHead, jHead, mark := "energy J", "J/tok", false
	switch {
	case len(sources) == 2:
		mark = true
		energyHead, jHead = "energy J (s=server, c=client)", "J/tok (s, c)"
	case sources["server"]:
		energyHead, jHead = "energy J (server)", "J/tok (server)"
	case sources["client"]:
		energyHead, jHead = "energy J (client)", "J/tok (client)"
	}
	// Markdown heads every figure with what its ± is; the terminal table
	// says it once, below the lines, to stay within 120 columns.
	ci := func(h string) string {
		if md {
			return h + " ± 95 % CI (sd)"
		}
		return h
	}
	pm := func(iv timing.Interval, scale float64, prec int) string { return pm(iv, scale, prec, md) }
	thinking := reasoned(cells)
	header = []string{"pp", "tg", "conc", "reps", ci("prompt tok/s"), ci("gen tok/s"), ci("exo agg tok/s (max×N)"), ci("Σtok/wall tok/s"), ci(ttftHead)}
	if thinking {
		header = append(header, ci("TTFA ms"), ci("reasoning tok"), ci("answer tok"))
	}
	header = append(header, "peak mem", ci(energyHead), ci(jHead))
	if thinking {
		header = append(header, ci(strings.Replace(jHead, "J/tok", "J/answer tok", 1)))
	}
	header = append(header, "failed")
	withPlacement := slices.ContainsFunc(cells, func(c Summary) bool { return c.Labels.Placement.String() != "" })
	withThinking := slices.ContainsFunc(cells, func(c Summary) bool { return c.Labels.Thinking != "" })
	if withThinking {
		header = append([]string{"thinking"}, header...)
	}
	if withPlacement {
		header = append([]string{"placement"}, header...)
	}
	for _, c := range cells {
		var cols []string
		if withPlacement {
			cols = append(cols, c.Labels.Placement.String())
		}
		if withThinking {
			cols = append(cols, thinkingCol(c))
		}
		ttft := c.RepeatTTFT
		if !clientTTFT {
			ttft = c.ServerPrefillS
		}
		ej, jpt, src := energyOf(c)
		es, js, ja := pm(ej, 1, 1), pm(jpt, 1, 3), pm(answerEnergyOf(c, src), 1, 3)
		if mark && src != "" {
			es, js = es+" "+src[:1], js+" "+src[:1]
			if ja != "—" {
				ja += " " + src[:1]
			}
		}
		cols = append(cols,
			strconv.Itoa(c.Cell.PP), strconv.Itoa(c.Cell.TG), strconv.Itoa(c.Cell.Concurrency), strconv.Itoa(c.Repeats),
			pm(c.PromptTPS, 1, 1),
			pm(c.GenerationTPS, 1, 1),
			pm(c.ExoAggregateTPS, 1, 1),
			pm(c.ThroughputTPS, 1, 1),
			pm(ttft, 1000, 1),
		)
		if thinking {
			cols = append(cols, pm(c.RepeatTTFA, 1000, 1), pm(c.RepeatReasoningTokens, 1, 1), pm(c.RepeatAnswerTokens, 1, 1))
		}
		cols = append(cols, bytesIEC(c.PeakMemoryBytes), es, js)
		if thinking {
			cols = append(cols, ja)
		}
		lines = append(lines, append(cols, strconv.Itoa(c.Failed)))
		if src == "" && c.EnergyWindowShort {
			notes = append(notes, fmt.Sprintf("%s: no client energy: window %.3g s < %d × %.3g s samples (the rows keep the figure, flagged energy_window_short)",
				c.Name(), c.ShortWindowS, ShortWindowFactor, c.SampleIntervalS))
		}
		for _, w := range c.Warnings {
			notes = append(notes, fmt.Sprintf("%s: %s", c.Name(), w))
		}
	}
	return header, lines, notes
}

// writeLines writes the title, the header and lines (leaving out the
// columns with no figure in any line) and the notes.
func writeLines(w io.Writer, opts TableOptions, header []string, lines [][]string, notes []string, legend, start, sep, end string) error {
	var b strings.Builder
	title := opts.Title
	if opts.Simulated {
		title = strings.TrimSpace(title + " (SIMULATED: figures come from the embedded engine's cost model, not hardware)")
	}
	if opts.Predicted {
		title = strings.TrimSpace("PREDICTED on the embedded engine's virtual clock (nothing was sent): " + title)
	}
	if title != "" {
		if start != "" { // Markdown
			fmt.Fprintf(&b, "**%s**\n\n", title)
		} else {
			fmt.Fprintf(&b, "%s\n", title)
		}
	}
	// Leave out the columns with no figure in any line.
	keep := make([]bool, len(header))
	for i := range header {
		keep[i] = len(lines) == 0
		for _, l := range lines {
			if l[i] != "—" {
				keep[i] = true
				break
			}
		}
	}
	pick := func(cols []string) []string {
		var out []string
		for i, c := range cols {
			if keep[i] {
				out = append(out, c)
			}
		}
		return out
	}
	row := func(cols []string) {
		b.WriteString(start)
		b.WriteString(strings.Join(pick(cols), sep))
		b.WriteString(end)
		b.WriteString("\n")
	}
	row(header)
	if start != "" {
		seps := make([]string, len(header))
		for i := range seps {
			seps[i] = "---:"
		}
		row(seps)
	}
	for _, l := range lines {
		row(l)
	}
	if legend != "" && len(lines) > 0 {
		if start == "" {
			legend = wrapText(legend)
		}
		b.WriteString("\n" + legend + "\n")
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		for i, n := range notes {
			if start != "" {
				fmt.Fprintf(&b, "%d. %s\n", i+1, n)
			} else {
				fmt.Fprintf(&b, "[%d] %s\n", i+1, n)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// pm formats iv as "center ± half (sd s)", scaled, with prec decimals:
// the half width of its confidence interval, then (withSD) the standard
// deviation of its samples. "—" when undefined, the center alone when the interval
// is infinite (one repeat).
func pm(iv timing.Interval, scale float64, prec int, withSD bool) string {
	if math.IsNaN(iv.Center) {
		return "—"
	}
	s := strconv.FormatFloat(iv.Center*scale, 'f', prec, 64)
	if half := (iv.Hi - iv.Center) * scale; !math.IsNaN(half) && !math.IsInf(half, 0) {
		s += " ± " + strconv.FormatFloat(half, 'f', prec, 64)
		if sd := iv.SD * scale; withSD && !math.IsNaN(sd) && !math.IsInf(sd, 0) {
			s += " (sd " + strconv.FormatFloat(sd, 'f', prec, 64) + ")"
		}
	}
	return s
}

// bytesIEC formats n with 1024-based units as exo prints peak memory.
func bytesIEC(n int64) string {
	if n <= 0 {
		return "—"
	}
	v := float64(n)
	for _, u := range []string{"B", "KB", "MB", "GB"} {
		if v < 1024 {
			return fmt.Sprintf("%.2f%s", v, u)
		}
		v /= 1024
	}
	return fmt.Sprintf("%.2fTB", v)
}

// csvHeader names the CSV columns; the names are the rows' JSON names, with
// stats_ and energy_ prefixes for the nested ones.
var csvHeader = []string{
	"pp_target", "pp_tokens", "tg", "concurrency", "repeat_index", "request_index", "concurrent_index",
	"elapsed_s", "ttft_s", "tpot_s", "e2e_s", "client_generation_tps", "generated_tokens",
	"itl_p50_s", "itl_p99_s", "send_offset_s", "dispatch_skew_s",
	"stats_prompt_tps", "stats_generation_tps", "stats_prompt_tokens", "stats_generation_tokens",
	"stats_peak_memory_bytes", "stats_prefix_cache_hit",
	"energy_j", "energy_avg_w", "energy_j_per_generated_token",
	"model_id", "instance_id", "placement_sharding", "placement_instance_meta", "placement_nodes",
	"stream", "simulated", "error_kind", "error", "warnings",
}

// csvSides names the CSV columns of a model that reasons, written after
// csvHeader's when some row has one of their figures.
var csvSides = []string{
	"ttfa_s", "last_reasoning_s", "reasoning_tokens", "answer_tokens", "server_reasoning_tokens", "hidden_tokens",
	"tpot_answer_s", "tpot_reasoning_s", "energy_j_per_answer_token",
}

// sideCells are r's cells of the csvSides columns; with is false when r
// has none of their figures.
func sideCells(r ExoRun, f func(*float64) string) (cells []string, with bool) {
	n := func(v *int) string {
		if v == nil {
			return ""
		}
		return strconv.Itoa(*v)
	}
	cells = []string{f(r.TTFAS), f(r.LastReasoningS), n(r.ReasoningTokens), n(r.AnswerTokens), n(r.ServerReasoningTokens), "",
		f(r.TPOTAnswerS), f(r.TPOTReasoningS), ""}
	if r.HiddenTokens > 0 {
		cells[5] = strconv.Itoa(r.HiddenTokens)
	}
	if r.Energy != nil {
		cells[8] = f(r.Energy.JPerAnswerToken)
	}
	return cells, slices.ContainsFunc(cells, func(c string) bool { return c != "" })
}

// writeLoadGrid writes the table of a load test's summaries.
func writeLoadGrid(w io.Writer, sums []Summary, opts TableOptions) error {
	md := opts.Markdown
	head := []string{"traffic", "ok/sent", "dur s", "req/s", "out tok/s", "ttft ms mean/p50/p99", "tpot ms mean/p50/p99", "itl ms p50/p99", "e2e ms p50/p99", "goodput", "skew ms p99", "lag ms p99"}
	// A cache column when any server said what it cached, or the workload
	// what it could: measured / theoretical.
	withHits := slices.ContainsFunc(sums, func(s Summary) bool { return s.PrefixHitRate != nil || s.TheoreticalHitRate != nil })
	if withHits {
		head = append(head, "cache hit % (server/workload)")
	}
	// The answer's figures beside the whole's when a request reasoned.
	thinking := reasoned(sums)
	if thinking {
		head = withSides(head, nil)
	}
	// A thinking column, first, when any run set a thinking control: one
	// line per setting (and rate).
	withThinking := slices.ContainsFunc(sums, func(s Summary) bool { return s.Labels.Thinking != "" })
	if withThinking {
		head = append([]string{"thinking"}, head...)
	}
	var lines [][]string
	notes := []string{noIntervalNote}
	for i, s := range sums {
		lines = append(lines, []string{
			s.Traffic,
			fmt.Sprintf("%d/%d", s.Completed, s.Requests),
			fmt.Sprintf("%.2f", s.DurationS),
			num(s.RequestThroughput, 2),
			num(s.OutputThroughput, 1),
			ms(s.TTFT.Mean) + "/" + ms(s.TTFT.P50) + "/" + ms(s.TTFT.P99),
			ms(s.TPOT.Mean) + "/" + ms(s.TPOT.P50) + "/" + ms(s.TPOT.P99),
			ms(s.ITL.P50) + "/" + ms(s.ITL.P99),
			ms(s.E2E.P50) + "/" + ms(s.E2E.P99),
			goodCol(s),
			ms(s.DispatchSkew.P99),
			ms(s.ScheduleLag.P99),
		})
		if withHits {
			l := &lines[len(lines)-1]
			*l = append(*l, hitRate(s.PrefixHitRate, s.TheoreticalHitRate))
		}
		if thinking {
			lines[len(lines)-1] = withSides(lines[len(lines)-1], &s)
		}
		if withThinking {
			l := &lines[len(lines)-1]
			*l = append([]string{thinkingCol(s)}, *l...)
		}
		for _, wn := range loadNotes(s) {
			if len(sums) > 1 && inEvery(sums, wn) {
				if i == 0 {
					notes = append(notes, "every run: "+wn)
				}
				continue
			}
			notes = append(notes, fmt.Sprintf("run %d (%s): %s", i, runName(s, withThinking), wn))
		}
		lines, notes = withSteady(lines, notes, head, s, fmt.Sprintf("run %d (%s): ", i, runName(s, withThinking)))
	}
	head, notes = capacityGrid(opts.Capacity, opts.Predicted, sums, head, lines, notes)
	var b strings.Builder
	writeLoadPreamble(&b, opts)
	if err := writeRows(&b, md, head, lines); err != nil {
		return err
	}
	for _, grid := range loadGrids {
		head, lines, legend := grid(namedRuns(sums, withThinking))
		if len(lines) == 0 {
			continue
		}
		if !md {
			legend = wrapText(legend)
		}
		b.WriteString("\n" + legend + "\n")
		if md {
			b.WriteString("\n")
		}
		if err := writeRows(&b, md, head, lines); err != nil {
			return err
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			if md {
				b.WriteString("- ")
			}
			if !md {
				n = wrapText(n)
			}
			b.WriteString(n + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeLoadPreamble writes the load table's title and, for a simulated
// engine, the line that says so.
func writeLoadPreamble(b *strings.Builder, opts TableOptions) {
	if opts.Title != "" {
		b.WriteString(opts.Title + "\n")
		if opts.Markdown {
			b.WriteString("\n")
		}
	}
	if opts.Simulated {
		b.WriteString("All figures are simulated (embedded engine), not measurements of real hardware.\n")
		if opts.Markdown {
			b.WriteString("\n")
		}
	}
	if opts.Predicted {
		b.WriteString("All figures are predicted on the embedded engine's virtual clock (nothing was sent), not measured.\n")
		if opts.Markdown {
			b.WriteString("\n")
		}
	}
}

// withSides inserts the columns of a model that reasons into a line of the
// load table, s's figures, or into its header when s is nil: TTFA and
// the mean reasoning/answer tokens after TTFT, the answer's TPOT after
// TPOT.
func withSides(line []string, s *Summary) []string {
	ttfa, tokens, tpot := "ttfa ms mean/p50/p99", "think/answer tok mean", "tpot answer ms p50/p99"
	if s != nil {
		ttfa = ms(s.TTFA.Mean) + "/" + ms(s.TTFA.P50) + "/" + ms(s.TTFA.P99)
		tokens = num(s.ReasoningTokens.Mean, 0) + "/" + num(s.AnswerTokens.Mean, 0)
		tpot = ms(s.TPOTAnswer.P50) + "/" + ms(s.TPOTAnswer.P99)
	}
	line = slices.Insert(slices.Clip(line), 6, ttfa, tokens)
	return slices.Insert(line, 9, tpot)
}

// goodCol is a load summary's goodput in a table: good/total and whether
// the run met the SLOs, "-" without objectives.
func goodCol(s Summary) string {
	if s.Goodput == nil {
		return "-"
	}
	good := fmt.Sprintf("%d/%d", s.Goodput.Good, s.Goodput.Total)
	if s.MeetsSLO != nil && *s.MeetsSLO {
		return good + " ✓"
	}
	return good + " ✗"
}

// namedRuns are sums for the server's tables, which name each run by its
// traffic: with thinking settings, led by the setting (runName).
func namedRuns(sums []Summary, withThinking bool) []Summary {
	if !withThinking {
		return sums
	}
	named := slices.Clone(sums)
	for i := range named {
		named[i].Traffic = runName(named[i], true)
	}
	return named
}

// runName names a load test's run in notes and the server's tables: its
// traffic, after its thinking setting when the table has a thinking
// column.
func runName(s Summary, withThinking bool) string {
	if !withThinking {
		return s.Traffic
	}
	return "thinking " + thinkingCol(s) + ", " + s.Traffic
}

// thinkingCol is a summary's thinking setting in a table: "-" for none.
func thinkingCol(s Summary) string {
	if s.Labels.Thinking == "" {
		return "-"
	}
	return s.Labels.Thinking
}

// writeRows writes a header and lines as a Markdown table or aligned
// columns.
func writeRows(b *strings.Builder, md bool, head []string, lines [][]string) error {
	if md {
		b.WriteString("| " + strings.Join(head, " | ") + " |\n|" + strings.Repeat(" --- |", len(head)) + "\n")
		for _, l := range lines {
			b.WriteString("| " + strings.Join(l, " | ") + " |\n")
		}
		return nil
	}
	for g, cols := range columnGroups(head, lines) {
		if g > 0 {
			b.WriteString("\n")
		}
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(cellsAt(head, cols), "\t"))
		for _, l := range lines {
			fmt.Fprintln(tw, strings.Join(cellsAt(l, cols), "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// WriteCSV writes one line per request with the columns of csvHeader,
// then, when some request has a figure of a model that reasons (a
// streamed request's TTFA is one), those columns: ttfa_s,
// last_reasoning_s, reasoning_tokens, answer_tokens,
// server_reasoning_tokens, hidden_tokens, tpot_answer_s,
// tpot_reasoning_s and energy_j_per_answer_token. An undefined figure is
// an empty cell; numbers use Go's shortest round-trip form.
func WriteCSV(w io.Writer, reqs []Request) error {
	cw := csv.NewWriter(w)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	pf := func(v *float64) string {
		if v == nil {
			return ""
		}
		return f(*v)
	}
	sides := slices.ContainsFunc(reqs, func(q Request) bool { _, with := sideCells(q.Exo(), pf); return with })
	header := csvHeader
	if sides {
		header = append(slices.Clip(header), csvSides...)
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, q := range reqs {
		r := q.Exo()
		warnings := make([]string, len(r.Warnings))
		for i, w := range r.Warnings {
			warnings[i] = w.Message
		}
		rec := []string{
			strconv.Itoa(r.PPTarget), strconv.Itoa(r.PPTokens), strconv.Itoa(r.TG), strconv.Itoa(r.Concurrency),
			strconv.Itoa(r.RepeatIndex), strconv.Itoa(r.RequestIndex), "",
			f(r.ElapsedS), pf(r.TTFTS), pf(r.TPOTS), pf(r.E2ES), pf(r.ClientGenerationTPS), "",
			"", "", f(r.SendOffsetS), f(r.DispatchSkewS),
			"", "", "", "", "", "",
			"", "", "",
			r.ModelID, r.InstanceID, r.PlacementSharding, r.PlacementInstanceMeta, strconv.Itoa(r.PlacementNodes),
			strconv.FormatBool(r.Stream), strconv.FormatBool(r.Simulated), r.ErrorKind, r.Error, strings.Join(warnings, "; "),
		}
		if r.ConcurrentIndex != nil {
			rec[6] = strconv.Itoa(*r.ConcurrentIndex)
		}
		if r.GeneratedTokens != nil {
			rec[12] = strconv.Itoa(*r.GeneratedTokens)
		}
		if r.ITL != nil {
			rec[13], rec[14] = pf(r.ITL.P50), pf(r.ITL.P99)
		}
		if s := r.Stats; s != nil {
			rec[17], rec[18] = f(s.PromptTPS), f(s.GenerationTPS)
			rec[19], rec[20] = strconv.Itoa(s.PromptTokens), strconv.Itoa(s.GenerationTokens)
			rec[21], rec[22] = strconv.FormatInt(s.PeakMemoryBytes, 10), string(s.PrefixCacheHit)
		}
		if e := r.Energy; e != nil {
			rec[23], rec[24], rec[25] = f(e.Joules), f(e.AvgWatts), pf(e.JPerGeneratedToken)
		}
		if sides {
			more, _ := sideCells(r, pf)
			rec = append(rec, more...)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ms formats seconds as milliseconds for tables; "-" when undefined.
func ms(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v*1e3)
}

func num(v *float64, prec int) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, *v)
}

// inEvery reports whether every summary carries the warning w, so that a
// table says it once.
func inEvery(sums []Summary, w string) bool {
	for _, s := range sums {
		if !slices.Contains(loadNotes(s), w) {
			return false
		}
	}
	return true
}

// loadNotes are a load summary's stop at its targets, its warnings, then
// its server view's.
func loadNotes(s Summary) []string {
	stop := stopNote(s)
	if stop == "" && (s.Server == nil || len(s.Server.Warnings) == 0) {
		return s.Warnings
	}
	out := slices.Clone(s.Warnings)
	if stop != "" {
		out = append([]string{stop}, out...)
	}
	if s.Server == nil {
		return out
	}
	for _, w := range s.Server.Warnings {
		out = append(out, serverNote+w)
	}
	return out
}

// serverNote heads a server view's warning where it is printed.
const serverNote = "server metrics: "

// hitRate formats a measured and a theoretical hit rate as percentages,
// "-" for one that is unknown.
func hitRate(measured, theoretical *float64) string {
	pct := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f", *v*100)
	}
	return pct(measured) + "/" + pct(theoretical)
}
