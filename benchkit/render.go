package benchkit

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/inferbench/inferbench/timing"
)

// TableOptions configure WriteTable and WriteMarkdown.
type TableOptions struct {
	// Simulated labels every figure as simulated.
	Simulated bool
	// Title is printed above the table.
	Title string
}

// WriteTable writes one line per cell of each placement for a terminal,
// with a placement column (PlacementKey.String) when rows carry one:
// prompt TPS, generation TPS, exo's aggregate beside Σ tokens / wall,
// TTFT, peak memory, energy and J/token, each as "mean ± the half width of
// its repeat-level 95 % confidence interval (sd the repeats' standard
// deviation)", as every such header says ("± 95 % CI (sd)"). The layout is for people and may
// change between releases: parse the JSON, CSV or benchfmt outputs
// instead.
//
// Where figures come from is in the headers:
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
// A column with no figure in any line is left out.
func WriteTable(w io.Writer, cells []CellSummary, opts TableOptions) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if err := writeGrid(tw, cells, opts, "", "\t", "\t"); err != nil {
		return err
	}
	return tw.Flush()
}

// WriteMarkdown writes the table of WriteTable as a Markdown table.
func WriteMarkdown(w io.Writer, cells []CellSummary, opts TableOptions) error {
	return writeGrid(w, cells, opts, "| ", " | ", " |")
}

// energyOf returns the energy and J/token intervals the table shows for
// c, and their source: "server", "client", or "" with none.
func energyOf(c CellSummary) (timing.Interval, timing.Interval, string) {
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

func writeGrid(w io.Writer, cells []CellSummary, opts TableOptions, start, sep, end string) error {
	var b strings.Builder
	title := opts.Title
	if opts.Simulated {
		title = strings.TrimSpace(title + " (SIMULATED: figures come from the embedded engine's cost model, not hardware)")
	}
	if title != "" {
		if start != "" { // Markdown
			fmt.Fprintf(&b, "**%s**\n\n", title)
		} else {
			fmt.Fprintf(&b, "%s\n", title)
		}
	}
	// TTFT: the client's when any cell streamed, else the server's prefill.
	clientTTFT := slices.ContainsFunc(cells, func(c CellSummary) bool { return c.TTFTS.N > 0 })
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
	// Every figure with an interval is headed with what its ± is.
	ci := func(h string) string { return h + " ± 95 % CI (sd)" }
	header := []string{"pp", "tg", "conc", "reps", ci("prompt tok/s"), ci("gen tok/s"), ci("exo agg tok/s (max×N)"), ci("Σtok/wall tok/s"), ci(ttftHead), "peak mem", ci(energyHead), ci(jHead), "failed"}
	withPlacement := slices.ContainsFunc(cells, func(c CellSummary) bool { return !c.Placement.IsZero() })
	if withPlacement {
		header = append([]string{"placement"}, header...)
	}
	var lines [][]string
	var notes []string
	for _, c := range cells {
		var cols []string
		if withPlacement {
			cols = append(cols, c.Placement.String())
		}
		ttft := c.TTFTS
		if !clientTTFT {
			ttft = c.ServerPrefillS
		}
		ej, jpt, src := energyOf(c)
		es, js := pm(ej, 1, 1), pm(jpt, 1, 3)
		if mark && src != "" {
			es, js = es+" "+src[:1], js+" "+src[:1]
		}
		lines = append(lines, append(cols,
			strconv.Itoa(c.Cell.PP), strconv.Itoa(c.Cell.TG), strconv.Itoa(c.Cell.Concurrency), strconv.Itoa(c.Repeats),
			pm(c.PromptTPS, 1, 1),
			pm(c.GenerationTPS, 1, 1),
			pm(c.ExoAggregateTPS, 1, 1),
			pm(c.ThroughputTPS, 1, 1),
			pm(ttft, 1000, 1),
			bytesIEC(c.PeakMemoryBytes),
			es, js,
			strconv.Itoa(c.Failed),
		))
		if src == "" && c.EnergyWindowShort {
			notes = append(notes, fmt.Sprintf("%s: no client energy: window %.3g s < %d × %.3g s samples (the rows keep the figure, flagged energy_window_short)",
				c.Name(), c.ShortWindowS, ShortWindowFactor, c.SampleIntervalS))
		}
		for _, w := range c.Warnings {
			notes = append(notes, fmt.Sprintf("%s: %s", c.Name(), w))
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
// the half width of its confidence interval, then the standard deviation
// of its samples. "—" when undefined, the center alone when the interval
// is infinite (one repeat).
func pm(iv timing.Interval, scale float64, prec int) string {
	if math.IsNaN(iv.Center) {
		return "—"
	}
	s := strconv.FormatFloat(iv.Center*scale, 'f', prec, 64)
	if half := (iv.Hi - iv.Center) * scale; !math.IsNaN(half) && !math.IsInf(half, 0) {
		s += " ± " + strconv.FormatFloat(half, 'f', prec, 64)
		if sd := iv.SD * scale; !math.IsNaN(sd) && !math.IsInf(sd, 0) {
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

// WriteCSV writes one line per row with the columns of csvHeader. An
// undefined figure is an empty cell; numbers use Go's shortest round-trip
// form.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	pf := func(v *float64) string {
		if v == nil {
			return ""
		}
		return f(*v)
	}
	for _, r := range rows {
		rec := []string{
			strconv.Itoa(r.PPTarget), strconv.Itoa(r.PPTokens), strconv.Itoa(r.TG), strconv.Itoa(r.Concurrency),
			strconv.Itoa(r.RepeatIndex), strconv.Itoa(r.RequestIndex), "",
			f(r.ElapsedS), pf(r.TTFTS), pf(r.TPOTS), pf(r.E2ES), pf(r.ClientGenerationTPS), "",
			"", "", f(r.SendOffsetS), f(r.DispatchSkewS),
			"", "", "", "", "", "",
			"", "", "",
			r.ModelID, r.InstanceID, r.PlacementSharding, r.PlacementInstanceMeta, strconv.Itoa(r.PlacementNodes),
			strconv.FormatBool(r.Stream), strconv.FormatBool(r.Simulated), r.ErrorKind, r.Error, strings.Join(r.Warnings, "; "),
		}
		if r.ConcurrentIndex != nil {
			rec[6] = strconv.Itoa(*r.ConcurrentIndex)
		}
		if r.GeneratedTokens != nil {
			rec[12] = strconv.Itoa(*r.GeneratedTokens)
		}
		if r.ITL != nil {
			rec[13], rec[14] = f(r.ITL.P50), f(r.ITL.P99)
		}
		if s := r.Stats; s != nil {
			rec[17], rec[18] = f(s.PromptTPS), f(s.GenerationTPS)
			rec[19], rec[20] = strconv.Itoa(s.PromptTokens), strconv.Itoa(s.GenerationTokens)
			rec[21], rec[22] = strconv.FormatInt(s.PeakMemoryBytes, 10), string(s.PrefixCacheHit)
		}
		if e := r.Energy; e != nil {
			rec[23], rec[24], rec[25] = f(e.Joules), f(e.AvgWatts), pf(e.JPerGeneratedToken)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
