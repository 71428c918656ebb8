package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/inferbench/inferbench/promptsize"
)

// The thinking range of the tests: short, so that a request runs in tens
// of decode steps.
const testThinkMin, testThinkMax = 16, 24

// reasoningServer starts a Fast server in the reasoning mode with the
// tests' thinking range and a short natural length, unless o sets them.
func reasoningServer(t *testing.T, o Options) *Server {
	t.Helper()
	o.Reasoning.Enabled = true
	if o.Reasoning.MinTokens == 0 {
		o.Reasoning.MinTokens, o.Reasoning.MaxTokens = testThinkMin, testThinkMax
	}
	if o.NaturalLength == 0 {
		o.NaturalLength = 8
	}
	return newFast(t, o)
}

// userMsgs is a one-message chat.
func userMsgs(content string) []promptsize.Message {
	return []promptsize.Message{{Role: "user", Content: content}}
}

// planOf is the thinking the server draws for a one-message chat with
// control c and seed.
func planOf(s *Server, c thinkControl, content string, seed uint64) thinkPlan {
	return s.opts.Reasoning.plan(c, chatIDs(userMsgs(content), c.vars), seed)
}

// streamData POSTs body to url and reads an SSE stream: its data objects
// (without [DONE]) and its comment lines. It fails unless the status is
// 200 and the stream ends with [DONE].
func streamData(t *testing.T, url, body string) (chunks []map[string]any, comments []string) {
	t.Helper()
	resp := post(t, url, body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: status %d: %s", url, resp.StatusCode, b)
	}
	lines, err := sseLines(t, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	done := false
	for _, l := range lines {
		switch {
		case l == "data: [DONE]":
			done = true
		case strings.HasPrefix(l, "data: "):
			var m map[string]any
			if err := json.Unmarshal([]byte(l[6:]), &m); err != nil {
				t.Fatalf("chunk %q: %v", l, err)
			}
			chunks = append(chunks, m)
		case strings.HasPrefix(l, ":"):
			comments = append(comments, l)
		}
	}
	if !done {
		t.Fatalf("stream of %s has no [DONE]", url)
	}
	return chunks, comments
}

// streamFacts is what a test reads of an OpenAI-shaped stream.
type streamFacts struct {
	kinds     []string       // the deltas' kinds in order, repeats merged: role, reasoning, content
	reasoning int            // chunks with reasoning text (one token each)
	content   int            // chunks with content text
	text      string         // the reasoning text then the content text
	finish    string         // the finish_reason
	usage     map[string]any // the last usage
	fields    map[string]int // every delta key seen, with its count
}

// facts reads chunks whose reasoning field is field; each reasoning or
// content delta must carry one kind of text.
func facts(t *testing.T, chunks []map[string]any, field string) streamFacts {
	t.Helper()
	f := streamFacts{fields: map[string]int{}}
	var reasoning, content strings.Builder
	add := func(k string) {
		if len(f.kinds) == 0 || f.kinds[len(f.kinds)-1] != k {
			f.kinds = append(f.kinds, k)
		}
	}
	for _, c := range chunks {
		if u, ok := c["usage"].(map[string]any); ok {
			f.usage = u
		}
		choices, _ := c["choices"].([]any)
		if len(choices) == 0 {
			continue
		}
		ch := choices[0].(map[string]any)
		if fr, ok := ch["finish_reason"].(string); ok {
			f.finish = fr
		}
		d, _ := ch["delta"].(map[string]any)
		for k := range d {
			f.fields[k]++
		}
		r, hasR := d[field].(string)
		txt, hasC := d["content"].(string)
		switch {
		case hasR && r != "":
			if hasC && txt != "" {
				t.Errorf("chunk %v carries reasoning and content", c)
			}
			add("reasoning")
			f.reasoning++
			reasoning.WriteString(r)
		case hasC && txt != "":
			add("content")
			f.content++
			content.WriteString(txt)
		case d["role"] != nil:
			add("role")
		}
	}
	f.text = reasoning.String() + content.String()
	return f
}

// num reads a JSON number of a decoded object.
func num(m map[string]any, k string) int {
	v, _ := m[k].(float64)
	return int(v)
}

// TestReasoningVLLMStream: the vLLM API streams the thinking as reasoning
// deltas, in the field of the configured vLLM release, then the answer
// as content; completion_tokens counts both; the reasoning count is in
// usage only from the release that reports it.
func TestReasoningVLLMStream(t *testing.T) {
	for _, tc := range []struct {
		version, field string
		details        bool
	}{
		{"0.10.2", "reasoning_content", false},
		{"0.11", "reasoning", false},
		{"0.25.1", "reasoning", false},
		{VLLMReasoningTokensVersion, "reasoning", true},
		{"", "reasoning", true},
	} {
		t.Run("v"+tc.version, func(t *testing.T) {
			s := reasoningServer(t, Options{Reasoning: ReasoningOptions{VLLMVersion: tc.version}})
			content := "why is the sky blue"
			chunks, _ := streamData(t, s.VLLMURL+"/v1/chat/completions",
				chatBody(s.Model(), content, 500, `,"stream":true,"stream_options":{"include_usage":true}`))
			f := facts(t, chunks, tc.field)
			want := planOf(s, noControl(), content, 42)
			if want.n < testThinkMin || want.n > testThinkMax {
				t.Fatalf("drawn thinking %d tokens, outside %d..%d", want.n, testThinkMin, testThinkMax)
			}
			if diff := cmp.Diff([]string{"role", "reasoning", "content"}, f.kinds); diff != "" {
				t.Errorf("delta kinds (-want +got):\n%s", diff)
			}
			other := map[string]string{"reasoning": "reasoning_content", "reasoning_content": "reasoning"}[tc.field]
			if f.fields[other] > 0 {
				t.Errorf("%d deltas carry %s; vLLM %s sends %s", f.fields[other], other, tc.version, tc.field)
			}
			if f.reasoning != want.n {
				t.Errorf("%d reasoning chunks, want the drawn %d", f.reasoning, want.n)
			}
			if ct := num(f.usage, "completion_tokens"); ct != f.reasoning+f.content {
				t.Errorf("completion_tokens %d, want reasoning %d + content %d", ct, f.reasoning, f.content)
			}
			if f.finish != "stop" {
				t.Errorf("finish_reason %q, want stop", f.finish)
			}
			details, ok := f.usage["completion_tokens_details"].(map[string]any)
			switch {
			case tc.details && (!ok || num(details, "reasoning_tokens") != f.reasoning):
				t.Errorf("usage %v: want completion_tokens_details.reasoning_tokens %d", f.usage, f.reasoning)
			case !tc.details && ok:
				t.Errorf("usage %v: vLLM %s reports no completion_tokens_details", f.usage, tc.version)
			}
			if len(Tokenize(f.text)) != f.reasoning+f.content {
				t.Errorf("text %q is not one token a chunk", f.text)
			}
		})
	}
}

// TestReasoningSGLangAndOllamaShapes: with SGLang's metrics the API
// speaks SGLang's reasoning (reasoning_content, usage.reasoning_tokens at
// the top of usage); as Ollama's OpenAI API, reasoning and no count, and
// with the hidden markers two tokens counted that no chunk carries.
func TestReasoningSGLangAndOllamaShapes(t *testing.T) {
	t.Run("sglang", func(t *testing.T) {
		s := reasoningServer(t, Options{Metrics: MetricsSGLang})
		chunks, _ := streamData(t, s.VLLMURL+"/v1/chat/completions",
			chatBody(s.Model(), "hello", 500, `,"stream":true,"stream_options":{"include_usage":true}`))
		f := facts(t, chunks, "reasoning_content")
		if f.reasoning != planOf(s, noControl(), "hello", 42).n || f.fields["reasoning"] > 0 {
			t.Errorf("%d reasoning_content chunks (and %d reasoning), want the drawn %d", f.reasoning, f.fields["reasoning"], planOf(s, noControl(), "hello", 42).n)
		}
		if num(f.usage, "reasoning_tokens") != f.reasoning || f.usage["completion_tokens_details"] != nil {
			t.Errorf("usage %v: want reasoning_tokens %d at its top, as SGLang's UsageInfo", f.usage, f.reasoning)
		}
	})
	t.Run("ollama-openai", func(t *testing.T) {
		s := reasoningServer(t, Options{Reasoning: ReasoningOptions{API: ReasoningOllama, HiddenMarkers: true}})
		chunks, _ := streamData(t, s.VLLMURL+"/v1/chat/completions",
			chatBody(s.Model(), "hello", 500, `,"stream":true,"stream_options":{"include_usage":true}`))
		f := facts(t, chunks, "reasoning")
		if diff := cmp.Diff([]string{"role", "reasoning", "content"}, f.kinds); diff != "" {
			t.Errorf("delta kinds (-want +got):\n%s", diff)
		}
		if strings.Contains(f.text, thinkOpen) || strings.Contains(f.text, thinkClose) {
			t.Errorf("text %q carries a thinking tag", f.text)
		}
		if ct := num(f.usage, "completion_tokens"); ct != f.reasoning+f.content+2 {
			t.Errorf("completion_tokens %d, want the %d sent tokens + 2 hidden tags", ct, f.reasoning+f.content)
		}
		if f.usage["completion_tokens_details"] != nil || f.usage["reasoning_tokens"] != nil {
			t.Errorf("usage %v: Ollama's OpenAI API reports no reasoning count", f.usage)
		}
	})
}

// TestReasoningExo: exo's /v1 streams reasoning_content deltas (every
// delta with its role) and counts them in completion_tokens_details; the
// token that carries the finish reason is content, as exo's
// parse_thinking_models sends it; the bench path runs no parser, so its
// thinking is content, the hidden tags visible, and it counts none.
func TestReasoningExo(t *testing.T) {
	s := reasoningServer(t, Options{Reasoning: ReasoningOptions{HiddenMarkers: true}})
	want := planOf(s, noControl(), "hello", 42)
	t.Run("v1", func(t *testing.T) {
		chunks, comments := streamData(t, s.URL+"/v1/chat/completions", chatBody(s.Model(), "hello", 500, `,"stream":true`))
		f := facts(t, chunks, "reasoning_content")
		if diff := cmp.Diff([]string{"reasoning", "content"}, f.kinds); diff != "" {
			t.Errorf("delta kinds (-want +got):\n%s", diff)
		}
		if f.fields["role"] != len(chunks) || f.fields["content"] != f.content {
			t.Errorf("%d of %d deltas have the role, %d carry content for %d content chunks: exo's reasoning deltas carry no content", f.fields["role"], len(chunks), f.fields["content"], f.content)
		}
		if f.reasoning != want.n {
			t.Errorf("%d reasoning chunks, want %d", f.reasoning, want.n)
		}
		details := f.usage["completion_tokens_details"].(map[string]any)
		if num(details, "reasoning_tokens") != f.reasoning || num(f.usage, "completion_tokens") != f.reasoning+f.content+2 {
			t.Errorf("usage %v: want reasoning_tokens %d and completion_tokens %d + 2 tags", f.usage, f.reasoning, f.reasoning+f.content)
		}
		var sim map[string]any
		for _, c := range comments {
			if b, ok := strings.CutPrefix(c, ": sim "); ok {
				json.Unmarshal([]byte(b), &sim)
			}
		}
		if num(sim, "reasoning_tokens") != want.n || num(sim, "thinking_tokens") != want.n+2 {
			t.Errorf("sim block %v: want reasoning_tokens %d, thinking_tokens %d", sim, want.n, want.n+2)
		}
	})
	t.Run("bench", func(t *testing.T) {
		const tg = 40
		chunks, _ := streamData(t, s.URL+"/bench/chat/completions", chatBody(s.Model(), "hello", tg, `,"stream":true`))
		f := facts(t, chunks, "reasoning_content")
		if f.reasoning != 0 || f.content != tg {
			t.Errorf("%d reasoning and %d content chunks, want %d content (no parser on the bench path)", f.reasoning, f.content, tg)
		}
		if !strings.HasPrefix(f.text, thinkOpen) || !strings.Contains(f.text, thinkClose) {
			t.Errorf("bench text %q: want the thinking tags as text", f.text)
		}
		if d := f.usage["completion_tokens_details"].(map[string]any); num(d, "reasoning_tokens") != 0 {
			t.Errorf("bench usage %v: want reasoning_tokens 0", f.usage)
		}
	})
	t.Run("whole", func(t *testing.T) {
		resp := post(t, s.URL+"/v1/chat/completions", chatBody(s.Model(), "hello", 500, ""))
		defer resp.Body.Close()
		var r struct {
			Choices []struct {
				Message struct {
					Content          string  `json:"content"`
					ReasoningContent *string `json:"reasoning_content"`
				} `json:"message"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		m := r.Choices[0].Message
		if m.ReasoningContent == nil || CountText(*m.ReasoningContent) != want.n {
			t.Errorf("reasoning_content %v: want %d tokens", m.ReasoningContent, want.n)
		}
		if got := CountText(m.Content) + want.n + 2; got != num(r.Usage, "completion_tokens") {
			t.Errorf("content %d tokens + reasoning %d + 2 tags != completion_tokens %d", CountText(m.Content), want.n, num(r.Usage, "completion_tokens"))
		}
	})
}

// TestReasoningExoFollowsTheCostModel: thinking tokens are decode steps
// like any other: a bench request's generation_tps is the cost model's
// over all its tokens, and its power covers them.
func TestReasoningExoFollowsTheCostModel(t *testing.T) {
	s := reasoningServer(t, Options{})
	p := s.Preset()
	const tg = 30
	r := bench(t, s, prompt(10), tg, "")
	st := r.GenerationStats
	pp := GenerationPromptTokens + MessageOverheadTokens + 11
	if st.GenerationTokens != tg || st.PromptTokens != pp {
		t.Fatalf("generation_tokens %d, prompt_tokens %d; want %d, %d", st.GenerationTokens, st.PromptTokens, tg, pp)
	}
	span := 0.0
	for i := 1; i < tg; i++ {
		span += handDecodeStep(p, 1, pp-1+i)
	}
	if want := float64(tg-1) / span; !within(st.GenerationTPS, want, 0.02) {
		t.Errorf("generation_tps %.2f, the cost model over %d tokens gives %.2f", st.GenerationTPS, tg, want)
	}
	if pu := r.PowerUsage; pu == nil || !within(pu.ElapsedSeconds, r.Sim.LastTokenS-r.Sim.ArrivalS, 1e-6) || pu.GenerationEnergy <= 0 {
		t.Errorf("power_usage %+v: want energy over arrival → last token", pu)
	}
	if CountText(r.Choices[0].Message.Content) != tg {
		t.Errorf("bench content %q: want %d tokens, the thinking included", r.Choices[0].Message.Content, tg)
	}
}

// TestReasoningOllamaNative: message.thinking lines, then content lines;
// eval_count counts the hidden tags and the end of sequence too; think
// false thinks not, and a whole answer carries both texts.
func TestReasoningOllamaNative(t *testing.T) {
	s := reasoningServer(t, Options{Reasoning: ReasoningOptions{HiddenMarkers: true}})
	read := func(body string) (thinking, content int, final map[string]any) {
		t.Helper()
		resp := postOllama(t, s, body)
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		sc := bufio.NewScanner(resp.Body)
		phase := 0 // 0 thinking, 1 content
		for sc.Scan() {
			var m struct {
				Message struct {
					Content  string  `json:"content"`
					Thinking *string `json:"thinking"`
				} `json:"message"`
				Done bool `json:"done"`
			}
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			if m.Done {
				json.Unmarshal(sc.Bytes(), &final)
				continue
			}
			switch th := m.Message.Thinking; {
			case th != nil && m.Message.Content == "":
				if phase > 0 {
					t.Errorf("thinking line %q after content", sc.Text())
				}
				if strings.Contains(*th, "think>") {
					t.Errorf("thinking line %q carries a tag", sc.Text())
				}
				thinking++
			case th == nil && m.Message.Content != "":
				phase = 1
				content++
			default:
				t.Errorf("line %q: want thinking or content", sc.Text())
			}
		}
		return thinking, content, final
	}
	model := `"model":"` + s.Model() + `"`
	th, ct, final := read(`{` + model + `,"messages":[{"role":"user","content":"hello"}]}`)
	want := planOf(s, noControl(), "hello", 42)
	if th != want.n {
		t.Errorf("%d thinking lines, want %d", th, want.n)
	}
	if n := num(final, "eval_count"); final["done_reason"] != "stop" || n != th+ct+2+1 {
		t.Errorf("done_reason %v, eval_count %d: want stop and %d lines + 2 tags + the end of sequence", final["done_reason"], n, th+ct)
	}
	th, _, final = read(`{` + model + `,"messages":[{"role":"user","content":"hello"}],"think":false}`)
	base, _ := Counter{}.Count(context.Background(), userMsgs("hello"))
	if th != 0 || num(final, "prompt_eval_count") != base+EmptyThinkTokens {
		t.Errorf("think false: %d thinking lines, prompt_eval_count %d; want none and %d (the empty thinking block)", th, num(final, "prompt_eval_count"), base+EmptyThinkTokens)
	}
	resp := postOllama(t, s, `{`+model+`,"messages":[{"role":"user","content":"hello"}],"stream":false}`)
	var whole struct {
		Message   struct{ Content, Thinking string } `json:"message"`
		EvalCount int                                `json:"eval_count"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&whole); err != nil {
		t.Fatal(err)
	}
	if CountText(whole.Message.Thinking) != want.n || CountText(whole.Message.Content)+want.n+3 != whole.EvalCount {
		t.Errorf("whole answer thinking %q, content %q, eval_count %d", whole.Message.Thinking, whole.Message.Content, whole.EvalCount)
	}
	resp = postOllama(t, s, `{`+model+`,"messages":[{"role":"user","content":"hello"}],"think":"huge"}`)
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "invalid think value") {
		t.Errorf("think \"huge\": status %d, %s; want 400 invalid think value", resp.StatusCode, b)
	}
}

// TestReasoningLlamaCpp: the llama.cpp profile streams
// delta.reasoning_content then content, and reports no reasoning count.
func TestReasoningLlamaCpp(t *testing.T) {
	s := reasoningServer(t, Options{Profile: LlamaCpp})
	chunks, _ := streamData(t, s.URL+"/v1/chat/completions",
		chatBody(s.Model(), "hello", 500, `,"stream":true,"stream_options":{"include_usage":true}`))
	f := facts(t, chunks, "reasoning_content")
	if diff := cmp.Diff([]string{"role", "reasoning", "content"}, f.kinds); diff != "" {
		t.Errorf("delta kinds (-want +got):\n%s", diff)
	}
	ids := append(lcChatIDs(userMsgs("hello"), true), []int{}...)
	want := s.opts.Reasoning.plan(noControl(), ids, 42)
	if f.reasoning != want.n {
		t.Errorf("%d reasoning chunks, want %d", f.reasoning, want.n)
	}
	if ct := num(f.usage, "completion_tokens"); f.finish != "stop" || ct != f.reasoning+f.content+1 {
		t.Errorf("finish %q, completion_tokens %d: want stop and %d chunks + the end of sequence", f.finish, ct, f.reasoning+f.content)
	}
	if f.usage["completion_tokens_details"] != nil {
		t.Errorf("usage %v: llama.cpp reports no reasoning count", f.usage)
	}
	r := lcPost(t, s, "/v1/chat/completions", chatBody(s.Model(), "hello", 500, `,"chat_template_kwargs":{"enable_thinking":false}`), 200)
	if r.Usage.PromptTokens != len(ids)+EmptyThinkTokens {
		t.Errorf("thinking off: prompt_tokens %d, want %d + the empty thinking block", r.Usage.PromptTokens, len(ids))
	}
}

// reasoningCount streams a chat to the vLLM API with extra fields and
// returns its reasoning chunks, content chunks, finish reason and
// prompt_tokens.
func reasoningCount(t *testing.T, s *Server, content string, maxTokens int, extra string) (reasoning, answer int, finish string, prompt int) {
	t.Helper()
	chunks, _ := streamData(t, s.VLLMURL+"/v1/chat/completions",
		chatBody(s.Model(), content, maxTokens, `,"stream":true,"stream_options":{"include_usage":true}`+extra))
	f := facts(t, chunks, s.reasoningField())
	return f.reasoning, f.content, f.finish, num(f.usage, "prompt_tokens")
}

// TestReasoningControls: the switch turns the thinking off (and renders
// the empty thinking block into the prompt), effort scales it in order, a
// budget caps it, and max_tokens bounds thinking and answer together.
func TestReasoningControls(t *testing.T) {
	s := reasoningServer(t, Options{})
	const content = "tell me"
	base, _ := Counter{}.Count(context.Background(), userMsgs(content))
	drawn := planOf(s, noControl(), content, 42).n

	for _, extra := range []string{
		`,"chat_template_kwargs":{"enable_thinking":false}`,
		`,"chat_template_kwargs":{"thinking":false}`,
		`,"reasoning_effort":"none"`,
	} {
		r, a, finish, pt := reasoningCount(t, s, content, 500, extra)
		if r != 0 || a == 0 || finish != "stop" || pt != base+EmptyThinkTokens {
			t.Errorf("%s: %d reasoning, %d answer chunks, finish %q, prompt_tokens %d; want none, some, stop, %d", extra, r, a, finish, pt, base+EmptyThinkTokens)
		}
	}
	r, _, _, pt := reasoningCount(t, s, content, 500, `,"chat_template_kwargs":{"enable_thinking":true}`)
	if r != drawn || pt != base {
		t.Errorf("enable_thinking true: %d reasoning chunks, prompt_tokens %d; want %d, %d", r, pt, drawn, base)
	}

	var got []int
	for _, e := range []string{"low", "medium", "high"} {
		r, _, _, _ := reasoningCount(t, s, content, 500, `,"reasoning_effort":"`+e+`"`)
		got = append(got, r)
	}
	if !(got[0] < got[1] && got[1] < got[2]) || got[1] != drawn {
		t.Errorf("reasoning chunks at low, medium, high effort: %v; want increasing, medium the drawn %d", got, drawn)
	}

	const budget = 5
	if r, a, _, _ := reasoningCount(t, s, content, 500, fmt.Sprintf(`,"thinking_token_budget":%d`, budget)); r != budget || a == 0 {
		t.Errorf("thinking_token_budget %d: %d reasoning, %d answer chunks; want %d and an answer", budget, r, a, budget)
	}
	sg := reasoningServer(t, Options{Metrics: MetricsSGLang})
	if r, _, _, _ := reasoningCount(t, sg, content, 500, fmt.Sprintf(`,"custom_params":{"thinking_budget":%d}`, budget)); r != budget {
		t.Errorf("SGLang custom_params.thinking_budget %d: %d reasoning chunks", budget, r)
	}
	if r, _, _, _ := reasoningCount(t, sg, content, 500, `,"thinking_token_budget":3`); r != drawn {
		t.Errorf("SGLang takes no thinking_token_budget: %d reasoning chunks, want the drawn %d", r, drawn)
	}

	const maxTok = 7
	if r, a, finish, _ := reasoningCount(t, s, content, maxTok, ""); r != maxTok || a != 0 || finish != "length" {
		t.Errorf("max_tokens %d: %d reasoning, %d answer chunks, finish %q; want %d, 0, length", maxTok, r, a, finish, maxTok)
	}

	resp := post(t, s.VLLMURL+"/v1/chat/completions", chatBody(s.Model(), content, 5, `,"reasoning_effort":"extreme"`))
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("reasoning_effort extreme: status %d, want 400", resp.StatusCode)
	}
	resp = post(t, s.URL+"/v1/chat/completions", chatBody(s.Model(), content, 5, `,"reasoning_effort":"extreme"`))
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("exo reasoning_effort extreme: status %d, want 422", resp.StatusCode)
	}
}

// TestReasoningExoControls: exo's enable_thinking and reasoning_effort,
// resolved as exo resolves them.
func TestReasoningExoControls(t *testing.T) {
	s := reasoningServer(t, Options{})
	base, _ := Counter{}.Count(context.Background(), userMsgs("hi"))
	drawn := planOf(s, noControl(), "hi", 42).n
	for _, tc := range []struct {
		extra     string
		reasoning int
		prompt    int
	}{
		{`,"enable_thinking":false`, 0, base + EmptyThinkTokens},
		{`,"reasoning_effort":"none"`, 0, base + EmptyThinkTokens},
		{`,"enable_thinking":true`, drawn, base},
		{`,"reasoning_effort":"high"`, 2 * drawn, base},
	} {
		chunks, _ := streamData(t, s.URL+"/v1/chat/completions", chatBody(s.Model(), "hi", 500, `,"stream":true`+tc.extra))
		f := facts(t, chunks, "reasoning_content")
		if f.reasoning != tc.reasoning || num(f.usage, "prompt_tokens") != tc.prompt {
			t.Errorf("%s: %d reasoning chunks, prompt_tokens %d; want %d, %d", tc.extra, f.reasoning, num(f.usage, "prompt_tokens"), tc.reasoning, tc.prompt)
		}
	}
}

// varsCounter is a caller's Counter with template variables: it counts
// one token a message, and 100 more when rendered with any variable,
// and records what it was rendered with.
type varsCounter struct {
	vars map[string]any
	seen chan map[string]any
}

func (c varsCounter) Count(ctx context.Context, msgs []promptsize.Message) (int, error) {
	if len(c.vars) > 0 {
		return len(msgs) + 100, nil
	}
	return len(msgs), nil
}

func (c varsCounter) WithTemplateVars(vars map[string]any) promptsize.Counter {
	select {
	case c.seen <- vars:
	default:
	}
	return varsCounter{vars: vars, seen: c.seen}
}

// TestReasoningCountsWithTemplateVars: a caller's Counter that takes
// template variables counts the prompt with the request's, as the
// dialect renders them; the built-in one writes the empty thinking block
// with thinking off, on every route that counts.
func TestReasoningCountsWithTemplateVars(t *testing.T) {
	seen := make(chan map[string]any, 1)
	s := reasoningServer(t, Options{Counter: varsCounter{seen: seen}})
	_, _, _, pt := reasoningCount(t, s, "hi", 50, `,"chat_template_kwargs":{"enable_thinking":false,"custom":1},"reasoning_effort":"low"`)
	if pt != 101 {
		t.Errorf("prompt_tokens %d, want the Counter's count with variables, 101", pt)
	}
	want := map[string]any{"enable_thinking": false, "custom": float64(1), "reasoning_effort": "low"}
	select {
	case got := <-seen:
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("template variables (-want +got):\n%s", diff)
		}
	default:
		t.Error("the Counter was never given the request's template variables")
	}
	if _, _, _, pt := reasoningCount(t, s, "hi", 50, ""); pt != 1 {
		t.Errorf("no variables: prompt_tokens %d, want 1", pt)
	}
	chunks, _ := streamData(t, s.URL+"/v1/chat/completions", chatBody(s.Model(), "hi", 50, `,"stream":true,"reasoning_effort":"low"`))
	if u := facts(t, chunks, "reasoning_content").usage; num(u, "prompt_tokens") != 101 {
		t.Errorf("exo: prompt_tokens %d, want 101", num(u, "prompt_tokens"))
	}
	select {
	case got := <-seen:
		if !cmp.Equal(got, map[string]any{"enable_thinking": true, "thinking": true, "reasoning_effort": "low"}) {
			t.Errorf("exo's template variables %v: want enable_thinking and thinking true with reasoning_effort low", got)
		}
	default:
		t.Error("exo never gave the Counter the request's template variables")
	}

	// The built-in Counter, on the server and in a client's hands.
	b := newFast(t, Options{})
	msgs := userMsgs("some words here")
	on, _ := Counter{}.Count(context.Background(), msgs)
	for _, tc := range []struct {
		vars map[string]any
		want int
	}{
		{nil, on},
		{map[string]any{"enable_thinking": true}, on},
		{map[string]any{"enable_thinking": false}, on + EmptyThinkTokens},
		{map[string]any{"thinking": false}, on + EmptyThinkTokens},
		{map[string]any{"reasoning_effort": "high"}, on},
	} {
		c := b.Counter().(templateVarser).WithTemplateVars(tc.vars)
		n, err := c.Count(context.Background(), msgs)
		if err != nil || n != tc.want {
			t.Errorf("WithTemplateVars(%v).Count = %d, %v; want %d", tc.vars, n, err, tc.want)
		}
		if _, ok := c.(promptsize.ContentLocator); !ok {
			t.Errorf("WithTemplateVars(%v) is no ContentLocator", tc.vars)
		}
		kw, _ := json.Marshal(tc.vars)
		var tok struct{ Count int }
		resp := post(t, b.VLLMURL+"/tokenize", fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"some words here"}],"chat_template_kwargs":%s}`, b.Model(), kw))
		json.NewDecoder(resp.Body).Decode(&tok)
		resp.Body.Close()
		if tok.Count != tc.want {
			t.Errorf("/tokenize with %s: count %d, want %d", kw, tok.Count, tc.want)
		}
	}
	lc := llamaCppCounter{}.WithTemplateVars(map[string]any{"enable_thinking": false})
	if n, _ := lc.Count(context.Background(), msgs); n != on+1+EmptyThinkTokens {
		t.Errorf("the llama.cpp Counter with thinking off counts %d, want %d", n, on+1+EmptyThinkTokens)
	}
}

// TestReasoningOffByDefault: the zero Options stream no reasoning, add no
// reasoning field to a whole answer and no count to usage, whatever a
// request asks.
func TestReasoningOffByDefault(t *testing.T) {
	s := newFast(t, Options{NaturalLength: 8})
	chunks, _ := streamData(t, s.VLLMURL+"/v1/chat/completions",
		chatBody(s.Model(), "hi", 50, `,"stream":true,"stream_options":{"include_usage":true},"reasoning_effort":"high"`))
	f := facts(t, chunks, "reasoning")
	if f.fields["reasoning"]+f.fields["reasoning_content"] > 0 || f.usage["completion_tokens_details"] != nil {
		t.Errorf("deltas %v, usage %v: want no reasoning", f.fields, f.usage)
	}
	if num(f.usage, "completion_tokens") != f.content {
		t.Errorf("completion_tokens %d for %d content chunks", num(f.usage, "completion_tokens"), f.content)
	}
	resp := post(t, s.VLLMURL+"/v1/chat/completions", chatBody(s.Model(), "hi", 50, ""))
	defer resp.Body.Close()
	var r struct {
		Choices []struct{ Message map[string]any } `json:"choices"`
	}
	json.NewDecoder(resp.Body).Decode(&r)
	keys := make([]string, 0)
	for k := range r.Choices[0].Message {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if diff := cmp.Diff([]string{"content", "role", "tool_calls"}, keys); diff != "" {
		t.Errorf("message keys (-want +got):\n%s", diff)
	}
}

// TestReasoningOptionsCheck: options no server can run with are refused.
func TestReasoningOptionsCheck(t *testing.T) {
	for _, o := range []ReasoningOptions{
		{MinTokens: -1},
		{MinTokens: 30, MaxTokens: 10},
		{API: "tgi"},
		{VLLMVersion: "eleven"},
	} {
		if err := (Options{Reasoning: o}).check(); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if err := (Options{Reasoning: ReasoningOptions{Enabled: true, VLLMVersion: "v0.10.1", API: "SGLang"}}).check(); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

// FuzzReasoningControls: the thinking controls of every dialect, read
// from any request body, never panic, and what they give is in range: a
// budget of -1 or more, an effort the server knows, thinking off when the
// variables turn it off.
func FuzzReasoningControls(f *testing.F) {
	for _, s := range []string{
		`{"chat_template_kwargs":{"enable_thinking":false},"reasoning_effort":"high"}`,
		`{"enable_thinking":true,"reasoning_effort":"none"}`,
		`{"reasoning":{"effort":"low"},"custom_params":{"thinking_budget":12}}`,
		`{"thinking_token_budget":-4,"thinking_budget_tokens":"x"}`,
		`{"think":"max"}`, `{"think":false}`, `{"think":3}`, `{}`, `null`,
	} {
		f.Add(s)
	}
	o := ReasoningOptions{Enabled: true}
	f.Fuzz(func(t *testing.T, body string) {
		var rf reasoningFields
		if json.Unmarshal([]byte(body), &rf) != nil {
			return
		}
		check := func(name string, c thinkControl, err error) {
			if err != nil {
				return
			}
			if c.budget < -1 || (c.effort != "" && !validEffort(c.effort)) {
				t.Errorf("%s(%s): budget %d, effort %q", name, body, c.budget, c.effort)
			}
			if thinkingOffVars(c.vars) && !c.off {
				t.Errorf("%s(%s): variables %v turn thinking off, the control does not", name, body, c.vars)
			}
			if p := o.plan(c, []int{1, 2, 3}, 42); p.on == c.off || p.n < 0 || (c.budget >= 0 && p.n > c.budget) {
				t.Errorf("%s(%s): plan %+v for control %+v", name, body, p, c)
			}
		}
		for _, api := range []ReasoningAPI{ReasoningVLLM, ReasoningSGLang, ReasoningOllama} {
			c, err := openAIControl(api, rf)
			check(string(api), c, err)
		}
		c, err := exoControl(rf)
		check("exo", c, err)
		c, err = llamaCppControl(rf)
		check("llamacpp", c, err)
		var req ollamaChatRequest
		if json.Unmarshal([]byte(body), &req) == nil {
			check("ollama", ollamaControl(req.Think), nil)
		}
	})
}

// TestReasoningCutByMaxTokens: a thinking that max_tokens cuts leaves no
// answer: vLLM's whole answer has only its reasoning and content null;
// exo sends the token that carries the finish reason as content, and
// counts the reasoning without it.
func TestReasoningCutByMaxTokens(t *testing.T) {
	s := reasoningServer(t, Options{})
	const maxTok = 5
	resp := post(t, s.VLLMURL+"/v1/chat/completions", chatBody(s.Model(), "hi", maxTok, ""))
	defer resp.Body.Close()
	var r struct {
		Choices []struct {
			FinishReason string         `json:"finish_reason"`
			Message      map[string]any `json:"message"`
		} `json:"choices"`
		Usage map[string]any `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	m := r.Choices[0].Message
	if th, _ := m["reasoning"].(string); CountText(th) != maxTok || m["content"] != nil || r.Choices[0].FinishReason != "length" {
		t.Errorf("message %v, finish %q: want %d reasoning tokens, content null, length", m, r.Choices[0].FinishReason, maxTok)
	}
	if d, _ := r.Usage["completion_tokens_details"].(map[string]any); num(d, "reasoning_tokens") != maxTok {
		t.Errorf("usage %v: want reasoning_tokens %d", r.Usage, maxTok)
	}
	chunks, _ := streamData(t, s.URL+"/v1/chat/completions", chatBody(s.Model(), "hi", maxTok, `,"stream":true`))
	f := facts(t, chunks, "reasoning_content")
	d := f.usage["completion_tokens_details"].(map[string]any)
	if f.reasoning != maxTok-1 || f.content != 1 || num(d, "reasoning_tokens") != maxTok-1 || f.finish != "length" {
		t.Errorf("exo: %d reasoning, %d content chunks, reasoning_tokens %d, finish %q; want %d, 1, %d, length",
			f.reasoning, f.content, num(d, "reasoning_tokens"), f.finish, maxTok-1, maxTok-1)
	}
}

// TestReasoningChunksAndContinuousUsage: chunks of several tokens end
// where the kind changes, and continuous usage counts every generated
// token, the hidden tags too, so it runs ahead of the sent text by the
// tags once they are generated.
func TestReasoningChunksAndContinuousUsage(t *testing.T) {
	s := reasoningServer(t, Options{StreamChunk: 4, Reasoning: ReasoningOptions{HiddenMarkers: true}})
	chunks, _ := streamData(t, s.VLLMURL+"/v1/chat/completions",
		chatBody(s.Model(), "hi", 500, `,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}`))
	plan := planOf(s, noControl(), "hi", 42)
	sent := 0
	for _, c := range chunks {
		choices, _ := c["choices"].([]any)
		if len(choices) == 0 {
			continue
		}
		d := choices[0].(map[string]any)["delta"].(map[string]any)
		r, _ := d["reasoning"].(string)
		a, _ := d["content"].(string)
		if r != "" && a != "" {
			t.Fatalf("chunk %v carries both kinds", c)
		}
		n := CountText(r + a)
		if r+a == "" {
			n = 0
		}
		if n > 4 {
			t.Errorf("chunk %v carries %d tokens, StreamChunk is 4", c, n)
		}
		sent += n
		u := c["usage"].(map[string]any)
		hidden := 1 // <think>, the first token generated
		if sent > plan.n || (sent == plan.n && a != "") {
			hidden = 2
		}
		if choices[0].(map[string]any)["finish_reason"] == nil && n > 0 && num(u, "completion_tokens") != sent+hidden {
			t.Errorf("after %d sent tokens completion_tokens %d, want %d (%d hidden tags generated)", sent, num(u, "completion_tokens"), sent+hidden, hidden)
		}
	}
	f := facts(t, chunks, "reasoning")
	if diff := cmp.Diff([]string{"role", "reasoning", "content"}, f.kinds); diff != "" {
		t.Errorf("delta kinds (-want +got):\n%s", diff)
	}
	if sent != CountText(f.text) || num(f.usage, "completion_tokens") != sent+2 {
		t.Errorf("%d tokens sent, text of %d, completion_tokens %d; want the sent tokens + 2", sent, CountText(f.text), num(f.usage, "completion_tokens"))
	}
}
