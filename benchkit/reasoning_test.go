package benchkit

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/energy"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
	"golang.org/x/perf/benchfmt"
)

var rt0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func rat(ms float64) time.Time { return rt0.Add(time.Duration(ms * float64(time.Millisecond))) }

// thinkingResult is a streamed reply: a reasoning chunk of one token every
// step ms from first, then the answer's, one token each, ending at the
// last answer chunk; usage counts every token, the reasoning ones apart
// when reasoningUsage is not nil.
func thinkingResult(first, step float64, reasoning, answer int, reasoningUsage *int) engine.Result {
	tr := timing.Trace{Start: rt0}
	at := first
	for i := range reasoning + answer {
		kind := timing.Answer
		if i < reasoning {
			kind = timing.Reasoning
		}
		tr.Chunks = append(tr.Chunks, timing.Chunk{At: rat(at), Tokens: 1, Kind: kind})
		at += step
	}
	tr.End = rat(at - step)
	return engine.Result{Trace: tr, Usage: &engine.Usage{PromptTokens: 64, CompletionTokens: reasoning + answer, ReasoningTokens: reasoningUsage}}
}

func newRow(res engine.Result, asked Request) Request {
	if asked.PPTarget == 0 {
		asked.PPTarget, asked.TGTarget, asked.Stream = 64, 8, true
	}
	return NewRequest(asked, promptsize.Prompt{Tokens: 64}, concurrency.Result[engine.Result]{Value: res, Done: res.Trace.End.Sub(rt0)}, true)
}

func near(t *testing.T, name string, got *float64, want float64) {
	t.Helper()
	if got == nil || math.Abs(*got-want) > 1e-9 {
		t.Errorf("%s = %v, want %v", name, val(got), want)
	}
}

// val is *p, or nil.
func val[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestRequestReasoningFigures: a stream of 3 reasoning then 5 answer
// tokens, one every 10 ms from 100 ms, has by hand TTFT 100 ms, TTFA
// 130 ms, the last reasoning token at 120 ms, TPOT (170 − 100)/7 = 10 ms,
// the reasoning's (120 − 100)/2 = 10 ms and the answer's (170 − 130)/4 =
// 10 ms; the row carries them in both its JSON shapes, and the server's
// count, agreeing, warns of nothing.
func TestRequestReasoningFigures(t *testing.T) {
	three := 3
	r := newRow(thinkingResult(100, 10, 3, 5, &three), Request{})
	near(t, "ttft_s", r.TTFTS, 0.100)
	near(t, "ttfa_s", r.TTFAS, 0.130)
	near(t, "last_reasoning_s", r.LastReasoningS, 0.120)
	near(t, "tpot_s", r.TPOTS, 0.010)
	near(t, "tpot_reasoning_s", r.TPOTReasoningS, 0.010)
	near(t, "tpot_answer_s", r.TPOTAnswerS, 0.010)
	if val(r.ReasoningTokens) != 3 || val(r.AnswerTokens) != 5 || val(r.ServerReasoningTokens) != 3 || r.Tokens() != 8 {
		t.Errorf("tokens: reasoning %v, answer %v, server's reasoning %v, completion %d; want 3, 5, 3, 8",
			val(r.ReasoningTokens), val(r.AnswerTokens), val(r.ServerReasoningTokens), r.Tokens())
	}
	if len(r.Warnings) != 0 {
		t.Errorf("warnings %v, want none", r.Warnings)
	}
	m := r.Metrics()
	if !m.TTFADefined || m.TTFA != 130*time.Millisecond || !m.ReasoningDefined || m.ReasoningTokens != 3 || m.AnswerTokens != 5 {
		t.Errorf("Metrics rebuilt %+v", m)
	}
	for name, v := range map[string]any{"own": r, "exo": r.Exo()} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"ttfa_s":0.13`, `"last_reasoning_s":0.12`, `"reasoning_tokens":3`, `"answer_tokens":5`, `"server_reasoning_tokens":3`, `"tpot_answer_s":0.01`, `"tpot_reasoning_s":0.01`} {
			if !bytes.Contains(b, []byte(want)) {
				t.Errorf("%s JSON lacks %s: %s", name, want, b)
			}
		}
		var back Request
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if val(back.TTFAS) != val(r.TTFAS) || val(back.ReasoningTokens) != 3 || val(back.AnswerTokens) != 5 || val(back.TPOTReasoningS) != val(r.TPOTReasoningS) || val(back.ServerReasoningTokens) != 3 {
			t.Errorf("%s JSON read back without the figures: %+v", name, back)
		}
	}
}

// TestRequestWithoutReasoning: a stream with no reasoning chunk has null
// reasoning figures (absent from its JSON, never 0), TTFA equal to TTFT,
// its answer the whole stream, and no warning, whether the server said
// reasoning_tokens 0 or nothing.
func TestRequestWithoutReasoning(t *testing.T) {
	zero := 0
	for _, usage := range []*int{nil, &zero} {
		r := newRow(thinkingResult(100, 10, 0, 6, usage), Request{})
		if r.TTFAS == nil || r.TTFTS == nil || *r.TTFAS != *r.TTFTS || r.TPOTAnswerS == nil || *r.TPOTAnswerS != *r.TPOTS {
			t.Errorf("TTFA %v, TTFT %v, answer TPOT %v, TPOT %v: want TTFA = TTFT and the answer's TPOT = TPOT",
				val(r.TTFAS), val(r.TTFTS), val(r.TPOTAnswerS), val(r.TPOTS))
		}
		if r.ReasoningTokens != nil || r.LastReasoningS != nil || r.TPOTReasoningS != nil || val(r.AnswerTokens) != 6 {
			t.Errorf("reasoning %v, last %v, TPOT %v, answer %v: want null, null, null, 6",
				val(r.ReasoningTokens), val(r.LastReasoningS), val(r.TPOTReasoningS), val(r.AnswerTokens))
		}
		if len(r.Warnings) != 0 {
			t.Errorf("server reasoning %v: warnings %v, want none", val(usage), r.Warnings)
		}
		b, _ := json.Marshal(r)
		for _, absent := range []string{"last_reasoning_s", `"reasoning_tokens"`, "tpot_reasoning_s", "hidden_tokens"} {
			if bytes.Contains(b, []byte(absent)) {
				t.Errorf("JSON %s has %s", b, absent)
			}
		}
		if usage == nil && bytes.Contains(b, []byte("server_reasoning_tokens")) || usage != nil && !bytes.Contains(b, []byte(`"server_reasoning_tokens":0`)) {
			t.Errorf("server reasoning %v: JSON %s", val(usage), b)
		}
	}
}

// TestReasoningMismatch: the stream's reasoning count against the
// server's: a difference warns (reasoning_mismatch, both numbers said),
// tokens the server counted but never sent explain one, and the summary
// counts the rows that disagree.
func TestReasoningMismatch(t *testing.T) {
	five, four, seven := 5, 4, 7
	agreeHidden := thinkingResult(100, 10, 3, 5, &five)
	agreeHidden.Trace.HiddenTokens = 2 // Ollama's <think> and </think>
	disagreeHidden := thinkingResult(100, 10, 3, 5, &four)
	disagreeHidden.Trace.HiddenTokens = 2
	noChunks := thinkingResult(100, 10, 0, 8, &seven) // the reasoning streamed as content
	for _, c := range []struct {
		name  string
		res   engine.Result
		warn  bool
		words []string
	}{
		{"agree with the hidden tokens", agreeHidden, false, nil},
		{"disagree", thinkingResult(100, 10, 3, 5, &five), true, []string{"server counted 5", "stream carried 3"}},
		{"disagree with hidden tokens", disagreeHidden, true, []string{"server counted 4", "2 tokens counted but never sent"}},
		{"reasoning not told apart", noChunks, true, []string{"server counted 7", "stream carried 0"}},
	} {
		r := newRow(c.res, Request{})
		if r.HasWarning(WarnReasoningMismatch) != c.warn {
			t.Errorf("%s: warnings %v, want reasoning_mismatch %v", c.name, r.Warnings, c.warn)
		}
		for _, w := range r.Warnings {
			for _, word := range c.words {
				if !strings.Contains(w.Message, word) {
					t.Errorf("%s: warning %q does not say %q", c.name, w.Message, word)
				}
			}
		}
		if r.HiddenTokens != c.res.Trace.HiddenTokens {
			t.Errorf("%s: hidden tokens %d, want %d", c.name, r.HiddenTokens, c.res.Trace.HiddenTokens)
		}
	}
	rows := []Request{newRow(agreeHidden, Request{}), newRow(thinkingResult(100, 10, 3, 5, &five), Request{}), newRow(noChunks, Request{})}
	s := Summarize(rows, ByRun, timing.SLO{})[0]
	if !slicesContainsSub(s.Warnings, "2 of 3 requests: the stream's reasoning tokens differ") {
		t.Errorf("summary warnings %q, want the mismatch counted once", s.Warnings)
	}
	if s.HiddenTokens != 2 {
		t.Errorf("summary hidden tokens %d, want 2", s.HiddenTokens)
	}
}

func slicesContainsSub(xs []string, sub string) bool {
	for _, x := range xs {
		if strings.Contains(x, sub) {
			return true
		}
	}
	return false
}

// TestUnstreamedReasoning: a reply not streamed takes its reasoning and
// answer tokens from the server's usage; without a count from the server
// it has neither, and its JSON is what it was.
func TestUnstreamedReasoning(t *testing.T) {
	fifty := 50
	res := engine.Result{Trace: timing.Trace{Start: rt0, End: rat(900)}, Usage: &engine.Usage{PromptTokens: 64, CompletionTokens: 80, ReasoningTokens: &fifty}}
	r := newRow(res, Request{PPTarget: 64, TGTarget: 80})
	if val(r.ReasoningTokens) != 50 || val(r.AnswerTokens) != 30 || r.TTFAS != nil || r.TPOTAnswerS != nil {
		t.Errorf("reasoning %v, answer %v, TTFA %v, TPOT %v; want 50, 30 and no timing", val(r.ReasoningTokens), val(r.AnswerTokens), val(r.TTFAS), val(r.TPOTAnswerS))
	}
	res.Usage.ReasoningTokens = nil
	r = newRow(res, Request{PPTarget: 64, TGTarget: 80})
	b, _ := json.Marshal(r)
	for _, absent := range []string{"ttfa", "reasoning", "answer", "hidden"} {
		if bytes.Contains(b, []byte(absent)) {
			t.Errorf("JSON %s has %s", b, absent)
		}
	}
}

// reasoningCells are a sweep of thinking off and on: cell conc=1 (two
// repeats of one request without reasoning, TTFA 100 ms) and conc=2 (two
// repeats of two requests, each 4 reasoning then 4 answer tokens, TTFA
// 140 ms), with client energy of 8 J per repeat.
func reasoningCells() []Request {
	var rows []Request
	four := 4
	for rep := range 2 {
		r := newRow(thinkingResult(100, 10, 0, 8, nil), Request{Labels: Labels{Concurrency: 1, Repeat: rep}, PPTarget: 64, TGTarget: 8, Stream: true})
		r.Energy = &Energy{WindowS: 1, Joules: 8, Source: "client", SampleIntervalS: 0.1}
		rows = append(rows, r)
		for i := range 2 {
			r := newRow(thinkingResult(100, 10, 4, 4, &four), Request{Labels: Labels{Concurrency: 2, Repeat: rep}, Index: i, PPTarget: 64, TGTarget: 8, Stream: true})
			r.Energy = &Energy{WindowS: 1, Joules: 8, Shared: true, Source: "client", SampleIntervalS: 0.1}
			rows = append(rows, r)
		}
	}
	return rows
}

// TestSummaryReasoning: the cells' repeat-level figures and the run's
// quantiles, by hand: TTFA 100 ms without thinking, 140 ms with; 4
// reasoning tokens a request that reasoned; J per answer token 8 J over 8
// answer tokens without thinking (= J/token), over 2 × 4 with.
func TestSummaryReasoning(t *testing.T) {
	cells := Summarize(reasoningCells(), ByCell, timing.SLO{})
	if len(cells) != 2 {
		t.Fatalf("%d cells, want 2", len(cells))
	}
	off, on := cells[0], cells[1]
	check := func(name string, iv timing.Interval, want float64) {
		t.Helper()
		if iv.N == 0 || math.Abs(iv.Center-want) > 1e-9 {
			t.Errorf("%s = %v (n %d), want %v", name, iv.Center, iv.N, want)
		}
	}
	check("off TTFA", off.RepeatTTFA, 0.100)
	check("on TTFA", on.RepeatTTFA, 0.140)
	check("on TTFT", on.RepeatTTFT, 0.100)
	check("off answer tokens", off.RepeatAnswerTokens, 8)
	check("on reasoning tokens", on.RepeatReasoningTokens, 4)
	check("on answer tokens", on.RepeatAnswerTokens, 4)
	check("off J/answer", off.JPerAnswerToken, 1)
	check("off J/token", off.JPerToken, 1)
	check("on J/answer", on.JPerAnswerToken, 1) // 8 J over 2 × 4 answer tokens
	check("on J/token", on.JPerToken, 0.5)      // 8 J over 16 tokens
	if off.RepeatReasoningTokens.N != 0 || off.ReasoningTokens.N != 0 || off.TotalReasoningTokens != nil {
		t.Errorf("a cell without reasoning has reasoning figures: %+v %+v %v", off.RepeatReasoningTokens, off.ReasoningTokens, off.TotalReasoningTokens)
	}
	run := Summarize(reasoningCells(), ByRun, timing.SLO{})[0]
	if run.TTFA.N != 6 || run.ReasoningTokens.N != 4 || val(run.TotalReasoningTokens) != 16 || val(run.TotalAnswerTokens) != 32 || run.TPOTReasoning.N != 4 {
		t.Errorf("run: TTFA n %d, reasoning n %d, totals %v/%v, reasoning TPOT n %d; want 6, 4, 16/32, 4",
			run.TTFA.N, run.ReasoningTokens.N, val(run.TotalReasoningTokens), val(run.TotalAnswerTokens), run.TPOTReasoning.N)
	}
	near(t, "run TTFA p50", run.TTFA.P50, 0.140)
	near(t, "run reasoning TPOT mean", run.TPOTReasoning.Mean, 0.010)

	var doc bytes.Buffer
	if err := WriteJSON(&doc, Document{Runs: reasoningCells(), Summary: cells}); err != nil {
		t.Fatal(err)
	}
	var file struct {
		Summary []map[string]json.RawMessage `json:"summary"`
	}
	if err := json.Unmarshal(doc.Bytes(), &file); err != nil {
		t.Fatal(err)
	}
	if _, ok := file.Summary[0]["reasoning_tokens"]; ok {
		t.Errorf("the cell without reasoning has reasoning_tokens: %s", file.Summary[0]["reasoning_tokens"])
	}
	for _, k := range []string{"ttfa_s", "reasoning_tokens", "answer_tokens", "j_per_answer_token"} {
		if _, ok := file.Summary[1][k]; !ok {
			t.Errorf("the thinking cell's record lacks %s", k)
		}
	}
}

// TestGoodputOnTTFA: an objective on the time to the first answer token
// judges the answer's start: the thinking requests (TTFA 140 ms) fail
// 120 ms, those without (100 ms) meet it, and TTFT alone would pass all.
func TestGoodputOnTTFA(t *testing.T) {
	rows := reasoningCells()
	s := Summarize(rows, ByRun, timing.SLO{TTFA: 120 * time.Millisecond})[0]
	if s.Goodput == nil || s.Goodput.Good != 2 || s.Goodput.Total != 6 || s.Goodput.SLO != "ttfa≤120ms" {
		t.Errorf("goodput %+v, want 2 of 6 under ttfa≤120ms", s.Goodput)
	}
	s = Summarize(rows, ByRun, timing.SLO{TTFT: 120 * time.Millisecond})[0]
	if s.Goodput.Good != 6 {
		t.Errorf("TTFT ≤ 120 ms: %d good, want 6", s.Goodput.Good)
	}
}

// TestTablesShowReasoningWhenPresent: the reasoning columns appear in
// every table when a request reasoned, and in none otherwise; the
// terminal table of a thinking sweep still fits 120 columns.
func TestTablesShowReasoningWhenPresent(t *testing.T) {
	var plain []Request
	for _, r := range reasoningCells() {
		if r.ReasoningTokens == nil {
			plain = append(plain, r)
		}
	}
	cols := map[bool][]string{
		false: {"TTFA ms", "think/answer tok", "J/answer"},  // terminal
		true:  {"TTFA ms", "reasoning tok", "J/answer tok"}, // Markdown
	}
	for _, rows := range [][]Request{reasoningCells(), plain} {
		thinking := len(rows) > len(plain)
		for _, md := range []bool{false, true} {
			var buf bytes.Buffer
			if err := WriteTable(&buf, Summarize(rows, ByCell, timing.SLO{}), TableOptions{Markdown: md}); err != nil {
				t.Fatal(err)
			}
			for _, col := range cols[md] {
				if strings.Contains(buf.String(), col) != thinking {
					t.Errorf("thinking %v, markdown %v: column %q shown %v:\n%s", thinking, md, col, !thinking, buf.String())
				}
			}
			if !md {
				for _, l := range strings.Split(buf.String(), "\n") {
					if n := len([]rune(l)); n > 120 && !strings.HasPrefix(l, "[") {
						t.Errorf("a line of %d columns: %q", n, l)
					}
				}
			}
		}
		var buf bytes.Buffer
		if err := WriteTable(&buf, Summarize(rows, ByRun, timing.SLO{}), TableOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(buf.String(), "ttfa ms"); got != thinking {
			t.Errorf("thinking %v: load table shows ttfa %v:\n%s", thinking, got, buf.String())
		}
		if thinking && !regexp.MustCompile(`(?m) 4/5( |$)`).MatchString(buf.String()) { // 16/4 and 32/6
			t.Errorf("load table lacks the mean reasoning/answer tokens 4/5:\n%s", buf.String())
		}
	}
}

// TestViewsCarryReasoning: CSV gains the reasoning columns, with their
// figures, only when a row has one; benchfmt gains TTFA and J per answer
// token lines with their units, only then.
func TestViewsCarryReasoning(t *testing.T) {
	var csvOut bytes.Buffer
	if err := WriteCSV(&csvOut, reasoningCells()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(csvOut.String()), "\n")
	head := strings.Split(lines[0], ",")
	if len(head) != len(csvHeader)+len(csvSides) || head[len(csvHeader)] != "ttfa_s" {
		t.Fatalf("CSV header %q", lines[0])
	}
	col := func(line, name string) string {
		for i, h := range head {
			if h == name {
				return strings.Split(line, ",")[i]
			}
		}
		t.Fatalf("no column %s", name)
		return ""
	}
	if got := col(lines[2], "reasoning_tokens") + " " + col(lines[2], "ttfa_s") + " " + col(lines[1], "reasoning_tokens"); got != "4 0.14 " {
		t.Errorf("CSV reasoning cells %q, want %q", got, "4 0.14 ")
	}
	csvOut.Reset()
	if err := WriteCSV(&csvOut, fixtureRows()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(csvOut.String(), "ttfa_s") {
		t.Errorf("CSV of rows without the figures has their columns")
	}

	var bf bytes.Buffer
	if err := WriteBenchfmt(&bf, reasoningCells(), BenchfmtOptions{}); err != nil {
		t.Fatal(err)
	}
	rd := benchfmt.NewReader(bytes.NewReader(bf.Bytes()), "bench.txt")
	units := map[string]bool{}
	var on *benchfmt.Result
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.UnitMetadata:
			units[rec.OrigUnit] = true
		case *benchfmt.Result:
			if strings.Contains(rec.Name.String(), "conc=2") {
				on = rec.Clone()
			}
		case *benchfmt.SyntaxError:
			t.Errorf("syntax error: %v", rec)
		}
	}
	if !units["ttfa-ns/op"] || !units["J/answer-tok"] || on == nil {
		t.Fatalf("units %v, thinking line %v", units, on)
	}
	if v, ok := on.Value("ttfa-sec/op"); !ok || math.Abs(v-0.14) > 1e-12 {
		t.Errorf("ttfa = %v, %v; want 0.14 s", v, ok)
	}
	if v, ok := on.Value("reasoning-tok"); !ok || v != 4 {
		t.Errorf("reasoning-tok = %v, %v; want 4", v, ok)
	}
	if v, ok := on.Value("J/answer-tok"); !ok || v != 1 {
		t.Errorf("J/answer-tok = %v, %v; want 1", v, ok)
	}
}

// TestRunnerEnergyPerAnswerToken: the Runner's client energy of a burst
// is also given over its answer tokens: 100 W over the 1 s burst window,
// whose two requests streamed 4 reasoning and 4 answer tokens each, is
// 100 J, 6.25 J per generated token and 12.5 J per answer token.
func TestRunnerEnergyPerAnswerToken(t *testing.T) {
	var stamps []time.Time
	for _, sec := range []float64{-1, 0.5, 2} {
		stamps = append(stamps, rt0.Add(time.Duration(sec*float64(time.Second))))
	}
	i := 0
	sampler, err := energy.NewSampler([]energy.Source{energy.SourceFunc(func(context.Context) ([]energy.Reading, error) {
		r := []energy.Reading{{Node: "n", Metric: energy.MetricPower, Value: 100, At: stamps[i]}}
		i++
		return r, nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range stamps {
		if err := sampler.Poll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	four := 4
	br := concurrency.BurstResult[engine.Result]{
		Requests: []concurrency.Result[engine.Result]{{Index: 0, Value: thinkingResult(100, 10, 4, 4, &four)}, {Index: 1, Value: thinkingResult(100, 10, 4, 4, &four)}},
		Summary:  concurrency.Summary{Start: rt0, Wall: time.Second},
	}
	r := &Runner{Sampler: sampler}
	e := r.energy(br, []promptsize.Prompt{{Tokens: 64}, {Tokens: 64}})
	if e == nil {
		t.Fatal("no energy measured")
	}
	if math.Abs(e.Joules-100) > 1e-9 || e.JPerGeneratedToken == nil || math.Abs(*e.JPerGeneratedToken-6.25) > 1e-9 || e.JPerAnswerToken == nil || math.Abs(*e.JPerAnswerToken-12.5) > 1e-9 {
		t.Errorf("energy %v J, %v J/token, %v J/answer token; want 100, 6.25, 12.5", e.Joules, val(e.JPerGeneratedToken), val(e.JPerAnswerToken))
	}
}
