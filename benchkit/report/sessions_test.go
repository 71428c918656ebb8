package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
)

// sessionsDoc is two runs (prefix cache radix, then naive) of 4 sessions
// of 3 turns each, turn t of session s sent at s×0.01 + (t−1)×0.3 s; the
// radix run's TTFT stays near 20 ms, the naive run's grows with the turn.
// Turn 2's p50 has an interval, the others none; the last turn of the
// naive run's last session failed with an error that is markup.
func sessionsDoc() benchkit.SessionsDocument {
	doc := benchkit.SessionsDocument{Meta: benchkit.SessionsMeta{
		RunInfo: benchkit.RunInfo{Engine: "sim", Model: hostile, Simulated: true, Preset: "fast",
			Warnings: []string{"meta warning " + hostile}, Provenance: &benchkit.Provenance{Command: []string{"multi-turn", "--model", hostile}, Nonce: "n0nce"}},
		Sessions: benchkit.SessionsSettings{Count: 4, Turns: 3, UserTokens: 40, Output: 4, Seed: 1, Stream: true, ThinkS: 0.5},
	}}
	for i, mode := range []string{"radix", "naive"} {
		run := benchkit.SessionsRun{PrefixCache: mode}
		var all []float64
		for turn := 1; turn <= 3; turn++ {
			ttft := 0.02 * (1 + float64(i*(turn-1)))
			e2e := ttft + 0.05
			hit, theo := 0.1*float64(turn)*float64(1-i), 0.3*float64(turn)
			s := benchkit.Summary{Requests: 4, Completed: 4, TotalInputTokens: 160 * turn, CachedTokens: (1 - i) * 50 * turn,
				PrefixHitRate: &hit, TheoreticalHitRate: &theo,
				TTFT: benchkit.Quantiles{N: 4, P50: &ttft}, E2E: benchkit.Quantiles{N: 4, P50: &e2e}}
			if turn == 2 {
				s.TTFT.P50CI = &[2]float64{ttft * 0.9, ttft * 1.2}
			}
			for sess := range 4 {
				send := float64(sess)*0.01 + float64(turn-1)*0.3
				r := benchkit.Request{Index: len(run.Requests), Session: fmt.Sprint(sess), Turn: turn, SendOffsetS: send, DoneS: send + e2e, TTFTS: &ttft, E2ES: &e2e}
				if i == 1 && turn == 3 && sess == 3 {
					r.Error, r.TTFTS, r.E2ES = `upstream said <img src=x onerror=alert(2)>`, nil, nil
					s.Completed, s.Failed = 3, 1
				}
				run.Requests = append(run.Requests, r)
			}
			all = append(all, ttft)
			run.Turns = append(run.Turns, benchkit.TurnSummary{Turn: turn, Summary: s})
		}
		mean, p50 := (all[0]+all[1]+all[2])/3, all[1]
		out := 120.0
		run.Summary = benchkit.Summary{Requests: 12, Completed: 12 - i, Failed: i, DurationS: 0.9, PeakInFlight: 4,
			TotalInputTokens: 960, TotalOutputTokens: 48, CachedTokens: (1 - i) * 300, OutputThroughput: &out,
			TTFT:     benchkit.Quantiles{N: 12 - i, Mean: &mean, MeanCI: &[2]float64{mean * 0.8, mean * 1.2}, P50: &p50},
			Warnings: []string{"run warning " + hostile}}
		doc.Runs = append(doc.Runs, run)
	}
	return doc
}

func renderSessions(t testing.TB, doc benchkit.SessionsDocument, opts Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSessions(&b, doc, opts); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The page's formats, written out here from their definitions.
func msText(v *float64) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprintf("%.2f", *v*1000)
}

func ciText(v *float64, ci *[2]float64) string {
	switch {
	case v == nil:
		return "none"
	case ci == nil:
		return msText(v) + " [interval: none]"
	}
	return fmt.Sprintf("%.2f [%.2f, %.2f]", *v*1000, ci[0]*1000, ci[1]*1000)
}

func pctText(v *float64) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprintf("%.1f", *v*100)
}

// latencyWant are the keys and texts of a latency table of s.
func latencyWant(want map[string]string, s benchkit.Summary, prefix string) {
	for name, q := range map[string]benchkit.Quantiles{"ttft": s.TTFT, "tpot": s.TPOT, "itl": s.ITL, "e2e": s.E2E} {
		k := prefix + name + "."
		want[k+"n"], want[k+"mean"], want[k+"p50"] = fmt.Sprint(q.N), ciText(q.Mean, q.MeanCI), ciText(q.P50, q.P50CI)
		want[k+"p90"], want[k+"p99"], want[k+"max"] = ciText(q.P90, q.P90CI), ciText(q.P99, q.P99CI), msText(q.Max)
	}
}

// sessionsWant are the figures a sessions page must show, by data-key,
// from the document.
func sessionsWant(doc benchkit.SessionsDocument) map[string]string {
	want := map[string]string{}
	for i, r := range doc.Runs {
		s, k := r.Summary, fmt.Sprintf("run%d.", i)
		out := "none"
		if s.OutputThroughput != nil {
			out = fmt.Sprintf("%.1f", *s.OutputThroughput)
		}
		for key, v := range map[string]string{"requests": fmt.Sprint(s.Requests), "completed": fmt.Sprint(s.Completed), "failed": fmt.Sprint(s.Failed),
			"duration_s":         fmt.Sprintf("%.1f", s.DurationS),
			"total_input_tokens": fmt.Sprint(s.TotalInputTokens), "total_output_tokens": fmt.Sprint(s.TotalOutputTokens),
			"cached_tokens": fmt.Sprint(s.CachedTokens), "prefix_hit_rate": pctText(s.PrefixHitRate),
			"theoretical_prefix_hit_rate": pctText(s.TheoreticalHitRate), "output_throughput": out} {
			want[k+key] = v
		}
		latencyWant(want, s, k)
		for _, ts := range r.Turns {
			tk := fmt.Sprintf("%sturn%d.", k, ts.Turn)
			want[tk+"requests"], want[tk+"completed"] = fmt.Sprint(ts.Requests), fmt.Sprint(ts.Completed)
			want[tk+"ttft.p50"], want[tk+"tpot.p50"], want[tk+"e2e.p50"] = ciText(ts.TTFT.P50, ts.TTFT.P50CI), ciText(ts.TPOT.P50, ts.TPOT.P50CI), ciText(ts.E2E.P50, ts.E2E.P50CI)
			want[tk+"total_input_tokens"], want[tk+"cached_tokens"] = fmt.Sprint(ts.TotalInputTokens), fmt.Sprint(ts.CachedTokens)
			want[tk+"prefix_hit_rate"], want[tk+"theoretical_prefix_hit_rate"] = pctText(ts.PrefixHitRate), pctText(ts.TheoreticalHitRate)
		}
	}
	return want
}

// compareKeys checks that the page shows exactly the figures of want, by
// data-key.
func compareKeys(t *testing.T, page string, want map[string]string) {
	t.Helper()
	got := dataKeys(t, page)
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("page lacks data-key %q (want %q)", k, w)
		} else if g != w {
			t.Errorf("data-key %q: page shows %q, the document %q", k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("page has data-key %q, which names no figure of the document", k)
		}
	}
}

// TestSessionsPage: the page of two runs of sessions is well formed,
// fetches nothing, shows every figure of the document under its data-key,
// states the settings, and draws TTFT by turn with a line per run.
func TestSessionsPage(t *testing.T) {
	doc := sessionsDoc()
	page := renderSessions(t, doc, Options{})
	checkPage(t, page)
	if err := checkOffline(page); err != nil {
		t.Error(err)
	}
	compareKeys(t, page, sessionsWant(doc))
	for _, want := range []string{"SIMULATED", "Multi-turn sessions", "Turns per session</th><td>3<", "run 1: radix (the embedded engine&#39;s); run 2: naive",
		"run 1: no thinking control", `aria-label="SIMULATED: TTFT by turn"`, "run 1: prefix cache radix, run 2: prefix cache naive",
		"Per-request timeline: every turn of every session. All 12 requests.", "0.5 s before every turn after the first"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Turn 2's p50 has an interval: the plot draws it.
	if !strings.Contains(page, "a vertical bar is a median&#39;s 95 % confidence interval") {
		t.Error("the plot does not say it draws the p50's intervals")
	}
	doc.Meta.Predicted = true
	if page := renderSessions(t, doc, Options{MaxTimeline: -1}); !strings.Contains(page, "PREDICTED:") || strings.Contains(page, "Per-request timeline") {
		t.Error("a predicted run without timelines: banner missing or timeline drawn")
	}
}

// TestSessionsHostile: a model name, warnings, errors, a cache label and
// a thinking setting made of markup come out as text, and a label that
// is not a plain word stays off the plot.
func TestSessionsHostile(t *testing.T) {
	doc := sessionsDoc()
	doc.Runs[1].PrefixCache = hostile
	doc.Runs[1].Summary.Thinking = hostile
	page := renderSessions(t, doc, Options{})
	for _, bad := range []string{"<script", "<img"} {
		if i := strings.Index(page, bad); i >= 0 {
			t.Errorf("page holds %q unescaped near %q", bad, page[max(0, i-80):min(len(page), i+80)])
		}
	}
	for _, want := range []string{"Multi-turn sessions of &lt;script&gt;alert(1)&lt;/script&gt;", "meta warning &lt;script&gt;", "run warning &lt;script&gt;",
		"upstream said &lt;img src=x onerror=alert(2)&gt;", "thinking &lt;script&gt;", "run 2: &lt;script&gt;alert(1)&lt;/script&gt; (the embedded"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks the escaped text %q", want)
		}
	}
	svg := page[strings.Index(page, "<svg"):strings.Index(page, "</svg>")]
	if strings.Contains(svg, "script") || !strings.Contains(svg, ">run 2<") {
		t.Error("the plot names a run by a label that is not a plain word")
	}
}

// TestSessionsEmpty: a document without runs still makes a page that says
// so.
func TestSessionsEmpty(t *testing.T) {
	doc := sessionsDoc()
	doc.Runs = nil
	page := renderSessions(t, doc, Options{})
	if !strings.Contains(page, "No run of the sessions was measured.") || checkOffline(page) != nil {
		t.Error("an empty document's page does not say it has no run")
	}
}

// FuzzSessionsEscaped renders a sessions page whose model, warnings,
// errors, cache label and thinking setting are arbitrary: the page's
// markup is the same as a plain string's, so no string can open an
// element.
func FuzzSessionsEscaped(f *testing.F) {
	for _, s := range []string{"plain", "radix", "<script>alert(1)</script>", `"><svg onload=alert(1)>`, "</title><script>", "<!--", "]]>", "\x00<"} {
		f.Add(s)
	}
	base := func(s string) benchkit.SessionsDocument {
		doc := sessionsDoc()
		doc.Meta.Model, doc.Meta.Warnings = s, []string{s}
		for i := range doc.Runs {
			r := &doc.Runs[i]
			r.PrefixCache, r.Summary.Thinking, r.Summary.Warnings = s, s, []string{s}
			for j := range r.Requests {
				if r.Requests[j].Failed() {
					r.Requests[j].Error = s
				}
			}
		}
		return doc
	}
	want := strings.Count(renderSessions(f, base("plain"), Options{}), "<")
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			t.Skip("an empty error is no failure: the page has no errors table")
		}
		if got := strings.Count(renderSessions(t, base(s), Options{}), "<"); got != want {
			t.Errorf("a string changed the page's markup: %d '<', want %d: %q", got, want, s)
		}
	})
}
