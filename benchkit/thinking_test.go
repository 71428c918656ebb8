package benchkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// thinkOffTokens is what the test template adds to the generation prompt
// when enable_thinking is false, as Qwen3's does.
const thinkOffTokens = 4

// thinkCount is wordCounter's count of ms rendered with vars.
func thinkCount(ms []promptsize.Message, vars map[string]any) int {
	n, _ := wordCounter(context.Background(), ms)
	if on, ok := vars["enable_thinking"].(bool); ok && !on {
		n += thinkOffTokens
	}
	return n
}

// varsCounter is wordCounter with template variables: a Counter that
// renders as the test server does (WithTemplateVars).
type varsCounter struct{ vars map[string]any }

func (c varsCounter) Count(ctx context.Context, ms []promptsize.Message) (int, error) {
	return thinkCount(ms, c.vars), nil
}

func (c varsCounter) WithTemplateVars(vars map[string]any) promptsize.Counter {
	m := maps.Clone(c.vars)
	if m == nil {
		m = map[string]any{}
	}
	maps.Copy(m, vars)
	return varsCounter{m}
}

// thinkEngine answers with tg tokens 1 ms apart and usage whose prompt
// count is the chat rendered with the request's thinking variables, as a
// server renders it; it keeps every request.
type thinkEngine struct {
	mu   sync.Mutex
	reqs []engine.Request
}

func (e *thinkEngine) Complete(ctx context.Context, req engine.Request) (engine.Result, error) {
	e.mu.Lock()
	e.reqs = append(e.reqs, req)
	e.mu.Unlock()
	start := time.Now()
	engine.NotifySend(ctx, start)
	ms := make([]promptsize.Message, len(req.Messages))
	for i, m := range req.Messages {
		ms[i] = promptsize.Message(m)
	}
	res := engine.Result{Trace: timing.Trace{Start: start}, Text: strings.Repeat("w ", req.MaxTokens),
		Usage: &engine.Usage{PromptTokens: thinkCount(ms, req.Thinking.TemplateVars()), CompletionTokens: req.MaxTokens}}
	for i := range req.MaxTokens {
		res.Trace.Chunks = append(res.Trace.Chunks, timing.Chunk{At: start.Add(time.Duration(2+i) * time.Millisecond), Tokens: 1})
	}
	res.Trace.End = start.Add(time.Duration(2+req.MaxTokens) * time.Millisecond)
	return res, nil
}

func (e *thinkEngine) requests() []engine.Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]engine.Request(nil), e.reqs...)
}

func thinkOn(on bool) engine.Thinking { return engine.Thinking{Enabled: &on} }

// words is the content's word count across ms.
func words(ms []engine.Message) int {
	n := 0
	for _, m := range ms {
		n += len(strings.Fields(m.Content))
	}
	return n
}

// TestLoadThinkingSweep sweeps two rates under thinking off then on: four
// runs numbered on, each row labelled with its setting and sent with it,
// every prompt exact as the server counts it with the setting's template
// variables, no two prompts alike, and one table line per setting and
// rate.
func TestLoadThinkingSweep(t *testing.T) {
	te := &thinkEngine{}
	l := &Load{Engine: te, Model: "m", Builder: &promptsize.Builder{Counter: varsCounter{}}, Nonce: "n0nce"}
	plan := LoadPlan{Workload: Lengths{Input: 40, Output: 3, Seed: 1}, Traffic: Traffic{NumRequests: 3, Seed: 1},
		Rates: []float64{500, 1000}, Thinking: []engine.Thinking{thinkOn(false), thinkOn(true)}}
	doc, err := l.Document(t.Context(), LoadMeta{}, plan)
	if err != nil {
		t.Fatal(err)
	}
	runs := doc.AllRuns()
	wantLabels := []string{"off", "off", "on", "on"}
	if len(runs) != 4 {
		t.Fatalf("%d runs; want 2 rates × 2 settings = 4", len(runs))
	}
	if strings.Join(doc.Meta.Thinking, " ") != "off on" {
		t.Errorf("meta thinking %q; want off, on", doc.Meta.Thinking)
	}
	contents := map[string]bool{}
	for i, run := range runs {
		if run.Summary.Thinking != wantLabels[i] {
			t.Errorf("run %d: summary thinking %q; want %q", i, run.Summary.Thinking, wantLabels[i])
		}
		for _, w := range run.Summary.Warnings {
			t.Errorf("run %d: warning %q", i, w)
		}
		for _, row := range run.Requests {
			if row.Run != i || row.Thinking != wantLabels[i] {
				t.Errorf("run %d: row of run %d labelled %q; want %d, %q", i, row.Run, row.Thinking, i, wantLabels[i])
			}
			if row.PPTokens != row.PPTarget || row.ServerPromptTokens == nil || *row.ServerPromptTokens != row.PPTarget || len(row.Warnings) > 0 {
				t.Errorf("run %d: pp %d of %d, the server's %v, warnings %v; want the server's count exact", i, row.PPTokens, row.PPTarget, row.ServerPromptTokens, row.Warnings)
			}
		}
	}
	reqs := te.requests()
	if len(reqs) != 12 {
		t.Fatalf("%d requests sent; want 12", len(reqs))
	}
	for i, req := range reqs {
		off := i < 6
		if req.Thinking == nil || req.Thinking.Enabled == nil || *req.Thinking.Enabled == off {
			t.Errorf("request %d: thinking %+v; want enabled %v", i, req.Thinking, !off)
		}
		c := req.Messages[len(req.Messages)-1].Content
		if contents[c] {
			t.Errorf("request %d repeats an earlier prompt: each run's salts must differ", i)
		}
		contents[c] = true
	}
	// The same lengths drawn in each run: with thinking off the template
	// takes 4 tokens more, the content 4 words less.
	if d := words(reqs[6].Messages) - words(reqs[0].Messages); d != thinkOffTokens {
		t.Errorf("the first prompt has %d words more with thinking on than off; want %d", d, thinkOffTokens)
	}
	if l.Request.Thinking != nil {
		t.Errorf("the Load's own thinking is %+v after Document; want it as it was (nil)", l.Request.Thinking)
	}
	var b bytes.Buffer
	sums := make([]Summary, len(runs))
	for i, r := range runs {
		sums[i] = r.Summary
	}
	if err := WriteTable(&b, sums, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if !strings.HasPrefix(lines[0], "thinking") || len(lines) < 5 {
		t.Fatalf("table:\n%s\nwant a thinking column first and 4 lines", b.String())
	}
	for i, want := range wantLabels {
		if f := strings.Fields(lines[1+i]); len(f) == 0 || f[0] != want {
			t.Errorf("table line %d: %q; want it to start with %q", i, lines[1+i], want)
		}
	}
}

// TestLoadThinkingCounterWithoutVars: a Counter that cannot render with
// template variables counts without them, and each run says so.
func TestLoadThinkingCounterWithoutVars(t *testing.T) {
	off := thinkOn(false)
	l := &Load{Engine: &thinkEngine{}, Model: "m", Builder: &promptsize.Builder{Counter: wordCounter}, Request: engine.Request{Thinking: &off}}
	run, err := l.Run(t.Context(), Lengths{Input: 40, Output: 2, Seed: 1}, Traffic{Burst: 2}, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	warned := false
	for _, w := range run.Summary.Warnings {
		warned = warned || strings.Contains(w, "cannot render the chat template") && strings.Contains(w, "enable_thinking")
	}
	if !warned {
		t.Errorf("summary warnings %q; want one saying the counter cannot render with enable_thinking", run.Summary.Warnings)
	}
	for _, row := range run.Requests {
		if row.Thinking != "off" || !row.HasWarning(WarnPromptMismatch) {
			t.Errorf("row labelled %q, warnings %v; want off and a prompt mismatch (the server counts the think block)", row.Thinking, row.Warnings)
		}
	}
}

// TestLoadThinkingSearch: a search takes one thinking setting; two are
// refused before anything is sent.
func TestLoadThinkingSearch(t *testing.T) {
	te := &thinkEngine{}
	l := &Load{Engine: te, Model: "m", Builder: &promptsize.Builder{Counter: varsCounter{}}}
	_, err := l.Document(t.Context(), LoadMeta{}, LoadPlan{Workload: Lengths{Input: 40, Output: 2}, Traffic: Traffic{NumRequests: 2},
		SLO: timing.SLO{TTFT: time.Second}, Search: &concurrency.SearchOptions{}, Thinking: []engine.Thinking{thinkOn(false), thinkOn(true)}})
	if !errors.Is(err, ErrBadLoad) || !strings.Contains(err.Error(), "one thinking setting") {
		t.Errorf("search over two settings: %v; want ErrBadLoad naming the one setting a search takes", err)
	}
	if n := len(te.requests()); n != 0 {
		t.Errorf("%d requests sent; want none", n)
	}
}

// TestRunnerThinkingCells measures each cell under thinking off, then
// on: the requests carry the setting, the prompts are exact as the server
// counts them, the plan is checked against the larger overhead, and the
// cells, tables, exo document and benchfmt names keep the settings apart.
func TestRunnerThinkingCells(t *testing.T) {
	te := &thinkEngine{}
	r := &Runner{Engine: te, Model: "m", Builder: &promptsize.Builder{Counter: varsCounter{}}}
	plan := Plan{PP: []int{20}, TG: []int{3}, Concurrency: []int{1, 2}, Repeat: 2, Stream: true,
		Thinking: []engine.Thinking{thinkOn(false), thinkOn(true)}}
	if plan.Requests() != 12 {
		t.Errorf("plan.Requests() = %d; want (1 + 2) × 2 repeats × 2 settings = 12", plan.Requests())
	}
	rep, err := r.Run(t.Context(), plan)
	if err != nil {
		t.Fatal(err)
	}
	// 7 tokens of template for one message, 4 more with thinking off.
	if rep.Overhead != 7+thinkOffTokens {
		t.Errorf("overhead %d; want the larger of the settings', %d", rep.Overhead, 7+thinkOffTokens)
	}
	if len(rep.Requests) != 12 || len(rep.Warnings) != 0 {
		t.Fatalf("%d rows, warnings %q; want 12 and none", len(rep.Requests), rep.Warnings)
	}
	for _, row := range rep.Requests {
		if row.PPTokens != 20 || row.ServerPromptTokens == nil || *row.ServerPromptTokens != 20 || len(row.Warnings) > 0 {
			t.Errorf("%s: pp %d, the server's %v, warnings %v; want 20 exact", row.Thinking, row.PPTokens, row.ServerPromptTokens, row.Warnings)
		}
	}
	for _, req := range te.requests() {
		if req.Thinking == nil || req.Thinking.Enabled == nil {
			t.Fatalf("a request without its thinking control: %+v", req.Thinking)
		}
	}
	cells := rep.Cells()
	var names []string
	for _, c := range cells {
		names = append(names, c.Name())
	}
	if got, want := strings.Join(names, " "), "thinking=off/pp=20/tg=3/conc=1 thinking=on/pp=20/tg=3/conc=1 thinking=off/pp=20/tg=3/conc=2 thinking=on/pp=20/tg=3/conc=2"; got != want {
		t.Errorf("cells %s; want %s", got, want)
	}
	for _, md := range []bool{false, true} {
		var b bytes.Buffer
		if err := WriteTable(&b, cells, TableOptions{Markdown: md}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "thinking") || strings.Count(b.String(), " off ") != 2 || strings.Count(b.String(), " on ") != 2 {
			t.Errorf("markdown %v table:\n%s\nwant a thinking column, off and on twice each", md, b.String())
		}
	}
	js, err := json.Marshal(Document{Runs: rep.Requests, Summary: cells, Meta: &Meta{Plan: plan}})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(js), `"thinking":"off"`); n != 6+2 {
		t.Errorf("the exo document labels %d rows and cells off; want 6 rows and 2 cells", n)
	}
	var bf bytes.Buffer
	if err := WriteBenchfmt(&bf, rep.Requests, BenchfmtOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(bf.String(), "/thinking=off/pp=20/tg=3/conc=2") || !strings.Contains(bf.String(), "/thinking=on/pp=20/tg=3/conc=2") {
		t.Errorf("benchfmt:\n%s\nwant each setting's own names", bf.String())
	}

	// A pp between the two settings' overheads is refused before
	// anything is sent.
	te2 := &thinkEngine{}
	r2 := &Runner{Engine: te2, Model: "m", Builder: &promptsize.Builder{Counter: varsCounter{}}}
	plan.PP = []int{9}
	if _, err := r2.Run(t.Context(), plan); !errors.Is(err, ErrBadPlan) || len(te2.requests()) != 0 {
		t.Errorf("pp=9 under thinking off (overhead 11): %v, %d requests; want ErrBadPlan and none sent", err, len(te2.requests()))
	}
}

func TestThinkingLabel(t *testing.T) {
	on, off := true, false
	for _, tc := range []struct {
		th   *engine.Thinking
		want string
	}{
		{nil, ""},
		{&engine.Thinking{}, ""},
		{&engine.Thinking{Enabled: &off}, "off"},
		{&engine.Thinking{Enabled: &on, Effort: "high", Budget: 512}, "on,effort=high,budget=512"},
		{&engine.Thinking{Effort: "low"}, "effort=low"},
		{&engine.Thinking{Budget: 64}, "budget=64"},
	} {
		if got := thinkingLabel(tc.th); got != tc.want {
			t.Errorf("thinkingLabel(%+v) = %q; want %q", tc.th, got, tc.want)
		}
	}
}

// TestSessionsThinking: every turn of a session carries the thinking
// control, is labelled with it, and is counted as the server renders it.
func TestSessionsThinking(t *testing.T) {
	te := &thinkEngine{}
	off := thinkOn(false)
	s := &Sessions{Engine: te, Model: "m", Builder: &promptsize.Builder{Counter: varsCounter{}}, Request: engine.Request{Thinking: &off},
		Count: 2, Turns: 3, UserTokens: 30, Output: 3}
	rows, err := s.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 {
		t.Fatalf("%d rows; want 2 sessions × 3 turns", len(rows))
	}
	for _, row := range rows {
		if row.Thinking != "off" || row.Failed() || row.ServerPromptTokens == nil || *row.ServerPromptTokens != row.PPTokens || len(row.Warnings) > 0 {
			t.Errorf("%s turn %d: thinking %q, error %q, pp %d, the server's %v, warnings %v; want off and the server's count exact",
				row.Session, row.Turn, row.Thinking, row.Error, row.PPTokens, row.ServerPromptTokens, row.Warnings)
		}
	}
	for _, req := range te.requests() {
		if req.Thinking != &off && (req.Thinking == nil || req.Thinking.Enabled == nil || *req.Thinking.Enabled) {
			t.Errorf("a turn sent with thinking %+v; want off", req.Thinking)
		}
	}
}
