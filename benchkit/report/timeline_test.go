package report

import (
	"fmt"
	"image/color"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/timing"
)

// timelineSVG is the page's first timeline.
func timelineSVG(t *testing.T, page string) string {
	t.Helper()
	i := strings.Index(page, `aria-label="Per-request timeline"`)
	if i < 0 {
		t.Fatal("page has no timeline")
	}
	return page[i : i+strings.Index(page[i:], "</svg>")]
}

// hexOf is c as the SVG backend writes a stroke's colour.
func hexOf(c color.RGBA) string { return fmt.Sprintf("#%02X%02X%02X", c.R, c.G, c.B) }

// strokePaths are the paths of svg stroked in c, each as its x0, y0, x1,
// y1 and its style.
type strokePath struct {
	x0, y0, x1, y1 float64
	style          string
}

var pathRE = regexp.MustCompile(`<path d="M([-\d.e+]+),([-\d.e+]+)L([-\d.e+]+),([-\d.e+]+)" style="([^"]*)"`)

func strokes(t *testing.T, svg string, c color.RGBA) []strokePath {
	t.Helper()
	var out []strokePath
	for _, m := range pathRE.FindAllStringSubmatch(svg, -1) {
		if !strings.Contains(m[5]+";", "stroke:"+hexOf(c)+";") {
			continue
		}
		var v [4]float64
		for i := range v {
			f, err := strconv.ParseFloat(m[i+1], 64)
			if err != nil {
				t.Fatalf("path %q: %v", m[0], err)
			}
			v[i] = f
		}
		out = append(out, strokePath{v[0], v[1], v[2], v[3], m[5]})
	}
	return out
}

// reasoningDoc is loadDoc(n) with every fourth successful request
// reasoning for 50 ms after its first token; it returns how many do.
func reasoningDoc(n int) (benchkit.LoadDocument, int) {
	doc := loadDoc(n)
	k := 0
	for i := range doc.Requests {
		r := &doc.Requests[i]
		if i%4 != 0 || r.Failed() {
			continue
		}
		ttfa, last := *r.TTFTS+0.05, *r.TTFTS+0.045
		r.TTFAS, r.LastReasoningS = &ttfa, &last
		k++
	}
	return doc, k
}

// TestTimelineReasoning: each request that reasoned draws its reasoning
// in violet, from its first token to its first answer token, keyed in
// the legend; a run where none reasoned draws no violet at all.
func TestTimelineReasoning(t *testing.T) {
	doc, k := reasoningDoc(20)
	svg := timelineSVG(t, render(t, doc, Options{}))
	if got := len(strokes(t, svg, thinkColor)); got != k+1 {
		t.Errorf("%d violet strokes, want %d requests that reasoned and the legend's", got, k)
	}
	if !strings.Contains(svg, ">reasoning: first token to first answer token<") || !strings.Contains(svg, "violet from the first token to the first answer token") {
		t.Error("the legend or the description does not say what violet marks")
	}
	// The violet bar is the 50 ms from the first token to the first
	// answer token, a third of the blue that follows it (150 ms − 50 ms).
	think, answer := strokes(t, svg, thinkColor)[0], strokes(t, svg, streamColor)[0]
	if think.y0 != answer.y0 || math.Abs(think.x1-answer.x0) > 0.01 {
		t.Errorf("the reasoning bar %+v does not end where the answer's %+v starts", think, answer)
	}
	if r := (think.x1 - think.x0) / (answer.x1 - answer.x0); math.Abs(r-0.5) > 0.02 {
		t.Errorf("reasoning / answer bar length %.3f, want 0.5 (50 ms / 100 ms)", r)
	}
	plain := timelineSVG(t, render(t, loadDoc(20), Options{}))
	if n := len(strokes(t, plain, thinkColor)); n != 0 || strings.Contains(plain, "reasoning") {
		t.Errorf("a run without reasoning draws %d violet strokes or keys reasoning", n)
	}
}

// gapDoc is loadDoc(n) with every successful request's 150 ms stream as
// 15 gaps of 10 ms; slow lists, per request index, gap positions made
// 60 ms long instead (the stream then runs longer than its E2E; the
// timeline does not mind).
func gapDoc(n int, slow map[int][]int) benchkit.LoadDocument {
	doc := loadDoc(n)
	for i := range doc.Requests {
		r := &doc.Requests[i]
		if r.Failed() {
			continue
		}
		r.ITLS = make([]float64, 15)
		for j := range r.ITLS {
			r.ITLS[j] = 0.01
		}
		for _, j := range slow[i] {
			r.ITLS[j] = 0.06
		}
	}
	return doc
}

// TestTimelineSlowGaps: a gap over 5 × the run's median (10 ms) is
// marked thick in vermillion over its own stretch of the request's bar,
// and keyed; a run with no such gap draws none; an SLO's ITL objective
// replaces the rule.
func TestTimelineSlowGaps(t *testing.T) {
	page := render(t, gapDoc(20, map[int][]int{3: {5}}), Options{})
	svg := timelineSVG(t, page)
	marks := strokes(t, svg, slowColor)
	if len(marks) != 2 {
		t.Fatalf("%d vermillion strokes, want the one slow gap's and the legend's", len(marks))
	}
	m := marks[0]
	if !strings.Contains(m.style, "stroke-width:2.5") {
		t.Errorf("the slow gap's mark is not drawn thick: %s", m.style)
	}
	var bar *strokePath
	for _, b := range strokes(t, svg, streamColor) {
		if b.y0 == m.y0 {
			bar = &b
		}
	}
	if bar == nil {
		t.Fatalf("no answer bar on the slow mark's row %v", m.y0)
	}
	// The gap is the 6th: it starts 50 ms into the 150 ms bar and lasts
	// 60 ms, 0.4 of it.
	length := bar.x1 - bar.x0
	if got := (m.x0 - bar.x0) / length; math.Abs(got-50.0/150) > 0.02 {
		t.Errorf("the mark starts %.3f of the way along its bar, want %.3f", got, 50.0/150)
	}
	if got := (m.x1 - m.x0) / length; math.Abs(got-0.4) > 0.02 {
		t.Errorf("the mark spans %.3f of its bar, want 0.4", got)
	}
	for _, want := range []string{">inter-token gap over 50.00 ms<", "5 × the run&#39;s median inter-token gap, 10.00 ms", "on 1 of the requests drawn"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	even := render(t, gapDoc(20, nil), Options{})
	if n := len(strokes(t, timelineSVG(t, even), slowColor)); n != 0 || !strings.Contains(even, "No inter-token gap over 50.00 ms") {
		t.Errorf("a run without slow gaps draws %d vermillion strokes or does not say it has none", n)
	}
	// Every gap of 10 ms is over an objective of 5 ms: each successful
	// request gets one stretch, its whole stream.
	slo := render(t, gapDoc(20, nil), Options{SLO: timing.SLO{ITL: 5 * time.Millisecond}})
	if n := len(strokes(t, timelineSVG(t, slo), slowColor)); n != 18+1 || !strings.Contains(slo, "the SLO&#39;s ITL objective") {
		t.Errorf("with an ITL objective of 5 ms: %d vermillion strokes, want 18 and the legend's", n)
	}
}

// TestSlowSpans: consecutive slow gaps are one stretch; a request with
// more stretches than maxSlowSpans keeps its longest.
func TestSlowSpans(t *testing.T) {
	ttft := 1.0
	r := benchkit.Request{SendOffsetS: 2, TTFTS: &ttft, ITLS: []float64{0.1, 0.5, 0.5, 0.1, 0.6}}
	got := slowSpans(r, 0.2)
	want := [][2]float64{{3.1, 4.1}, {4.2, 4.8}}
	if len(got) != len(want) {
		t.Fatalf("spans %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i][0]-want[i][0]) > 1e-9 || math.Abs(got[i][1]-want[i][1]) > 1e-9 {
			t.Errorf("span %d: %v, want %v", i, got[i], want[i])
		}
	}
	var gaps []float64
	for i := range 2 * maxSlowSpans {
		gaps = append(gaps, 0.01, 1+float64(i)/10)
	}
	r.ITLS = gaps
	spans := slowSpans(r, 0.5)
	if len(spans) != maxSlowSpans {
		t.Fatalf("%d spans, want %d", len(spans), maxSlowSpans)
	}
	for _, s := range spans {
		if s[1]-s[0] < 1+float64(maxSlowSpans)/10-1e-9 {
			t.Errorf("kept a stretch of %.2f s, not among the %d longest", s[1]-s[0], maxSlowSpans)
		}
	}
	if slowSpans(r, 0) != nil {
		t.Error("no threshold marked spans")
	}
}

// TestTimelineColours: every colour of the timeline keeps a contrast of
// at least 3:1 against white (WCAG's for graphics), and any two stay
// apart (CIELAB distance of at least 20) for a reader with normal vision,
// protanopia, deuteranopia or tritanopia, simulated with Machado, Oliveira
// and Fernandes' (2009) matrices at full severity.
func TestTimelineColours(t *testing.T) {
	named := map[string]color.RGBA{"wait": waitColor, "reasoning": thinkColor, "answer": streamColor, "slow gap": slowColor, "failed": failColor}
	for n, c := range named {
		if r := contrast(c); r < 3 {
			t.Errorf("%s %s: contrast %.2f against white, want ≥ 3", n, hexOf(c), r)
		}
	}
	sims := map[string][3][3]float64{
		"normal":       {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}},
		"protanopia":   {{0.152286, 1.052583, -0.204868}, {0.114503, 0.786281, 0.099216}, {-0.003882, -0.048116, 1.051998}},
		"deuteranopia": {{0.367322, 0.860646, -0.227968}, {0.280085, 0.672501, 0.047413}, {-0.011820, 0.042940, 0.968881}},
		"tritanopia":   {{1.255528, -0.076749, -0.178779}, {-0.078411, 0.930809, 0.147602}, {0.004733, 0.691367, 0.303900}},
	}
	for sn, m := range sims {
		for a, ca := range named {
			for b, cb := range named {
				if a >= b {
					continue
				}
				if d := labDistance(simulate(ca, m), simulate(cb, m)); d < 20 {
					t.Errorf("%s: %s %s and %s %s are %.1f apart, want ≥ 20", sn, a, hexOf(ca), b, hexOf(cb), d)
				}
			}
		}
	}
	// The checks tell a pair that fails them.
	if contrast(color.RGBA{R: 0xe6, G: 0x9f, A: 0xff}) >= 3 {
		t.Error("Okabe and Ito's orange passes a contrast it fails")
	}
	red, green := color.RGBA{R: 0xd0, G: 0x30, B: 0x30, A: 0xff}, color.RGBA{R: 0x40, G: 0x90, B: 0x20, A: 0xff}
	if d := labDistance(simulate(red, sims["deuteranopia"]), simulate(green, sims["deuteranopia"])); d >= 20 {
		t.Errorf("red and green are %.1f apart for a deuteranope: the check tells nothing", d)
	}
}

// linear is an sRGB channel as linear light.
func linear(v uint8) float64 {
	c := float64(v) / 255
	if c <= 0.04045 {
		return c / 12.92
	}
	return math.Pow((c+0.055)/1.055, 2.4)
}

// contrast is c's contrast ratio against white (WCAG 2).
func contrast(c color.RGBA) float64 {
	l := 0.2126*linear(c.R) + 0.7152*linear(c.G) + 0.0722*linear(c.B)
	return 1.05 / (l + 0.05)
}

// simulate is c's linear RGB as m makes it.
func simulate(c color.RGBA, m [3][3]float64) [3]float64 {
	in := [3]float64{linear(c.R), linear(c.G), linear(c.B)}
	var out [3]float64
	for i := range out {
		for j := range in {
			out[i] += m[i][j] * in[j]
		}
		out[i] = min(1, max(0, out[i]))
	}
	return out
}

// labDistance is the CIELAB (D65) distance of two linear RGB colours.
func labDistance(a, b [3]float64) float64 {
	la, lb := lab(a), lab(b)
	return math.Sqrt((la[0]-lb[0])*(la[0]-lb[0]) + (la[1]-lb[1])*(la[1]-lb[1]) + (la[2]-lb[2])*(la[2]-lb[2]))
}

func lab(c [3]float64) [3]float64 {
	x := (0.4124*c[0] + 0.3576*c[1] + 0.1805*c[2]) / 0.95047
	y := 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
	z := (0.0193*c[0] + 0.1192*c[1] + 0.9505*c[2]) / 1.08883
	f := func(t float64) float64 {
		if t > 216.0/24389 {
			return math.Cbrt(t)
		}
		return (24389.0/27*t + 16) / 116
	}
	return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
}

// TestLargeMarkedPageSize: the worst case for size, 2,000 requests each
// reasoning with the most slow stretches marked, stays under 2 MB.
func TestLargeMarkedPageSize(t *testing.T) {
	slow := map[int][]int{}
	for i := range 2000 {
		slow[i] = []int{1, 3, 5, 7, 9, 11, 13}
	}
	doc := gapDoc(2000, slow)
	for i := range doc.Requests {
		if r := &doc.Requests[i]; !r.Failed() {
			ttfa := *r.TTFTS + 0.02
			r.TTFAS = &ttfa
		}
	}
	page := render(t, doc, Options{})
	if len(page) >= 2<<20 {
		t.Errorf("page of 2,000 marked requests is %d bytes, over 2 MB", len(page))
	}
	t.Logf("page of 2,000 marked requests: %d bytes", len(page))
}

// TestTimelineUnstreamed: requests with no first token (not streamed)
// are drawn whole, and the legend says so instead of naming a first token
// none of them has.
func TestTimelineUnstreamed(t *testing.T) {
	reqs := make([]benchkit.Request, 5)
	for i := range reqs {
		e2e := 0.1
		reqs[i] = benchkit.Request{Index: i, SendOffsetS: float64(i) * 0.01, DoneS: float64(i)*0.01 + e2e, E2ES: &e2e}
	}
	f, err := timelineFigure(reqs, 100)
	if err != nil || f == nil {
		t.Fatalf("figure %v, error %v", f, err)
	}
	svg := string(f.SVG)
	if strings.Contains(svg, ">send to first token<") || strings.Contains(svg, ">first token to end<") || !strings.Contains(svg, ">send to end<") {
		t.Error("an unstreamed run's legend names a first token, or not the whole bar")
	}
	reqs[0].TTFTS = new(0.02)
	if f, _ = timelineFigure(reqs, 100); !strings.Contains(string(f.SVG), ">send to first token<") {
		t.Error("a streamed request's first token is not in the legend")
	}
}
