package report

import (
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/capacity"
)

// sweepDoc is a sweep over rates 1 to 64 requests/s whose latency rises
// from 10 ms to 10 s, with a capacity search's knee and capacity.
func sweepDoc() benchkit.LoadDocument {
	var runs []benchkit.LoadRun
	lat := 0.01
	for rate := 1.0; rate <= 64; rate *= 2 {
		r, p50, p99 := rate, lat, lat*2
		q := benchkit.Quantiles{N: 20, P50: &p50, P99: &p99}
		runs = append(runs, benchkit.LoadRun{Summary: benchkit.Summary{Traffic: "poisson", RequestRate: &r, TTFT: q, E2E: q}})
		lat *= 3
	}
	doc := benchkit.NewLoadDocument(benchkit.LoadMeta{RunInfo: benchkit.RunInfo{Model: "m", Simulated: true}}, runs, nil)
	doc.Capacity = &capacity.Result{
		Knee:     capacity.Interval{Status: "bracketed", Rate: 12, Lo: 8, Hi: 16},
		Capacity: capacity.Interval{Status: "bracketed", Rate: 6, Lo: 4, Hi: 8},
	}
	return doc
}

// TestSweepPage: a sweep's page draws the latency against the rate with
// the knee and the capacity marked and named, and lists them.
func TestSweepPage(t *testing.T) {
	doc := sweepDoc()
	page := render(t, doc, Options{})
	checkPage(t, page)
	if err := checkOffline(page); err != nil {
		t.Error(err)
	}
	knee, capa := doc.Capacity.Knee.String(), doc.Capacity.Capacity.String()
	for _, want := range []string{`aria-label="SIMULATED: Latency against offered rate"`, "knee: " + knee, "capacity at the SLO: " + capa, "the knee (" + knee + ")"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// The legend keys the marks inside the plot.
	if svg := page[strings.Index(page, "<svg"):strings.Index(page, "</svg>")]; !strings.Contains(svg, ">knee ") || !strings.Contains(svg, ">capacity ") {
		t.Error("the rate plot does not key the knee and the capacity")
	}
}

// FuzzEscaped renders a page whose model name, warning and error are
// arbitrary: the page's markup is the same as a plain name's (every '<'
// of the strings escaped), so no string can open an element.
func FuzzEscaped(f *testing.F) {
	for _, s := range []string{"plain", "<script>alert(1)</script>", `"><svg onload=alert(1)>`, "</title><script>", "<!--", "]]>", "\x00<"} {
		f.Add(s)
	}
	base := func(s string) benchkit.LoadDocument {
		doc := loadDoc(10)
		doc.Meta.Model, doc.Meta.Warnings = s, []string{s}
		doc.Summary.Warnings = []string{s}
		for i := range doc.Requests {
			if doc.Requests[i].Failed() {
				doc.Requests[i].Error = s
			}
		}
		return doc
	}
	want := strings.Count(render(f, base("plain"), Options{MaxTimeline: -1}), "<")
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			t.Skip("an empty error is no failure: the page has no errors table")
		}
		if got := strings.Count(render(t, base(s), Options{MaxTimeline: -1}), "<"); got != want {
			t.Errorf("a string changed the page's markup: %d '<', want %d: %q", got, want, s)
		}
	})
}
