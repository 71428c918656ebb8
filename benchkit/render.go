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
// prompt TPS,
// generation TPS, exo's aggregate beside Σ tokens / wall, TTFT, peak
// memory, energy and J/token, each as mean ± the half width of its
// repeat-level confidence interval. The layout is for people and may
// change between releases: parse the JSON, CSV or benchfmt outputs instead.
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

var gridHeader = []string{"pp", "tg", "conc", "reps", "prompt tok/s", "gen tok/s", "exo agg tok/s (max×N)", "Σtok/wall tok/s", "TTFT ms", "peak mem", "energy J", "J/tok", "failed"}

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
	row := func(cols []string) {
		b.WriteString(start)
		b.WriteString(strings.Join(cols, sep))
		b.WriteString(end)
		b.WriteString("\n")
	}
	header := gridHeader
	withPlacement := slices.ContainsFunc(cells, func(c CellSummary) bool { return !c.Placement.IsZero() })
	if withPlacement {
		header = append([]string{"placement"}, header...)
	}
	row(header)
	if start != "" {
		seps := make([]string, len(header))
		for i := range seps {
			seps[i] = "---:"
		}
		row(seps)
	}
	var notes []string
	for _, c := range cells {
		var cols []string
		if withPlacement {
			cols = append(cols, c.Placement.String())
		}
		row(append(cols,
			strconv.Itoa(c.Cell.PP), strconv.Itoa(c.Cell.TG), strconv.Itoa(c.Cell.Concurrency), strconv.Itoa(c.Repeats),
			pm(c.PromptTPS.Center, c.PromptTPS.Hi, 1, 1),
			pm(c.GenerationTPS.Center, c.GenerationTPS.Hi, 1, 1),
			pm(c.ExoAggregateTPS.Center, c.ExoAggregateTPS.Hi, 1, 1),
			pm(c.ThroughputTPS.Center, c.ThroughputTPS.Hi, 1, 1),
			pm(c.TTFTS.Center, c.TTFTS.Hi, 1000, 1),
			bytesIEC(c.PeakMemoryBytes),
			pm(c.EnergyJ.Center, c.EnergyJ.Hi, 1, 1),
			pm(c.JPerToken.Center, c.JPerToken.Hi, 1, 3),
			strconv.Itoa(c.Failed),
		))
		for _, w := range c.Warnings {
			notes = append(notes, fmt.Sprintf("%s: %s", c.Name(), w))
		}
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

// pm formats center ± (hi − center), scaled, with prec decimals: "—" when
// undefined, the center alone when the interval is infinite.
func pm(center, hi, scale float64, prec int) string {
	if math.IsNaN(center) {
		return "—"
	}
	s := strconv.FormatFloat(center*scale, 'f', prec, 64)
	if half := (hi - center) * scale; !math.IsNaN(half) && !math.IsInf(half, 0) {
		s += " ± " + strconv.FormatFloat(half, 'f', prec, 64)
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
