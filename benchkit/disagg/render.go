package disagg

import (
	"fmt"
	"io"
	"strings"

	"github.com/inferbench/inferbench/internal/termwidth"
)

// WriteTable writes d for a terminal, or as Markdown when markdown
// is set: the two placements and the link, one table per cell with each
// phase's elapsed time, TTFT, prompt TPS and generation TPS (means) and the
// speedups of the disaggregated phase over each baseline, then each
// phase's remote-prefill check and the warnings. The layout is for people
// and may change: parse the JSON instead.
func WriteTable(w io.Writer, d Document, markdown bool) error {
	if markdown {
		return writeTable(w, d, true)
	}
	// For a terminal: the lines wrapped within its width.
	var b strings.Builder
	if err := writeTable(&b, d, false); err != nil {
		return err
	}
	_, err := io.WriteString(w, termwidth.Wrap(b.String()))
	return err
}

// writeTable is WriteTable without the wrapping.
func writeTable(w io.Writer, d Document, markdown bool) error {
	ew := &errWriter{w: w}
	title := "prefill/decode disaggregation"
	if d.Meta.Simulated {
		title = fmt.Sprintf("SIMULATED (%s): %s; every figure below is simulated, not measured on hardware", d.Meta.Preset, title)
	}
	h := func(s string) string {
		if markdown {
			return "### " + s
		}
		return s
	}
	ew.printf("%s\n", h(title))
	ew.printf("%sprefill: %s\n", bullet(markdown), d.Meta.Prefill)
	ew.printf("%sdecode:  %s\n", bullet(markdown), d.Meta.Decode)
	if d.Meta.LinkID != "" {
		ew.printf("%slink:    %s\n", bullet(markdown), d.Meta.LinkID)
	}
	for _, c := range d.Comparison {
		ew.printf("\n%s\n", h(fmt.Sprintf("pp=%d tg=%d concurrency=%d", c.PP, c.TG, c.Concurrency)))
		head := []string{"phase", "requests", "failed", "elapsed (s)", "TTFT (ms)", "prompt TPS", "gen TPS"}
		var lines [][]string
		for _, f := range c.Phases {
			lines = append(lines, []string{f.Phase, fmt.Sprint(f.Requests), fmt.Sprint(f.Failed),
				fmtNum(f.ElapsedS, 1, "%.3f"), fmtNum(f.TTFTS, 1000, "%.1f"), fmtNum(f.PromptTPS, 1, "%.1f"), fmtNum(f.GenerationTPS, 1, "%.2f")})
		}
		ew.table(head, lines, markdown)
		if len(c.Speedups) > 0 {
			ew.printf("\n")
			head = []string{"disaggregated vs", "elapsed", "TTFT", "prompt TPS", "gen TPS"}
			lines = nil
			for _, s := range c.Speedups {
				lines = append(lines, []string{s.Baseline, fmtX(s.Elapsed), fmtX(s.TTFT), fmtX(s.PromptTPS), fmtX(s.GenerationTPS)})
			}
			ew.table(head, lines, markdown)
			ew.printf("(speedup > 1: disaggregated did better; elapsed and TTFT are baseline/disaggregated, the rates disaggregated/baseline)\n")
		}
	}
	if len(d.Phases) > 0 {
		ew.printf("\n%s\n", h("where prefill ran"))
		for _, p := range d.Phases {
			switch {
			case p.Check == nil:
				ew.printf("%s%s: not checked\n", bullet(markdown), p.Phase)
			case p.Check.OK == nil:
				ew.printf("%s%s: unknown: %s\n", bullet(markdown), p.Phase, p.Check.Note)
			case *p.Check.OK:
				ew.printf("%s%s: ok: %s\n", bullet(markdown), p.Phase, p.Check.Note)
			default:
				ew.printf("%s%s: WRONG: %s\n", bullet(markdown), p.Phase, p.Check.Note)
			}
		}
	}
	if len(d.Meta.Warnings) > 0 {
		ew.printf("\n%s\n", h("warnings"))
		for _, wn := range d.Meta.Warnings {
			ew.printf("%s%s\n", bullet(markdown), wn)
		}
	}
	return ew.err
}

func bullet(markdown bool) string {
	if markdown {
		return "- "
	}
	return "  "
}

func fmtNum(v *float64, scale float64, format string) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf(format, *v*scale)
}

func fmtX(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.2fx", *v)
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// table writes an aligned table, or a Markdown one.
func (e *errWriter) table(head []string, lines [][]string, markdown bool) {
	if markdown {
		e.printf("| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for _, l := range lines {
			e.printf("| %s |\n", strings.Join(l, " | "))
		}
		return
	}
	width := make([]int, len(head))
	for _, l := range append([][]string{head}, lines...) {
		for i, c := range l {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, l := range append([][]string{head}, lines...) {
		var b strings.Builder
		for i, c := range l {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		e.printf("  %s\n", strings.TrimRight(b.String(), " "))
	}
}
