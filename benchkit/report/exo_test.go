package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/timing"
)

// iv is an interval of n repeats about c with half width h (+Inf: one
// repeat's, none).
func iv(n int, c, h float64) timing.Interval {
	return timing.Interval{N: n, Center: c, Lo: c - h, Hi: c + h, SD: h / 2, Confidence: 0.95}
}

var none = timing.Interval{Center: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), SD: math.NaN()}

// exoDoc is a sweep of four cells (pp 128 and 256, concurrency 1 and 4)
// of three repeats; the server reported energy for all but the last,
// whose client energy window was too short. It has no rows: the page
// reads the cells.
func exoDoc() benchkit.Document {
	place := benchkit.Placement{Sharding: "Pipeline", InstanceMeta: "MlxRing", Nodes: 1}
	var cells []benchkit.Summary
	for i, c := range []benchkit.Cell{{PP: 128, TG: 32, Concurrency: 1}, {PP: 128, TG: 32, Concurrency: 4}, {PP: 256, TG: 32, Concurrency: 1}, {PP: 256, TG: 32, Concurrency: 4}} {
		f := float64(i + 1)
		s := benchkit.Summary{Key: benchkit.ByCell, Cell: c, Labels: benchkit.Labels{Placement: place, Concurrency: c.Concurrency},
			Repeats: 3, Requests: 3 * c.Concurrency,
			PromptTPS: iv(3, 309.8227, 0), GenerationTPS: iv(3, 35.70087-f, 0.0123*f), ExoAggregateTPS: iv(3, 35.7*float64(c.Concurrency), 1.5*f),
			ThroughputTPS: iv(3, 24.41106*f, 0.7775*f), RepeatTTFT: none, ServerPrefillS: iv(3, 0.4131394*f, 0.000321),
			EnergyJ: iv(3, 153.02*f, 28.4), JPerToken: iv(3, 4.78198/f, 0.887), ServerEnergyJ: iv(3, 166.71*f, 12.3*f), ServerJPerToken: iv(3, 5.2098/f, 0.0412*f),
			RepeatTTFA: none, RepeatReasoningTokens: none, RepeatAnswerTokens: none, JPerAnswerToken: none, ServerJPerAnswerToken: none,
			PeakMemoryBytes: 15_490_000_000 + int64(i)}
		if i == 3 {
			s.ServerEnergyJ, s.ServerJPerToken = timing.Interval{}, timing.Interval{}
			s.EnergyWindowShort, s.ShortWindowS, s.SampleIntervalS = true, 1.2, 1
		}
		cells = append(cells, s)
	}
	meta := &benchkit.Meta{RunInfo: benchkit.RunInfo{Engine: "exo", Model: "sim/gemma-3-27b-it-4bit", Simulated: true, Preset: "m3",
		Provenance: &benchkit.Provenance{Command: []string{"exo-bench"}, Nonce: "n0nce"}},
		Plan: benchkit.Plan{PP: []int{128, 256}, TG: []int{32}, Concurrency: []int{1, 4}, Repeat: 3}}
	return benchkit.Document{Meta: meta, Summary: cells,
		SystemMetrics: map[string]map[string]energy.MetricSummary{"node-b": {"sysPower": {Min: 90, Max: 180, Mean: 130.5, Samples: 12}}, "node-a": {"gpuUsage": {Min: 0.1, Max: 0.9, Mean: 0.5, Samples: 12}}}}
}

func renderExo(t testing.TB, doc benchkit.Document) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteExo(&b, doc, Options{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// keyed is the text of the page's cell named key; ok false when none.
func keyed(page, key string) (string, bool) {
	m := regexp.MustCompile(`data-key="` + regexp.QuoteMeta(key) + `">([^<]*)<`).FindStringSubmatch(page)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// CheckInterval checks that text, "center ±half" or "center", shows
// center and the half width hi − center, scaled, to the digits it
// prints (hi nil: no half width).
func checkInterval(text string, center, hi *float64, scale float64) error {
	if center == nil {
		if text != "—" {
			return errors.New("shows " + text + " for an undefined figure")
		}
		return nil
	}
	c, h, withHalf := strings.Cut(text, " ±")
	got := []string{c}
	want := []float64{*center * scale}
	if hi != nil && *hi > *center {
		if !withHalf {
			return errors.New(text + " lacks its half width")
		}
		got, want = append(got, h), append(want, (*hi-*center)*scale)
	}
	// The last digit printed rounds: the half width's where there is
	// one (rounded to its second significant digit, "2100" to hundreds),
	// else the center's.
	tol := roundingOf(got[len(got)-1])
	for i, s := range got {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		if math.Abs(v-want[i]) > tol*1.0001 {
			return errors.New(text + ": " + s + " is not " + strconv.FormatFloat(want[i], 'g', -1, 64))
		}
	}
	return nil
}

// jsonCells are the results file's summary as written.
func jsonCells(t *testing.T, doc benchkit.Document) []map[string]json.RawMessage {
	t.Helper()
	var b bytes.Buffer
	if err := benchkit.WriteJSON(&b, doc); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Summary []map[string]json.RawMessage `json:"summary"`
	}
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out.Summary
}

// checkExoKeys checks every figure of the page's cell and energy tables
// against the results file's summary: each key "cell<i>.<field>" shows
// that record's field, ms for seconds.
func checkExoKeys(t *testing.T, page string, cells []map[string]json.RawMessage) int {
	t.Helper()
	checked := 0
	for _, m := range regexp.MustCompile(`data-key="cell(\d+)\.([a-z_]+)">([^<]*)<`).FindAllStringSubmatch(page, -1) {
		i, _ := strconv.Atoi(m[1])
		field, text := m[2], m[3]
		if i >= len(cells) {
			t.Errorf("key cell%d.%s: the results file has %d cells", i, field, len(cells))
			continue
		}
		raw, ok := cells[i][field]
		if !ok {
			t.Errorf("key cell%d.%s names no figure of the results file", i, field)
			continue
		}
		var n struct {
			Center *float64 `json:"center"`
			Hi     *float64 `json:"hi"`
		}
		var whole float64
		switch {
		case json.Unmarshal(raw, &whole) == nil:
			if text != strconv.FormatFloat(whole, 'f', -1, 64) && !(whole == 0 && text == "—") {
				t.Errorf("cell%d.%s shows %q, the results file %v", i, field, text, whole)
			}
		case json.Unmarshal(raw, &n) == nil:
			scale := 1.0
			if strings.HasSuffix(field, "_s") {
				scale = 1000
			}
			if err := checkInterval(text, n.Center, n.Hi, scale); err != nil {
				t.Errorf("cell%d.%s: %v", i, field, err)
			}
		default:
			t.Errorf("cell%d.%s: %s is no figure", i, field, raw)
		}
		checked++
	}
	return checked
}

// checkStructure checks a page's elements balance and its plots parse
// with an accessible name.
func checkStructure(t *testing.T, page string) {
	t.Helper()
	for _, tag := range []string{"table", "tr", "th", "td", "figure", "svg", "ul", "li", "h2", "title", "desc"} {
		if open, closed := len(regexp.MustCompile(`<`+tag+`[\s>]`).FindAllStringIndex(page, -1)), strings.Count(page, "</"+tag+">"); open != closed {
			t.Errorf("<%s>: %d opened, %d closed", tag, open, closed)
		}
	}
	for i, s := range regexp.MustCompile(`(?s)<svg.*?</svg>`).FindAllString(page, -1) {
		d := xml.NewDecoder(strings.NewReader(s))
		for {
			_, err := d.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("svg %d does not parse: %v", i, err)
			}
		}
		if !strings.Contains(s[:strings.IndexByte(s, '>')], `aria-label="`) || !strings.Contains(s, "<desc>") {
			t.Errorf("svg %d has no accessible name or description", i)
		}
	}
	if err := checkOffline(page); err != nil {
		t.Error(err)
	}
}

// TestExoPage: the page says what was measured, shows every cell's
// figures as the results file holds them, each by its key, and plots
// the generation rate and the energy per token of each cell.
func TestExoPage(t *testing.T) {
	doc := exoDoc()
	page := renderExo(t, doc)
	checkStructure(t, page)
	if n := checkExoKeys(t, page, jsonCells(t, doc)); n < 4*12 {
		t.Errorf("%d figures checked by key, want every cell's", n)
	}
	for _, k := range []string{"cell0.generation_tps", "cell3.server_prefill_s", "cell2.server_j_per_token", "cell1.peak_memory_bytes"} {
		if _, ok := keyed(page, k); !ok {
			t.Errorf("page has no figure %s", k)
		}
	}
	if _, ok := keyed(page, "cell3.server_j_per_token"); ok {
		t.Error("a cell without server energy shows one")
	}
	for _, want := range []string{"SIMULATED", "pipeline-ring-1n", "(128, 32), (256, 32) (every combination) × concurrency 1, 4: 4 cells of the plan", "3 per cell",
		`aria-label="SIMULATED: Generation rate per cell"`, `aria-label="SIMULATED: Energy per token per cell"`, "3 of 4 cells (the others have no figure)",
		"prefill (ms, server)", "shorter than 3 × the 1 s between samples", "node-b / sysPower", `data-key="system_metrics.node-b.sysPower.mean">130.5<`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "No energy measured") {
		t.Error("a run with energy says it has none")
	}
	// The figures are printed as the program's terminal table prints them.
	var tb bytes.Buffer
	if err := benchkit.WriteTable(&tb, doc.Summary, benchkit.TableOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(tb.String(), "\n")[1:]
	for i := range doc.Summary {
		for _, f := range []string{"generation_tps", "throughput_tps", "exo_aggregate_tps", "server_prefill_s"} {
			text, _ := keyed(page, cellKey(i)+f)
			if !strings.Contains(lines[i], text) {
				t.Errorf("cell %d %s: the page's %q is not in the table's line %q", i, f, text, lines[i])
			}
		}
	}
}

// TestExoNoEnergy: a run without power telemetry says so instead of an
// empty plot.
func TestExoNoEnergy(t *testing.T) {
	doc := exoDoc()
	doc.SystemMetrics = nil
	for i := range doc.Summary {
		c := &doc.Summary[i]
		c.EnergyJ, c.JPerToken, c.ServerEnergyJ, c.ServerJPerToken = timing.Interval{}, timing.Interval{}, timing.Interval{}, timing.Interval{}
		c.EnergyWindowShort = false
	}
	page := renderExo(t, doc)
	checkStructure(t, page)
	if !strings.Contains(page, "No energy measured") || strings.Contains(page, "Energy per token per cell") || strings.Contains(page, "j_per_token") {
		t.Error("a run without energy does not say so, or draws or lists energy")
	}
	if !strings.Contains(page, `aria-label="SIMULATED: Generation rate per cell"`) {
		t.Error("the generation plot is missing")
	}
}

// TestExoHostile: strings the results file supplied come out as text.
func TestExoHostile(t *testing.T) {
	doc := exoDoc()
	doc.Meta.Model, doc.Meta.Warnings = hostile, []string{"warn " + hostile}
	doc.Meta.Provenance.Command = []string{"exo-bench", "--model", hostile}
	doc.Summary[0].Warnings = []string{"cell " + hostile}
	doc.Summary[1].Labels.Thinking = hostile
	doc.SystemMetrics["<img src=x onerror=alert(2)>"] = map[string]energy.MetricSummary{hostile: {Samples: 1}}
	page := renderExo(t, doc)
	checkStructure(t, page)
	if i := strings.Index(page, "<script"); i >= 0 {
		t.Errorf("page holds <script unescaped near %q", page[max(0, i-80):min(len(page), i+80)])
	}
	if strings.Contains(page, "<img") {
		t.Error("page holds <img unescaped")
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "warn &lt;script&gt;", "cell &lt;script&gt;", "&lt;img src=x onerror=alert(2)&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks the escaped text %q", want)
		}
	}
}

// TestFormatInterval: the rule of the terminal table: two significant
// digits of the half width, the center to the same place.
func TestFormatInterval(t *testing.T) {
	for _, c := range []struct {
		iv    timing.Interval
		scale float64
		want  string
	}{
		{iv(2, 24.41106, 0.7775), 1, "24.41 ±0.78"},
		{iv(2, 48.2, 15.3), 1, "48 ±15"},
		{iv(2, 1234.5, 150), 1, "1230 ±150"},
		{iv(2, 35.70087, 0), 1, "35.70"},
		{timing.Interval{N: 1, Center: 0.4131, Lo: math.Inf(-1), Hi: math.Inf(1)}, 1000, "413.1"},
		{none, 1, "—"},
		{timing.Interval{}, 1, "—"},
	} {
		if got := FormatInterval(c.iv, c.scale); got != c.want {
			t.Errorf("FormatInterval(%+v, %g) = %q, want %q", c.iv, c.scale, got, c.want)
		}
	}
}

// roundingOf is half the unit of the last digit s shows: of its last
// decimal, or of its last digit before any trailing zeros of a whole
// number of two digits or more ("2100": 50).
func roundingOf(s string) float64 {
	if _, frac, ok := strings.Cut(s, "."); ok {
		return 0.5 * math.Pow(10, -float64(len(frac)))
	}
	zeros := len(s) - len(strings.TrimRight(s, "0"))
	if zeros == len(s) {
		zeros = 0
	}
	return 0.5 * math.Pow(10, float64(zeros))
}

// FuzzExoEscaped renders an exo page whose model name, warnings, a
// cell's thinking setting and a node's name are arbitrary: the page's
// markup is the same as a plain name's (every '<' of the strings
// escaped), so no string can open an element.
func FuzzExoEscaped(f *testing.F) {
	for _, s := range []string{"plain", hostile, `"><svg onload=alert(1)>`, "</title><script>", "<!--", "]]>", "\x00<"} {
		f.Add(s)
	}
	base := func(s string) benchkit.Document {
		doc := exoDoc()
		doc.Meta.Model, doc.Meta.Warnings = s, []string{s}
		doc.Summary[0].Warnings = []string{s}
		doc.Summary[1].Labels.Thinking = s
		doc.SystemMetrics[s] = map[string]energy.MetricSummary{"sysPower": {Samples: 1}}
		return doc
	}
	want := strings.Count(renderExo(f, base("plain")), "<")
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" || s == "node-a" || s == "node-b" {
			t.Skip("an empty name or a node's own changes the page's rows, not its markup")
		}
		if got := strings.Count(renderExo(t, base(s)), "<"); got != want {
			t.Errorf("a string changed the page's markup: %d '<', want %d: %q", got, want, s)
		}
	})
}

// TestExoReasoningAndPlacements: cells of a model that reasons show
// their TTFA, reasoning and answer tokens and energy per answer token,
// each by its key as the results file holds it; cells of two
// placements get a placement column and name it on the plots.
func TestExoReasoningAndPlacements(t *testing.T) {
	doc := exoDoc()
	for i := range doc.Summary {
		c := &doc.Summary[i]
		c.RepeatTTFA, c.RepeatReasoningTokens, c.RepeatAnswerTokens = iv(3, 1.25+float64(i), 0.05), iv(3, 180, 12), iv(3, 32, 0)
		c.ServerJPerAnswerToken = iv(3, 30.5, 1.1)
	}
	doc.Summary[2].Labels.Placement = benchkit.Placement{Sharding: "Tensor", InstanceMeta: "MlxJaccl", Nodes: 2}
	page := renderExo(t, doc)
	checkStructure(t, page)
	checkExoKeys(t, page, jsonCells(t, doc))
	for _, k := range []string{"cell0.ttfa_s", "cell1.reasoning_tokens", "cell2.answer_tokens", "cell0.server_j_per_answer_token"} {
		if _, ok := keyed(page, k); !ok {
			t.Errorf("page has no figure %s", k)
		}
	}
	for _, want := range []string{`<th scope="col">TTFA (ms)</th>`, `<th scope="col">placement</th>`, "3: pp 256 tg 32 ×1 tensor-jaccl-2n", "pipeline-ring-1n, tensor-jaccl-2n"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
