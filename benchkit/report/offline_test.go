package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/timing"
)

// offlineDoc is an offline batch of n requests released at once, not
// streamed: only their end-to-end times are known; every tenth fails.
func offlineDoc(n int) benchkit.LoadDocument {
	reqs := make([]benchkit.Request, n)
	for i := range reqs {
		send, e2e := float64(i)*1e-4, 0.1+float64(i)*0.01
		reqs[i] = benchkit.Request{Index: i, SendOffsetS: send, DoneS: send + e2e, E2ES: &e2e, PPTokens: 100, CompletionTokens: new(i + 1)}
		if i%10 == 9 {
			reqs[i].Error, reqs[i].E2ES, reqs[i].CompletionTokens = "upstream said "+hostile, nil, nil
		}
	}
	s := benchkit.Summarize(reqs, benchkit.ByRun, timing.SLO{})[0]
	s.Traffic, s.Scheduled = fmt.Sprintf("burst(n=%d)", n), n
	out, total, rps := 1234.5, 5678.9, 12.34
	s.OutputThroughput, s.TotalThroughput, s.RequestThroughput = &out, &total, &rps
	s.Warnings = []string{"batch warning " + hostile}
	meta := benchkit.LoadMeta{RunInfo: benchkit.RunInfo{Engine: "openai", Model: hostile, BaseURL: "http://127.0.0.1:1/" + hostile,
		Warnings: []string{"meta warning " + hostile}, Provenance: &benchkit.Provenance{Command: []string{"offline", "--model", hostile}, Nonce: "n0nce"}},
		Workload: benchkit.Lengths{InputMin: 100, InputMax: 512, OutputMin: 16, OutputMax: 128, Seed: 3}, Traffic: benchkit.Traffic{Burst: n}}
	return benchkit.NewLoadDocument(meta, []benchkit.LoadRun{{Summary: s, Requests: reqs}}, nil)
}

func renderOffline(t testing.TB, doc benchkit.LoadDocument, opts Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteOffline(&b, doc, opts); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// dataKeys reads a page's figures by their data-keys, as a browser test
// reads them from the DOM.
func dataKeys(t testing.TB, page string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`<td class="num" data-key="([^"]+)">([^<]*)</td>`).FindAllStringSubmatch(page, -1) {
		if _, dup := out[m[1]]; dup {
			t.Errorf("data-key %q is on the page twice", m[1])
		}
		out[m[1]] = m[2]
	}
	return out
}

// TestOfflinePage: the page says what it shows, fetches nothing, is well
// formed, and shows the document's figures under their data-keys.
func TestOfflinePage(t *testing.T) {
	doc := offlineDoc(40)
	page := renderOffline(t, doc, Options{})
	checkPage(t, page)
	if err := checkOffline(page); err != nil {
		t.Error(err)
	}
	s := doc.Summary
	want := map[string]string{
		"output_throughput":  num(*s.OutputThroughput, 1),
		"total_throughput":   num(*s.TotalThroughput, 1),
		"request_throughput": num(*s.RequestThroughput, 2),
		"duration_s":         num(s.DurationS, 3),
		"e2e.n":              "36",
		"e2e.p50":            withCI(s.E2E.P50, s.E2E.P50CI),
		"e2e.mean":           withCI(s.E2E.Mean, s.E2E.MeanCI),
		"e2e.max":            FormatMS(*s.E2E.Max),
		"schedule_lag.n":     "36",
	}
	got := dataKeys(t, page)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("data-key %s = %q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["ttft.p50"]; ok {
		t.Error("an unstreamed batch shows a TTFT")
	}
	for _, w := range []string{"Offline batch: the run", "have no interval", "Not measured: TTFT, TPOT, ITL (the requests were not streamed",
		"input 100–512 and output 16–128 tokens", "All 40 requests.", "Errors of the failed requests"} {
		if !strings.Contains(page, w) {
			t.Errorf("page lacks %q", w)
		}
	}
}

// TestOfflineHostileInert: a model name, target, command, warnings and
// errors carrying markup come out as text.
func TestOfflineHostileInert(t *testing.T) {
	page := renderOffline(t, offlineDoc(20), Options{})
	for _, bad := range []string{"<script", "<img"} {
		if strings.Contains(page, bad) {
			t.Errorf("page holds %q unescaped", bad)
		}
	}
	for _, want := range []string{"Offline batch of &lt;script&gt;alert(1)&lt;/script&gt;", "meta warning &lt;script&gt;", "batch warning &lt;script&gt;", "upstream said &lt;script&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks the escaped text %q", want)
		}
	}
}

// TestOfflineOneRun: a document of several runs is no offline batch.
func TestOfflineOneRun(t *testing.T) {
	doc := offlineDoc(10)
	two := benchkit.NewLoadDocument(doc.Meta, []benchkit.LoadRun{doc.AllRuns()[0], doc.AllRuns()[0]}, nil)
	if err := WriteOffline(&bytes.Buffer{}, two, Options{}); err == nil || !strings.Contains(err.Error(), "holds 2") {
		t.Errorf("two runs: %v, want an error naming them", err)
	}
}

// TestOfflineLargePageSize: the page of a 2,000-request batch weighs
// under 2 MB; a timeline past Options.MaxTimeline says how it was thinned.
func TestOfflineLargePageSize(t *testing.T) {
	page := renderOffline(t, offlineDoc(2000), Options{})
	if len(page) >= 2<<20 {
		t.Errorf("page of 2,000 requests is %d bytes, over 2 MB", len(page))
	}
	if page := renderOffline(t, offlineDoc(100), Options{MaxTimeline: 30}); !strings.Contains(page, "25 of 100 requests drawn: one in every 4 in send order") {
		t.Error("a thinned timeline does not say how it was thinned")
	}
}
