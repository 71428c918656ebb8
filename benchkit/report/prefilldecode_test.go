package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/disagg"
)

// pdDoc is a disaggregation run over pp 2048 and 4096 (tg 64), three
// repeats of each phase; the disaggregated phase's TTFT is shorter. Its
// models, placements, warnings, a check's note and a failed request's
// error carry markup.
func pdDoc() disagg.Document {
	var reqs []benchkit.Request
	for _, pp := range []int{2048, 4096} {
		for pi, ph := range []string{disagg.PhasePrefillAlone, disagg.PhaseDisaggregated, disagg.PhaseDecodeAlone} {
			for rep := range 3 {
				ttft := float64(pp)/1e5*float64(3-pi%2) + float64(rep)*1e-3
				tpot := 0.001 + float64(rep)*1e-4
				e2e := ttft + 63*tpot
				r := benchkit.Request{PPTarget: pp, PPTokens: pp, TGTarget: 64, CompletionTokens: new(64), DoneS: e2e,
					TTFTS: &ttft, TPOTS: &tpot, E2ES: &e2e, Stream: true, Model: hostile}
				r.Phase, r.Concurrency, r.Repeat = ph, 1, rep
				reqs = append(reqs, r)
			}
		}
	}
	bad := benchkit.Request{PPTarget: 4096, TGTarget: 64, Error: "upstream said " + hostile}
	bad.Phase, bad.Concurrency = disagg.PhaseDisaggregated, 1
	reqs = append(reqs, bad)
	rows := make([]disagg.Row, len(reqs))
	for i, r := range reqs {
		rows[i] = disagg.Row{ExoRun: r.Exo(), Phase: r.Phase, PrefillModelID: "prefill " + hostile, DecodeModelID: "decode " + hostile}
	}
	ok := true
	meta := disagg.Meta{RunInfo: benchkit.RunInfo{Engine: "exo", BaseURL: "http://127.0.0.1:1/" + hostile, Simulated: true, Preset: "fast",
		Warnings: []string{"meta warning " + hostile}, Provenance: &benchkit.Provenance{Command: []string{"prefill-decode", hostile}, Nonce: "n0nce"}},
		Prefill: "prefill side " + hostile, Decode: "decode side " + hostile, LinkID: "link-1",
		Plan: benchkit.Plan{PP: []int{2048, 4096}, TG: []int{64}, Repeat: 3, Stream: true}, CompareBaseline: true}
	return disagg.Document{Runs: rows, Meta: meta, Comparison: disagg.Compare(reqs), Phases: []disagg.PhaseReport{
		{Phase: disagg.PhaseDisaggregated, Model: hostile, InstanceID: "i-2", Requests: 7, Failed: 1, Check: &disagg.PrefillCheck{Reported: true, OK: &ok, Note: "remote " + hostile}},
		{Phase: disagg.PhaseDecodeAlone, Model: "m", InstanceID: "i-2", Requests: 6},
	}}
}

func renderPD(t testing.TB, doc disagg.Document) string {
	t.Helper()
	var b bytes.Buffer
	if err := WritePrefillDecode(&b, doc, Options{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestPrefillDecodePage: the page is well formed, fetches nothing, shows
// the results' comparison figures under their data-keys, each phase's
// latency with its interval, and plots against pp, the one variable the
// sweep varies.
func TestPrefillDecodePage(t *testing.T) {
	doc := pdDoc()
	page := renderPD(t, doc)
	checkPage(t, page)
	if err := checkOffline(page); err != nil {
		t.Error(err)
	}
	got := dataKeys(t, page)
	if len(doc.Comparison) != 2 {
		t.Fatalf("%d comparisons, want 2", len(doc.Comparison))
	}
	n := 0
	for i, c := range doc.Comparison {
		for _, f := range c.Phases {
			k := fmt.Sprintf("comparison%d.%s.", i, f.Phase)
			for key, want := range map[string]string{"requests": fmt.Sprint(f.Requests), "failed": fmt.Sprint(f.Failed),
				"elapsed_s": FormatMS(*f.ElapsedS), "ttft_s": FormatMS(*f.TTFTS)} {
				n++
				if got[k+key] != want {
					t.Errorf("%s%s = %q, want %q", k, key, got[k+key], want)
				}
			}
		}
		for _, s := range c.Speedups {
			k := fmt.Sprintf("comparison%d.speedup.%s.", i, s.Baseline)
			n++
			if want := fmt.Sprintf("%.2f", *s.TTFT); got[k+"ttft"] != want {
				t.Errorf("%sttft = %q, want %q", k, got[k+"ttft"], want)
			}
		}
	}
	if n != 2*3*4+2*2 {
		t.Errorf("checked %d figures, want every phase's and speedup's", n)
	}
	// The disaggregated phase of the second cell: three requests' TTFT,
	// the failed one left out, its mean the comparison's and with an
	// interval.
	if v := got["cell1.disaggregated.ttft.n"]; v != "3" {
		t.Errorf("cell1.disaggregated.ttft.n = %q, want 3", v)
	}
	if v, want := got["cell1.disaggregated.ttft.mean"], FormatMS(*doc.Comparison[1].Phases[0].TTFTS)+" ["; !strings.HasPrefix(v, want) {
		t.Errorf("cell1.disaggregated.ttft.mean = %q, want it to start %q", v, want)
	}
	if got["phase.disaggregated.requests"] != "7" || got["phase.disaggregated.failed"] != "1" {
		t.Errorf("the phases' counts: %q, %q", got["phase.disaggregated.requests"], got["phase.disaggregated.failed"])
	}
	svg := regexp.MustCompile(`(?s)<svg.*?</svg>`).FindString(page)
	for _, want := range []string{`aria-label="SIMULATED: TTFT and TPOT of each phase"`, ">prompt length pp (tokens)<", ">2048<", ">4096<", ">disaggregated<", ">prefill_alone<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the plot lacks %q", want)
		}
	}
	for _, want := range []string{"Prefill/decode disaggregation: the run", "pp 2048, 4096 tokens; tg 64 tokens", "ok: remote", "not checked", "Errors of the failed requests"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestPrefillDecodeHostileInert: the strings the cluster and the files
// supplied come out as text.
func TestPrefillDecodeHostileInert(t *testing.T) {
	page := renderPD(t, pdDoc())
	for _, bad := range []string{"<script", "<img"} {
		if strings.Contains(page, bad) {
			t.Errorf("page holds %q unescaped", bad)
		}
	}
	for _, want := range []string{"Prefill/decode disaggregation of decode &lt;script&gt;", "prefill side &lt;script&gt;", "meta warning &lt;script&gt;",
		"remote &lt;script&gt;", "upstream said &lt;script&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks the escaped text %q", want)
		}
	}
}

// TestPrefillDecodeCells: a sweep of more than one variable, or of none,
// plots its cells side by side, each named; a document without rows
// still makes a page, with no plot.
func TestPrefillDecodeCells(t *testing.T) {
	doc := pdDoc()
	for i := range doc.Runs {
		if doc.Runs[i].PPTarget == 4096 {
			doc.Runs[i].TG = 128
		}
	}
	var reqs []benchkit.Request
	for _, r := range doc.Runs {
		q := r.Request()
		q.Phase = r.Phase
		reqs = append(reqs, q)
	}
	doc.Comparison = disagg.Compare(reqs)
	page := renderPD(t, doc)
	for _, want := range []string{">pp=2048 tg=64 c=1<", ">pp=4096 tg=128 c=1<", ">cell (pp, tg, concurrency)<"} {
		if !strings.Contains(page, want) {
			t.Errorf("the plot lacks %q", want)
		}
	}
	empty := renderPD(t, disagg.Document{Meta: doc.Meta})
	if strings.Contains(empty, "<svg") || !strings.Contains(empty, "meta warning") {
		t.Error("a run without rows has a plot, or lacks its warnings")
	}
}

// FuzzPagesEscaped renders the offline and the prefill-decode pages with
// an arbitrary model name, warning, check note and error: each page's
// markup is a plain string's (every '<' of the string escaped).
func FuzzPagesEscaped(f *testing.F) {
	for _, s := range []string{"plain", "<script>alert(1)</script>", `"><svg onload=alert(1)>`, "</title><script>", "<!--", "]]>", "\x00<"} {
		f.Add(s)
	}
	offline := func(t testing.TB, s string) string {
		doc := offlineDoc(10)
		doc.Meta.Model, doc.Meta.Warnings, doc.Summary.Warnings = s, []string{s}, []string{s}
		for i := range doc.Requests {
			if doc.Requests[i].Failed() {
				doc.Requests[i].Error = s
			}
		}
		var b bytes.Buffer
		if err := WriteOffline(&b, doc, Options{MaxTimeline: -1}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	pd := func(t testing.TB, s string) string {
		doc := pdDoc()
		doc.Meta.Prefill, doc.Meta.Warnings, doc.Phases[0].Check.Note, doc.Phases[0].Model = s, []string{s}, s, s
		for i := range doc.Runs {
			doc.Runs[i].PrefillModelID, doc.Runs[i].DecodeModelID = s, s
		}
		var b bytes.Buffer
		if err := WritePrefillDecode(&b, doc, Options{}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	wantOff, wantPD := strings.Count(offline(f, "plain"), "<"), strings.Count(pd(f, "plain"), "<")
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			t.Skip("an empty error is no failure")
		}
		if got := strings.Count(offline(t, s), "<"); got != wantOff {
			t.Errorf("offline: a string changed the page's markup: %d '<', want %d: %q", got, wantOff, s)
		}
		if got := strings.Count(pd(t, s), "<"); got != wantPD {
			t.Errorf("prefill-decode: a string changed the page's markup: %d '<', want %d: %q", got, wantPD, s)
		}
	})
}
