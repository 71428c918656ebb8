package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
)

const hostile = `<script>alert(1)</script>`

// loadDoc is a single run of n requests, one every 10 ms, each taking
// 50 ms to its first token and 200 ms in all; every tenth fails.
func loadDoc(n int) benchkit.LoadDocument {
	reqs := make([]benchkit.Request, n)
	for i := range reqs {
		send := float64(i) * 0.01
		ttft, e2e := 0.05, 0.2
		reqs[i] = benchkit.Request{Index: i, SendOffsetS: send, IntendedSendS: send, DoneS: send + e2e, TTFTS: &ttft, E2ES: &e2e}
		if i%10 == 9 {
			reqs[i].Error = `upstream said <img src=x onerror=alert(2)>`
			reqs[i].TTFTS, reqs[i].E2ES = nil, nil
		}
	}
	p50, mean := 0.05, 0.06
	rate := 100.0
	sum := benchkit.Summary{Traffic: "rate 100/s", RequestRate: &rate, Requests: n, Scheduled: n, Completed: n - n/10, Failed: n / 10,
		TTFT:     benchkit.Quantiles{N: n, Mean: &mean, MeanCI: &[2]float64{0.055, 0.065}, P50: &p50, P50CI: &[2]float64{0.049, 0.051}},
		Warnings: []string{"run warning " + hostile}}
	meta := benchkit.LoadMeta{RunInfo: benchkit.RunInfo{Engine: "openai", Model: hostile, BaseURL: "http://127.0.0.1:1/" + hostile,
		Warnings: []string{"meta warning " + hostile}, Provenance: &benchkit.Provenance{Command: []string{"serve-load", "--model", hostile}, Nonce: "n0nce"}}}
	return benchkit.NewLoadDocument(meta, []benchkit.LoadRun{{Summary: sum, Requests: reqs}}, nil)
}

func render(t testing.TB, doc benchkit.LoadDocument, opts Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteLoad(&b, doc, opts); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestHostileStringsInert renders a document whose model name, target,
// command, warnings and errors carry markup: none of it comes out as
// markup, all of it comes out as text.
func TestHostileStringsInert(t *testing.T) {
	page := render(t, loadDoc(40), Options{})
	for _, bad := range []string{"<script", "<img"} {
		if i := strings.Index(page, bad); i >= 0 && !strings.Contains(page[max(0, i-5):i], "&") {
			t.Errorf("page holds %q unescaped near %q", bad, page[max(0, i-80):min(len(page), i+80)])
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "meta warning &lt;script&gt;", "run warning &lt;script&gt;", "upstream said &lt;img src=x onerror=alert(2)&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks the escaped text %q", want)
		}
	}
}

// netRef matches a reference that a browser would fetch from the network.
var netRef = regexp.MustCompile(`(?i)(\b(src|href|xlink:href|action|poster|data)\s*=\s*["']?\s*(https?:)?//)|url\(\s*["']?\s*(https?:)?//|@import|<script|<link|<iframe|<object|<embed`)

// CheckOffline returns an error naming the first thing in page that a
// browser would fetch or run.
func checkOffline(page string) error {
	if m := netRef.FindStringIndex(page); m != nil {
		return fmt.Errorf("page fetches or runs something: %q", page[max(0, m[0]-60):min(len(page), m[1]+60)])
	}
	return nil
}

// TestOfflineAndWellFormed: the page fetches nothing, runs nothing, its
// SVGs parse as XML with a title and a description, and its tables are
// real tables with header cells.
func TestOfflineAndWellFormed(t *testing.T) {
	if checkOffline(`<img src="https://x/y.png">`) == nil || checkOffline(`<link href=//cdn/x.css>`) == nil {
		t.Fatal("the offline check misses a network reference")
	}
	page := render(t, loadDoc(300), Options{})
	if err := checkOffline(page); err != nil {
		t.Error(err)
	}
	checkPage(t, page)
}

// checkPage checks the structure of a page: balanced elements, SVGs that
// parse with an accessible name, tables with header cells.
func checkPage(t *testing.T, page string) {
	t.Helper()
	if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.Contains(page, `<html lang="en">`) {
		t.Error("page lacks its doctype or language")
	}
	for _, tag := range []string{"table", "tr", "th", "td", "figure", "svg", "ul", "li", "h2", "title", "desc"} {
		open := len(regexp.MustCompile(`<`+tag+`[\s>]`).FindAllStringIndex(page, -1))
		closed := strings.Count(page, "</"+tag+">")
		if open != closed {
			t.Errorf("<%s>: %d opened, %d closed", tag, open, closed)
		}
	}
	svgs := regexp.MustCompile(`(?s)<svg.*?</svg>`).FindAllString(page, -1)
	if len(svgs) == 0 {
		t.Fatal("page has no plot")
	}
	for i, s := range svgs {
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
		if !strings.Contains(s[:strings.IndexByte(s, '>')], `aria-label="`) || !strings.Contains(s, "<title>") || !strings.Contains(s, "<desc>") {
			t.Errorf("svg %d has no accessible name or description", i)
		}
	}
	if !strings.Contains(page, `<th scope="col">p50 (ms) [interval]</th>`) {
		t.Error("latency table lacks its unit in the header")
	}
}

// TestIntervalsShown: each figure is printed with its interval, and
// "none" where the summary has none.
func TestIntervalsShown(t *testing.T) {
	page := render(t, loadDoc(40), Options{})
	row := regexp.MustCompile(`<tr><th scope="row">TTFT</th>.*?</tr>`).FindString(page)
	for _, want := range []string{">40<", "60.00 [55.00, 65.00]", "50.00 [49.00, 51.00]"} {
		if !strings.Contains(row, want) {
			t.Errorf("TTFT row lacks %q: %s", want, row)
		}
	}
	if !strings.Contains(page, "[interval: none]") && !strings.Contains(row, "none") {
		t.Errorf("no figure says its interval is none: %s", row)
	}
}

func TestThin(t *testing.T) {
	for _, c := range []struct{ n, limit, want, k int }{{0, 10, 0, 1}, {10, 10, 10, 1}, {11, 10, 6, 2}, {2500, 2000, 1250, 2}, {5000, 2000, 1667, 3}, {7, 0, 7, 1}} {
		idx, k := Thin(c.n, c.limit)
		if len(idx) != c.want || k != c.k {
			t.Errorf("Thin(%d, %d): %d rows, k %d; want %d, %d", c.n, c.limit, len(idx), k, c.want, c.k)
		}
		if c.limit > 0 && len(idx) > c.limit {
			t.Errorf("Thin(%d, %d) drew %d rows", c.n, c.limit, len(idx))
		}
	}
}

// TestTimelineThinned: a run past the limit says how it was thinned; a
// run within it draws every request.
func TestTimelineThinned(t *testing.T) {
	if page := render(t, loadDoc(50), Options{}); !strings.Contains(page, "All 50 requests.") {
		t.Error("a small run's timeline does not say it draws every request")
	}
	if page := render(t, loadDoc(50), Options{MaxTimeline: 20}); !strings.Contains(page, "17 of 50 requests drawn: one in every 3 in send order") {
		t.Error("a thinned timeline does not say how it was thinned")
	}
}

// TestLargePageSize: the page of a 2,000-request run weighs under 2 MB,
// as a page to mail must.
func TestLargePageSize(t *testing.T) {
	page := render(t, loadDoc(2000), Options{})
	if len(page) >= 2<<20 {
		t.Errorf("page of 2,000 requests is %d bytes, over 2 MB", len(page))
	}
	if err := checkOffline(page); err != nil {
		t.Error(err)
	}
}

// BenchmarkWriteLoad2000 renders the page of a 2,000-request run and
// reports its size and render time.
func BenchmarkWriteLoad2000(b *testing.B) {
	doc := loadDoc(2000)
	var size int
	start := time.Now()
	for b.Loop() {
		var buf bytes.Buffer
		if err := WriteLoad(&buf, doc, Options{}); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size), "page-bytes")
	b.ReportMetric(time.Since(start).Seconds()*1000/float64(b.N), "render-ms")
}
