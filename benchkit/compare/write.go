package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
)

// WriteTable writes the comparison as a table of at most 120 columns:
// per group, each figure's mean over A's and B's units, the change with
// its interval, and the verdict; markdown writes it as a Markdown table.
// Below it, what the interval and the verdict mean, the differences
// allowed and the warnings.
func (r *Result) WriteTable(w io.Writer, markdown bool) error {
	var b strings.Builder
	bullet := ""
	if markdown {
		bullet = "- "
	}
	fmt.Fprintf(&b, "%sB: %s\n%sA: %s\n", bullet, r.B.Path, bullet, r.A.Path)
	group := "\x00"
	for _, row := range r.Rows {
		if row.Group != group {
			group = row.Group
			fmt.Fprintf(&b, "\n%s (A: %s, B: %s)\n", group, units(row.NA, row.UnitA), units(row.NB, row.UnitB))
			if markdown {
				b.WriteString("\n| figure | A | B | change [interval] | verdict |\n|---|---:|---:|---|---|\n")
			} else {
				fmt.Fprintf(&b, "%-24s %12s %12s  %-34s %s\n", "figure", "A", "B", "change [interval]", "verdict")
			}
		}
		name := row.Figure.Name + " (" + row.Figure.Unit + ")"
		a, bv := num(row.MeanA*row.Figure.Scale), num(row.MeanB*row.Figure.Scale)
		change, verdict := changeText(row), string(row.Verdict)
		if row.Widened {
			verdict += " (widened)"
		}
		if row.Regression {
			verdict += " REGRESSION"
		}
		if markdown {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name, a, bv, change, verdict)
		} else {
			fmt.Fprintf(&b, "%-24s %12s %12s  %-34s %s\n", name, a, bv, change, verdict)
		}
	}
	b.WriteString("\n")
	if markdown {
		b.WriteString("- ")
	}
	fmt.Fprintf(&b, "change: (B − A)/A with Fieller's %g %% interval, over independent units (runs, batches of one run, or\n", 100*r.Confidence)
	fmt.Fprintf(&b, "repeats); verdicts by Welch's t-test, Holm-corrected over the %d figures tested (%g %% family-wise):\n", r.Tests, 100*r.Alpha)
	fmt.Fprintf(&b, "%san interval is one figure's alone, so it may leave out 0 beside \"no change detected\", which weighs\n", bullet)
	b.WriteString("all the figures tested together.\n")
	if r.Threshold > 0 {
		n := len(r.Regressions())
		fmt.Fprintf(&b, "%sgate: a worse figure whose change exceeds %g %% is a regression: %d found.\n", bullet, 100*r.Threshold, n)
	}
	for _, d := range r.Allowed {
		fmt.Fprintf(&b, "%sallowed difference: %s\n", bullet, d)
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(&b, "%swarning: %s\n", bullet, wn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// units says how many units of a kind: "10 batches", "1 run".
func units(n int, kind string) string {
	switch {
	case n == 1:
		return "1 " + kind
	case kind == UnitBatch:
		return fmt.Sprintf("%d batches", n)
	}
	return fmt.Sprintf("%d %ss", n, kind)
}

// stored is the unit of the figure's values as stored (before Scale).
func (f Figure) stored() string {
	switch f.Unit {
	case "ms":
		return "s"
	case "%":
		return "fraction"
	}
	return f.Unit
}

// num prints a value with four significant digits, "–" for none.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.4g", v)
}

// pct prints a relative change as a signed percentage.
func pct(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "?"
	}
	return fmt.Sprintf("%+.1f", 100*v)
}

func changeText(row Row) string {
	switch {
	case row.Verdict == NotComparable:
		return fmt.Sprintf("(%d and %d units)", row.NA, row.NB)
	case !math.IsNaN(row.Rel) && !math.IsNaN(row.RelLo):
		return fmt.Sprintf("%s %% [%s, %s]", pct(row.Rel), pct(row.RelLo), pct(row.RelHi))
	case !math.IsNaN(row.Rel):
		return pct(row.Rel) + " % [unbounded]"
	}
	s := row.Figure.Scale
	return fmt.Sprintf("%s [%s, %s] %s", num(row.Diff*s), num(row.DiffLo*s), num(row.DiffHi*s), row.Figure.Unit)
}

// jsonRow is a Row in JSON: non-numbers as null.
type jsonRow struct {
	Group      string   `json:"group"`
	Figure     string   `json:"figure"`
	Unit       string   `json:"unit"` // the values' unit: "s", "tok/s", "req/s", "fraction", "J/tok"
	Lower      bool     `json:"lower_is_better"`
	UnitA      string   `json:"unit_a"`
	UnitB      string   `json:"unit_b"`
	NA         int      `json:"n_a"`
	NB         int      `json:"n_b"`
	MeanA      *float64 `json:"mean_a"`
	MeanB      *float64 `json:"mean_b"`
	Diff       *float64 `json:"diff"`
	DiffLo     *float64 `json:"diff_lo"`
	DiffHi     *float64 `json:"diff_hi"`
	Rel        *float64 `json:"rel"`
	RelLo      *float64 `json:"rel_lo"`
	RelHi      *float64 `json:"rel_hi"`
	DF         *float64 `json:"df"`
	P          *float64 `json:"p"`
	PHolm      *float64 `json:"p_holm"`
	Widened    bool     `json:"widened,omitempty"`
	Verdict    Verdict  `json:"verdict"`
	Regression bool     `json:"regression,omitempty"`
}

func fin(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// MarshalJSON writes the result: the files, the settings of the test,
// every row (values in the figures' stored units: seconds, tokens per
// second, fractions) and the warnings.
func (r *Result) MarshalJSON() ([]byte, error) {
	out := struct {
		A          string       `json:"a"`
		B          string       `json:"b"`
		KindA      string       `json:"kind_a"`
		KindB      string       `json:"kind_b"`
		Tests      int          `json:"tests"`
		Alpha      float64      `json:"alpha"`
		Confidence float64      `json:"confidence"`
		Threshold  float64      `json:"threshold,omitempty"`
		GateFigs   []string     `json:"gate_figures,omitempty"`
		Rows       []jsonRow    `json:"rows"`
		Allowed    []Difference `json:"allowed,omitempty"`
		Warnings   []string     `json:"warnings,omitempty"`
	}{A: r.A.Path, B: r.B.Path, KindA: r.A.Kind, KindB: r.B.Kind, Tests: r.Tests, Alpha: r.Alpha, Confidence: r.Confidence,
		Threshold: r.Threshold, GateFigs: r.GateFigures, Rows: []jsonRow{}, Allowed: r.Allowed, Warnings: r.Warnings}
	for _, x := range r.Rows {
		out.Rows = append(out.Rows, jsonRow{Group: x.Group, Figure: x.Figure.Name, Unit: x.Figure.stored(), Lower: x.Figure.Lower,
			UnitA: x.UnitA, UnitB: x.UnitB, NA: x.NA, NB: x.NB, MeanA: fin(x.MeanA), MeanB: fin(x.MeanB),
			Diff: fin(x.Diff), DiffLo: fin(x.DiffLo), DiffHi: fin(x.DiffHi), Rel: fin(x.Rel), RelLo: fin(x.RelLo), RelHi: fin(x.RelHi),
			DF: fin(x.DF), P: fin(x.P), PHolm: fin(x.PHolm), Widened: x.Widened, Verdict: x.Verdict, Regression: x.Regression})
	}
	return json.Marshal(out)
}
