package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
)

// qwenDoc is a replay of n rows at scales 0.5 and 1: each scale's load
// document (loadDoc's requests and summary, with an ITL, a throughput and
// the hit rates) and mini-sglang's figures for the first scale only; the
// trace, model, warnings and errors carry markup.
func qwenDoc(n int) QwenDocument {
	doc := QwenDocument{Program: "bench-qwen", Trace: "/data/" + hostile + ".jsonl", Rows: n, Scales: []float64{0.5, 1}, LeadInS: 1}
	for i, scale := range doc.Scales {
		ld := loadDoc(n)
		s := ld.Summary
		itl, lo, hi := 0.004*scale, 0.0039*scale, 0.0041*scale
		out, rps, lag, hit, theo := 900.0/scale, 9.5/scale, 0.002, 0.25, 0.3
		s.ITL = benchkit.Quantiles{N: 50 * n, Mean: &itl, MeanCI: &[2]float64{lo, hi}, P90: &hi}
		s.OutputThroughput, s.RequestThroughput, s.ScheduleLag.P99 = &out, &rps, &lag
		s.PrefixHitRate, s.TheoreticalHitRate, s.DurationS, s.PeakInFlight, s.TotalOutputTokens = &hit, &theo, 4.25, 21, 50*n
		ld.Meta.Stream, ld.Meta.Simulated = true, true
		sc := QwenScale{Scale: scale, Load: ld}
		if i == 0 {
			sc.Mini = &MiniSGLang{Requests: n - n/10, Tokens: 52 * (n - n/10), DurationS: 4.1, TokensPS: 1234.56, ReqPS: 8.765, LeftOut: n / 10,
				TTFTms: MiniSGLangDist{Avg: 48.123, P50: 47.5, P90: 52.25, P99: 60.125, Max: 61},
				TPOTms: MiniSGLangDist{Avg: 3.9, P50: 3.875, P90: 4.5, P99: 5.25, Max: 9},
				E2Es:   MiniSGLangDist{Avg: 0.2, P50: 0.19875, P90: 0.22, P99: 0.25, Max: 0.31}}
		}
		doc.Runs = append(doc.Runs, sc)
	}
	return doc
}

func renderQwen(t testing.TB, doc QwenDocument, opts Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteQwen(&b, doc, opts); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// qwenWant are the figures a bench-qwen page must show, by data-key, from
// the document.
func qwenWant(doc QwenDocument) map[string]string {
	want := map[string]string{}
	f := func(v float64, prec int) string { return fmt.Sprintf("%.*f", prec, v) }
	fp := func(v *float64, prec int) string {
		if v == nil {
			return "none"
		}
		return f(*v, prec)
	}
	for i, r := range doc.Runs {
		s, k := *r.Load.Summary, fmt.Sprintf("scale%d.", i)
		o, mk := "overview."+k, k+"minisglang."
		for key, v := range map[string]string{"requests": fmt.Sprint(s.Requests), "completed": fmt.Sprint(s.Completed), "failed": fmt.Sprint(s.Failed),
			"peak_in_flight": fmt.Sprint(s.PeakInFlight), "schedule_lag.p99": msText(s.ScheduleLag.P99), "prefix_hit_rate": pctText(s.PrefixHitRate),
			"theoretical_prefix_hit_rate": pctText(s.TheoreticalHitRate), "output_throughput": fp(s.OutputThroughput, 1),
			"request_throughput": fp(s.RequestThroughput, 2), "total_output_tokens": fmt.Sprint(s.TotalOutputTokens), "duration_s": f(s.DurationS, 2)} {
			want[k+key] = v
		}
		latencyWant(want, s, k)
		if len(doc.Runs) > 1 {
			want[o+"ttft.p50"], want[o+"ttft.p90"] = ciText(s.TTFT.P50, s.TTFT.P50CI), ciText(s.TTFT.P90, s.TTFT.P90CI)
			want[o+"itl.mean"], want[o+"itl.p90"] = ciText(s.ITL.Mean, s.ITL.MeanCI), ciText(s.ITL.P90, s.ITL.P90CI)
			want[o+"output_throughput"], want[o+"request_throughput"] = fp(s.OutputThroughput, 1), fp(s.RequestThroughput, 2)
			for _, key := range []string{"ttft.p50", "ttft.p90", "tpot.avg", "tpot.p90", "token_per_s", "req_per_s"} {
				want[o+"minisglang."+key] = "none"
			}
		}
		m := r.Mini
		if m == nil {
			continue
		}
		for name, d := range map[string]MiniSGLangDist{"ttft": m.TTFTms, "tpot": m.TPOTms, "e2e": m.E2Es} {
			unit := 1.0
			if name == "e2e" {
				unit = 1000 // s in the JSON, ms on the page
			}
			for stat, v := range map[string]float64{"avg": d.Avg, "p50": d.P50, "p90": d.P90, "p99": d.P99, "max": d.Max} {
				want[mk+name+"."+stat] = f(v*unit, 2)
			}
		}
		want[mk+"token_per_s"], want[mk+"req_per_s"], want[mk+"num_tokens"], want[mk+"duration_s"] = f(m.TokensPS, 1), f(m.ReqPS, 2), fmt.Sprint(m.Tokens), f(m.DurationS, 2)
		if len(doc.Runs) > 1 {
			om := o + "minisglang."
			want[om+"ttft.p50"], want[om+"ttft.p90"], want[om+"tpot.avg"], want[om+"tpot.p90"] = f(m.TTFTms.P50, 2), f(m.TTFTms.P90, 2), f(m.TPOTms.Avg, 2), f(m.TPOTms.P90, 2)
			want[om+"token_per_s"], want[om+"req_per_s"] = f(m.TokensPS, 1), f(m.ReqPS, 2)
		}
	}
	return want
}

// TestQwenPage: bench-qwen's page is well formed, fetches nothing, shows
// every figure of the document under its data-key (mini-sglang's E2E in
// ms), keeps the note that the ITL's interval is too narrow, says why the
// two sides differ, and draws each scale's timeline.
func TestQwenPage(t *testing.T) {
	doc := qwenDoc(40)
	page := renderQwen(t, doc, Options{})
	checkPage(t, page)
	if err := checkOffline(page); err != nil {
		t.Error(err)
	}
	compareKeys(t, page, qwenWant(doc))
	for _, want := range []string{"SIMULATED", "Every scale", "Why mini-sglang", "so they are too narrow", "Scale 0.5", "Scale 1",
		"Per-request timeline of scale 0.5. All 40 requests.", "mini-sglang&#39;s figures leave out 4 requests",
		"mini-sglang&#39;s figures: none", "0.5, 1, each in turn: a row goes at the scale&#39;s start &#43; 1 s", "Scales measured</th><td>2 of 2<"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(page, "so they are too narrow"); n != 3 {
		t.Errorf("the ITL note is on the page %d times; want under the overview and each scale's table (3)", n)
	}
	// The timelines share the budget: 30 rows over two scales is 15 each
	// (each timeline says so in its caption and its description).
	if page := renderQwen(t, doc, Options{MaxTimeline: 30}); strings.Count(page, "14 of 40 requests drawn: one in every 3") != 4 {
		t.Error("the scales' timelines do not share the budget")
	}
}

// TestQwenOneScale: a document of one scale has no overview, and its
// figures are those of the scale alone.
func TestQwenOneScale(t *testing.T) {
	doc := qwenDoc(20)
	doc.Runs, doc.Scales = doc.Runs[:1], doc.Scales[:1]
	page := renderQwen(t, doc, Options{})
	checkPage(t, page)
	compareKeys(t, page, qwenWant(doc))
	if strings.Contains(page, "Every scale") {
		t.Error("a page of one scale has an overview")
	}
}

// TestQwenHostile: a trace name, a model, warnings and errors made of
// markup come out as text.
func TestQwenHostile(t *testing.T) {
	page := renderQwen(t, qwenDoc(20), Options{})
	for _, bad := range []string{"<script", "<img"} {
		if i := strings.Index(page, bad); i >= 0 {
			t.Errorf("page holds %q unescaped near %q", bad, page[max(0, i-80):min(len(page), i+80)])
		}
	}
	for _, want := range []string{"inferbench: &lt;script&gt;alert(1)&lt;/script&gt;, script&gt;.jsonl", "/data/&lt;script&gt;", "meta warning &lt;script&gt;",
		"run warning &lt;script&gt;", "upstream said &lt;img src=x onerror=alert(2)&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks the escaped text %q", want)
		}
	}
	if strings.Count(page, "meta warning") != 1 {
		t.Error("a warning every scale's meta repeats is shown more than once")
	}
}

// TestQwenEmpty: a document without a scale makes a page that says so.
func TestQwenEmpty(t *testing.T) {
	page := renderQwen(t, QwenDocument{Program: "bench-qwen", Scales: []float64{1}}, Options{})
	if !strings.Contains(page, "No scale was measured.") || checkOffline(page) != nil {
		t.Error("an empty document's page does not say it has no scale")
	}
}

// TestQwenLargePageSize: the page of the default run's size (six scales
// of 1,000 requests) weighs under 2 MB.
func TestQwenLargePageSize(t *testing.T) {
	doc := qwenDoc(1000)
	for len(doc.Runs) < 6 {
		doc.Runs = append(doc.Runs, doc.Runs[len(doc.Runs)%2])
	}
	if page := renderQwen(t, doc, Options{}); len(page) >= 2<<20 {
		t.Errorf("page of six scales of 1,000 requests is %d bytes, over 2 MB", len(page))
	}
}

// FuzzQwenEscaped renders a bench-qwen page whose model, trace, warnings
// and errors are arbitrary: the page's markup is the same as a plain
// string's.
func FuzzQwenEscaped(f *testing.F) {
	for _, s := range []string{"plain", "<script>alert(1)</script>", `"><svg onload=alert(1)>`, "</title><script>", "<!--", "]]>", "\x00<", `a\b/<c>`} {
		f.Add(s)
	}
	base := func(s string) QwenDocument {
		doc := qwenDoc(10)
		doc.Trace = s
		for i := range doc.Runs {
			ld := &doc.Runs[i].Load
			ld.Meta.Model, ld.Meta.Warnings, ld.Summary.Warnings = s, []string{s}, []string{s}
			for j := range ld.Requests {
				if ld.Requests[j].Failed() {
					ld.Requests[j].Error = s
				}
			}
		}
		return doc
	}
	want := strings.Count(renderQwen(f, base("plain"), Options{MaxTimeline: -1}), "<")
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			t.Skip("an empty error is no failure: the page has no errors table")
		}
		if got := strings.Count(renderQwen(t, base(s), Options{MaxTimeline: -1}), "<"); got != want {
			t.Errorf("a string changed the page's markup: %d '<', want %d: %q", got, want, s)
		}
	})
}
