package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"html"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/compare"
	"github.com/inferbench/inferbench/timing"
)

// sideDoc is serve-load's document of one run of n requests at each of
// rates (50/s when none), TTFT about ttft and TPOT about tpot seconds
// (noise drawn from seed), every 20th failed with an error that carries
// markup; model names the model and the file's meta, warnings and
// command carry markup too.
func sideDoc(t testing.TB, model, preset string, n int, ttft, tpot float64, seed uint64, rates ...float64) []byte {
	t.Helper()
	if len(rates) == 0 {
		rates = []float64{50}
	}
	rng := rand.New(rand.NewPCG(seed, 11))
	var runs []benchkit.LoadRun
	var names []string
	for _, rate := range rates {
		reqs := make([]benchkit.Request, n)
		for i := range reqs {
			send, r := float64(i)/rate, rate
			f := ttft * (1 + 0.1*rng.NormFloat64())
			p := tpot * (1 + 0.05*rng.NormFloat64())
			e := f + 15*p
			tokens := 16
			reqs[i] = benchkit.Request{Labels: benchkit.Labels{Rate: &r}, Index: i, PPTarget: 128, PPTokens: 128, TGTarget: 16,
				CompletionTokens: &tokens, IntendedSendS: send, SendOffsetS: send, DoneS: send + e,
				TTFTS: &f, TPOTS: &p, E2ES: &e, ITLS: []float64{p, p}, Stream: true, Model: model}
			if i%20 == 19 {
				reqs[i].Error, reqs[i].TTFTS, reqs[i].TPOTS, reqs[i].E2ES, reqs[i].ITLS = "upstream said "+hostile, nil, nil, nil, nil
			}
		}
		run := benchkit.LoadRun{Summary: benchkit.Summarize(reqs, benchkit.ByRun, timing.SLO{})[0], Requests: reqs}
		run.Summary.Traffic = "poisson(rate=" + strconv.FormatFloat(rate, 'g', -1, 64) + "/s)"
		runs = append(runs, run)
		names = append(names, strconv.FormatFloat(rate, 'g', -1, 64))
	}
	meta := benchkit.LoadMeta{RunInfo: benchkit.RunInfo{Tool: "inferbench", Engine: "openai", Model: model, Simulated: true, Preset: preset,
		BaseURL: "http://127.0.0.1:1/" + hostile, Warnings: []string{"meta warning " + hostile},
		Provenance: &benchkit.Provenance{Command: []string{"serve-load", "--model", hostile}, Nonce: "n0nce"}},
		Workload: benchkit.Lengths{Input: 128, Output: 16}, Traffic: benchkit.Traffic{Rate: rates[0], NumRequests: n}, Rates: names, Stream: true}
	var b bytes.Buffer
	if err := benchkit.WriteJSON(&b, benchkit.NewLoadDocument(meta, runs, nil)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sides reads two documents as compare does, A's path a.json, B's
// b.json.
func sides(t testing.TB, a, b []byte) (*compare.Side, *compare.Side) {
	t.Helper()
	sa, err := compare.Read(a, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := compare.Read(b, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sa.Path, sb.Path = "a.json", "b.json"
	return sa, sb
}

func renderCompare(t testing.TB, c *compare.Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteCompare(&b, c, Options{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// worseTPOT is a comparison whose B has a TPOT 10 % higher and a TTFT
// 20 % lower than A's, on a second preset (allowed), gated at 5 % on
// TPOT and TTFT.
func worseTPOT(t testing.TB, model string) *compare.Result {
	t.Helper()
	a, b := sides(t, sideDoc(t, model, "fast", 200, 0.020, 0.002, 1), sideDoc(t, model, "slow", 200, 0.016, 0.0022, 2))
	res, err := compare.Compare(a, b, compare.Config{Allow: []string{"preset"}, Threshold: 0.05, GateFigures: []string{"tpot_mean", "ttft_mean"}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestComparePageHostileInert: a model name, a target, a command, a
// warning and an error that carry markup come out as text on the
// comparison's page, which is well formed and fetches nothing.
func TestComparePageHostileInert(t *testing.T) {
	page := renderCompare(t, worseTPOT(t, hostile))
	for _, bad := range []string{"<script", "<img"} {
		if i := strings.Index(page, bad); i >= 0 {
			t.Errorf("page holds %q unescaped near %q", bad, page[max(0, i-80):min(len(page), i+80)])
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "A&#39;s run: meta warning &lt;script&gt;", "serve-load --model &lt;script&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks the escaped text %q", want)
		}
	}
	if err := checkOffline(page); err != nil {
		t.Error(err)
	}
	checkPage(t, page)
}

// keyedCells are the page's cells that carry a data-key, by key, as
// text.
func keyedCells(t testing.TB, page string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`data-key="([^"]*)">([^<]*)<`).FindAllStringSubmatch(page, -1) {
		if _, dup := out[m[1]]; dup {
			t.Errorf("data-key %q is on two cells", m[1])
		}
		out[m[1]] = html.UnescapeString(m[2])
	}
	return out
}

var numberRE = regexp.MustCompile(`[-+]?\d+(\.\d+)?(e[-+]?\d+)?`)

// numbers are the numbers in s, in order.
func numbers(t testing.TB, s string) []float64 {
	t.Helper()
	var out []float64
	for _, m := range numberRE.FindAllString(s, -1) {
		v, err := strconv.ParseFloat(m, 64)
		if err != nil {
			t.Fatalf("%q in %q: %v", m, s, err)
		}
		out = append(out, v)
	}
	return out
}

// near says whether a printed value reads back as want to its printed
// precision: tol absolute, or rel relative.
func near(got, want, tol, rel float64) bool {
	return math.Abs(got-want) <= tol+rel*math.Abs(want)+1e-12
}

// jsonRow is a row of the comparison's JSON, as compare writes it.
type jsonRow struct {
	Group, Figure, Unit, Verdict          string
	MeanA, MeanB, Diff, Rel, RelLo, RelHi *float64
	DF, P, PHolm                          *float64
	Regression                            bool
}

func (r *jsonRow) UnmarshalJSON(b []byte) error {
	var raw struct {
		Group      string   `json:"group"`
		Figure     string   `json:"figure"`
		Unit       string   `json:"unit"`
		Verdict    string   `json:"verdict"`
		MeanA      *float64 `json:"mean_a"`
		MeanB      *float64 `json:"mean_b"`
		Diff       *float64 `json:"diff"`
		Rel        *float64 `json:"rel"`
		RelLo      *float64 `json:"rel_lo"`
		RelHi      *float64 `json:"rel_hi"`
		DF         *float64 `json:"df"`
		P          *float64 `json:"p"`
		PHolm      *float64 `json:"p_holm"`
		Regression bool     `json:"regression"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*r = jsonRow{raw.Group, raw.Figure, raw.Unit, raw.Verdict, raw.MeanA, raw.MeanB, raw.Diff, raw.Rel, raw.RelLo, raw.RelHi,
		raw.DF, raw.P, raw.PHolm, raw.Regression}
	return nil
}

// checkFigure checks a cell that prints one value of unit (the JSON's
// stored unit) against the JSON's value, nil printed as "none".
func checkFigure(t testing.TB, key, text, unit string, want *float64) {
	t.Helper()
	if want == nil {
		if text != "none" {
			t.Errorf("%s: %q, want none", key, text)
		}
		return
	}
	got := numbers(t, text)
	ok := len(got) == 1
	if ok {
		switch unit {
		case "s":
			ok = near(got[0], *want*1e3, 0.005, 0)
		case "fraction":
			ok = near(got[0], *want*100, 0.005, 0)
		case "J/tok":
			ok = near(got[0], *want, 0, 5e-4)
		default:
			ok = near(got[0], *want, 0.005, 0)
		}
	}
	if !ok {
		t.Errorf("%s: %q, want %g %s", key, text, *want, unit)
	}
}

// checkComparePage checks that the page's keyed cells are exactly the
// comparison's figures, each reading back as the JSON has it; it
// returns the cells.
func checkComparePage(t testing.TB, page string, res *compare.Result) map[string]string {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows []jsonRow `json:"rows"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	cells := keyedCells(t, page)
	groups := map[string]int{}
	want := map[string]bool{}
	for _, r := range doc.Rows {
		gi, ok := groups[r.Group]
		if !ok {
			gi = len(groups)
			groups[r.Group] = gi
		}
		k := "g" + strconv.Itoa(gi) + "." + r.Figure + "."
		checkFigure(t, k+"mean_a", cells[k+"mean_a"], r.Unit, r.MeanA)
		checkFigure(t, k+"mean_b", cells[k+"mean_b"], r.Unit, r.MeanB)
		for _, f := range []string{"mean_a", "mean_b", "df", "p", "p_holm", "verdict"} {
			want[k+f] = true
		}
		switch {
		case r.Rel != nil:
			want[k+"rel"] = true
			got := numbers(t, cells[k+"rel"])
			ends := r.RelLo != nil && r.RelHi != nil
			ok := len(got) >= 1 && near(got[0], 100**r.Rel, 0.05, 0)
			if ends {
				ok = ok && len(got) == 3 && near(got[1], 100**r.RelLo, 0.05, 0) && near(got[2], 100**r.RelHi, 0.05, 0)
			} else {
				ok = ok && strings.Contains(cells[k+"rel"], "unbounded")
			}
			if !ok {
				t.Errorf("%srel: %q, want %g [%v, %v]", k, cells[k+"rel"], 100**r.Rel, r.RelLo, r.RelHi)
			}
		case r.Verdict == string(compare.NotComparable):
			want[k+"rel"] = true
			if !strings.HasPrefix(cells[k+"rel"], "none") {
				t.Errorf("%srel: %q, want none for a figure not comparable", k, cells[k+"rel"])
			}
		default:
			want[k+"diff"] = true
		}
		if r.DF == nil != strings.HasPrefix(cells[k+"df"], "none") {
			t.Errorf("%sdf: %q, want %v", k, cells[k+"df"], r.DF)
		} else if r.DF != nil {
			got := numbers(t, cells[k+"df"])
			if len(got) != 1 || !near(got[0], *r.DF, 0.05, 0) {
				t.Errorf("%sdf: %q, want ν = %g", k, cells[k+"df"], *r.DF)
			}
		}
		for _, p := range []struct {
			key string
			v   *float64
		}{{k + "p", r.P}, {k + "p_holm", r.PHolm}} {
			if p.v == nil {
				if cells[p.key] != "none" {
					t.Errorf("%s: %q, want none", p.key, cells[p.key])
				}
				continue
			}
			got := numbers(t, cells[p.key])
			if len(got) != 1 || !near(got[0], *p.v, 0, 0.05) {
				t.Errorf("%s: %q, want %g", p.key, cells[p.key], *p.v)
			}
		}
		if v := cells[k+"verdict"]; !strings.HasPrefix(v, r.Verdict) || strings.Contains(v, "regression") != r.Regression {
			t.Errorf("%sverdict: %q, want %s (regression %v)", k, v, r.Verdict, r.Regression)
		}
	}
	figureKey := regexp.MustCompile(`^g\d+\.`)
	for key := range cells {
		if figureKey.MatchString(key) && !want[key] {
			t.Errorf("the page has a cell %q that is no figure of the comparison", key)
		}
	}
	for key := range want {
		if _, ok := cells[key]; !ok {
			t.Errorf("the page lacks the cell %q", key)
		}
	}
	return cells
}

// TestComparePageFigures: every figure of the comparison is on the page
// under its data-key, reading back as the JSON has it; the gate's
// outcome names the regression; the runs' latencies stand side by side
// as their files' summaries have them; the change plot colours and
// names the verdicts.
func TestComparePageFigures(t *testing.T) {
	res := worseTPOT(t, "m")
	page := renderCompare(t, res)
	checkPage(t, page)
	cells := checkComparePage(t, page, res)
	var tpot compare.Row
	for _, r := range res.Rows {
		if r.Figure.Name == "tpot_mean" {
			tpot = r
		}
	}
	if tpot.Verdict != compare.Worse || !tpot.Regression {
		t.Fatalf("the fixture's TPOT is %s (regression %v), want a worse regression", tpot.Verdict, tpot.Regression)
	}
	if cells["gate.regressions"] != strconv.Itoa(len(res.Regressions())) || !strings.HasPrefix(cells["gate.outcome"], "failed (exit 4)") ||
		cells["gate.tests"] != strconv.Itoa(res.GatedTests) || cells["gate.threshold"] != "5 %" {
		t.Errorf("gate cells %q %q %q %q", cells["gate.threshold"], cells["gate.tests"], cells["gate.regressions"], cells["gate.outcome"])
	}
	// The runs' own summaries, A beside B.
	for i, s := range []*compare.Side{res.A, res.B} {
		key := []string{"a", "b"}[i] + ".run0.ttft.p50"
		if p50 := FormatMS(*s.Summaries[0].TTFT.P50); !strings.HasPrefix(cells[key], p50+" [") {
			t.Errorf("%s: %q, want the file's p50 %s with its interval", key, cells[key], p50)
		}
	}
	for _, want := range []string{`>preset<`, "allowed (--allow preset)", ">fast<", ">slow<", "tpot_mean: worse, regression",
		"aria-label=\"SIMULATED: Relative change of each figure, B against A\"", "Holm-adjusted p"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	svg := page[strings.Index(page, "<svg"):strings.Index(page, "</svg>")]
	for _, col := range []string{"#D55E00", "#009E73"} { // worse, better
		if !strings.Contains(svg, col) {
			t.Errorf("the change plot does not draw %s", col)
		}
	}
}

// TestComparePageSweep: two sweeps of two rates each: a group per
// rate, each with its plot and its table under its own keys, and the
// runs' latencies paired run by run.
func TestComparePageSweep(t *testing.T) {
	a, b := sides(t, sideDoc(t, "m", "fast", 100, 0.02, 0.002, 1, 25, 50), sideDoc(t, "m", "fast", 100, 0.02, 0.0022, 2, 25, 50))
	res, err := compare.Compare(a, b, compare.Config{})
	if err != nil {
		t.Fatal(err)
	}
	page := renderCompare(t, res)
	checkPage(t, page)
	cells := checkComparePage(t, page, res)
	for _, want := range []string{"Group 1: rate=25 (A: 10 batches, B: 10 batches)", "Group 2: rate=50", "Relative change of each figure, B against A, group 2", "Run 2. A: poisson(rate=50/s)"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if _, ok := cells["b.run1.tpot.mean"]; !ok {
		t.Error("the page lacks B's second run's TPOT")
	}
}

// TestComparePageRefused: a refused comparison's page names each
// difference, says which were allowed, and has no verdicts.
func TestComparePageRefused(t *testing.T) {
	a, b := sides(t, sideDoc(t, "m", "fast", 100, 0.02, 0.002, 1), sideDoc(t, "other", "slow", 100, 0.02, 0.002, 2))
	res, err := compare.Compare(a, b, compare.Config{Allow: []string{"preset"}})
	var re *compare.RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("err %v, want a refusal", err)
	}
	page := renderCompare(t, res)
	if err := checkOffline(page); err != nil {
		t.Error(err)
	}
	// checkPage's structure, less the plot: a refused page has none.
	for _, tag := range []string{"table", "tr", "th", "td", "ul", "li", "h2", "title"} {
		if open, closed := len(regexp.MustCompile(`<`+tag+`[\s>]`).FindAllStringIndex(page, -1)), strings.Count(page, "</"+tag+">"); open != closed {
			t.Errorf("<%s>: %d opened, %d closed", tag, open, closed)
		}
	}
	if strings.Contains(page, "<svg") || strings.Contains(page, `id="verdicts"`) {
		t.Error("a refused comparison's page draws verdicts")
	}
	for _, want := range []string{"The comparison was refused", "<tr><th scope=\"row\">model</th><td>&#34;m&#34;</td><td>&#34;other&#34;</td><td>refused</td>",
		"allowed (--allow preset)", "refused: the runs measured different things"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for key := range keyedCells(t, page) {
		if !strings.HasPrefix(key, "a.") && !strings.HasPrefix(key, "b.") {
			t.Errorf("a refused comparison's page shows %q", key)
		}
	}
	if err := WriteCompare(&bytes.Buffer{}, &compare.Result{A: a}, Options{}); err == nil {
		t.Error("a comparison without B wrote a page")
	}
}

// FuzzComparePageEscaped renders a comparison whose files' paths, model
// names, warnings, groups and differences are arbitrary: the page's
// markup is the same as plain strings give (every '<' of the strings
// escaped), so no string can open an element.
func FuzzComparePageEscaped(f *testing.F) {
	for _, s := range []string{"plain", hostile, `"><svg onload=alert(1)>`, "</title><script>", "<!--", "]]>", "\x00<"} {
		f.Add(s)
	}
	base := worseTPOT(f, "m")
	page := func(t testing.TB, s string) string {
		c := *base
		a, b := *base.A, *base.B
		infoA, infoB := *a.Info, *b.Info
		infoA.Model, infoB.Model, infoA.Warnings = s, s, []string{s}
		a.Info, b.Info, a.Path, b.Path = &infoA, &infoB, s, s
		a.Groups = append([]compare.Group{{Name: s}}, a.Groups...)
		c.A, c.B = &a, &b
		c.Warnings = []string{s}
		c.Allowed = []compare.Difference{{Name: s, A: s, B: s}}
		c.Rows = slices.Clone(c.Rows)
		c.Rows[0].Group = s
		return renderCompare(t, &c)
	}
	want := strings.Count(page(f, "plain"), "<")
	f.Fuzz(func(t *testing.T, s string) {
		if got := strings.Count(page(t, s), "<"); got != want {
			t.Errorf("a string changed the page's markup: %d '<', want %d: %q", got, want, s)
		}
	})
}
