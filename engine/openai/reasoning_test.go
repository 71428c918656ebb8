package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/adaptertest"
	"github.com/inferbench/inferbench/timing"
)

func TestThinkingFields(t *testing.T) {
	off, on := false, true
	cases := []struct {
		name  string
		fl    Flavour
		th    engine.Thinking
		extra map[string]any
		want  map[string]any // fields beyond model, messages, stream and stream_options
		warns int
	}{
		{"generic off", FlavourGeneric, engine.Thinking{Enabled: &off},
			nil, map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": false, "thinking": false}}, 0},
		{"vllm effort budget", FlavourVLLM, engine.Thinking{Enabled: &on, Effort: "high", Budget: 512}, nil,
			map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": true, "thinking": true, "reasoning_effort": "high"},
				"reasoning_effort": "high", "thinking_token_budget": 512.0}, 0},
		{"llamacpp budget", FlavourLlamaCpp, engine.Thinking{Budget: 256}, nil,
			map[string]any{"thinking_budget_tokens": 256.0}, 0},
		{"generic budget", FlavourGeneric, engine.Thinking{Budget: 64}, nil,
			map[string]any{"thinking_budget_tokens": 64.0, "thinking_token_budget": 64.0}, 0},
		{"sglang budget", FlavourSGLang, engine.Thinking{Effort: "low", Budget: 64}, nil,
			map[string]any{"chat_template_kwargs": map[string]any{"reasoning_effort": "low"}, "reasoning_effort": "low"}, 1},
		{"ollama off", FlavourOllama, engine.Thinking{Enabled: &off, Budget: 64}, nil,
			map[string]any{"reasoning_effort": "none"}, 1},
		{"ollama on", FlavourOllama, engine.Thinking{Enabled: &on}, nil, map[string]any{}, 0},
		{"ollama effort", FlavourOllama, engine.Thinking{Enabled: &on, Effort: "medium"}, nil,
			map[string]any{"reasoning_effort": "medium"}, 0},
		{"openai", FlavourOpenAI, engine.Thinking{Enabled: &on, Effort: "low", Budget: 9}, nil,
			map[string]any{"reasoning_effort": "low"}, 2},
		{"extra overrides", FlavourVLLM, engine.Thinking{Enabled: &off},
			map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": true}},
			map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": true}}, 0},
		{"nothing set", FlavourVLLM, engine.Thinking{}, nil, map[string]any{}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, "http://127.0.0.1:9", &Options{Flavour: tc.fl, NoStreamUsage: true})
			th := tc.th
			b, warns, err := c.requestBody(engine.Request{Model: "m", Thinking: &th, Extra: tc.extra}, "")
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"model": "m", "messages": []any{}, "stream": false}
			for k, v := range tc.want {
				want[k] = v
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if len(warns) != tc.warns {
				t.Errorf("warnings %v, want %d", warns, tc.warns)
			}
			for _, w := range warns {
				if !errors.Is(w, ErrUnsupported) {
					t.Errorf("warning %v does not wrap ErrUnsupported", w)
				}
			}
		})
	}
	c := newClient(t, "http://127.0.0.1:9", nil)
	if _, _, err := c.requestBody(engine.Request{Thinking: &engine.Thinking{Budget: -1}}, ""); engine.KindOf(err) != engine.KindOther || !strings.Contains(err.Error(), "Budget=-1") {
		t.Errorf("a negative budget: %v, want an error naming it", err)
	}
}

// readEvents reads the events, one per read of a step clock, and returns
// the result and the clock's base.
func readEvents(t *testing.T, o *Options, events ...string) (engine.Result, time.Time) {
	t.Helper()
	clk := adaptertest.NewStepClock()
	opts := Options{}
	if o != nil {
		opts = *o
	}
	opts.Now = clk.Now
	c, err := New("http://127.0.0.1:9", &opts)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	var res engine.Result
	if err := c.readStream(context.Background(), adaptertest.NewFeeder([]byte(b.String()), "\n\n"), nil, engine.Request{MaxTokens: 64}, &res); err != nil {
		t.Fatal(err)
	}
	return res, clk.Base
}

// A delta that carries reasoning, content and a tool call is three chunks
// at its instant, in that order, its usage closing the last; the tool
// call's arguments are generated text, counted like any other.
func TestChunkOfSeveralKinds(t *testing.T) {
	res, _ := readEvents(t, nil,
		`{"choices":[{"index":0,"delta":{"reasoning":"Hm"}}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`,
		`{"choices":[{"index":0,"delta":{"reasoning":".","content":"Calling","tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":6,"total_tokens":9}}`,
	)
	adaptertest.CheckKinds(t, res, []timing.ChunkKind{timing.Reasoning, timing.Reasoning, timing.Answer, timing.ToolCall})
	ch := res.Trace.Chunks
	if !ch[1].At.Equal(ch[2].At) || !ch[2].At.Equal(ch[3].At) || ch[0].At.Equal(ch[1].At) {
		t.Errorf("instants %v: want the second server chunk's three at one instant after the first's", ch)
	}
	// 1, then the step's 4 over three chunks: one each, the one more to
	// the last of the span by the usual rule; the end of the stream's 1
	// to the last chunk.
	if got, want := res.Trace.Tokens(), 6; got != want {
		t.Errorf("%d tokens, want %d", got, want)
	}
	if res.Text != "Hm.Callingf{}" {
		t.Errorf("text %q, want the reasoning, the content and the call in order", res.Text)
	}
}

// SGLang writes a step the reasoning parser split as two chunks with one
// cumulative count: two chunks of their kinds, the step's tokens shared.
// Two chunks of one kind with one count stay one.
func TestSameCountOtherKind(t *testing.T) {
	res, _ := readEvents(t, nil,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"so"}}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
		`{"choices":[{"index":0,"delta":{"content":"Four"}}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
		`{"choices":[{"index":0,"delta":{"content":"."}}],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}`,
		`{"choices":[{"index":0,"delta":{"content":"!"}}],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}`,
	)
	adaptertest.CheckKinds(t, res, []timing.ChunkKind{timing.Reasoning, timing.Answer, timing.Answer})
	adaptertest.CheckChunks(t, res, []int{1, 1, 1}, nil)
}

// A server without a reasoning parser leaves the block in the content:
// its chunks are reasoning; one that holds the block's end and answer text
// is split at its instant when it carried two tokens or more.
func TestThinkInContent(t *testing.T) {
	ev := func(content string, cum int) string {
		return fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":%q}}],"usage":{"prompt_tokens":3,"completion_tokens":%d,"total_tokens":%d}}`, content, cum, cum+3)
	}
	events := []string{ev("<think>", 1), ev("hm", 2), ev("</think>\n\nFour", 5), ev(".", 6)}
	res, _ := readEvents(t, nil, events...)
	adaptertest.CheckKinds(t, res, []timing.ChunkKind{timing.Reasoning, timing.Reasoning, timing.Reasoning, timing.Answer, timing.Answer})
	// "</think>\n\nFour" carried 3 tokens: 8 of its 14 bytes are the
	// marker, round(3 × 8/14) = 2 reasoning and 1 answer, an estimate.
	adaptertest.CheckChunks(t, res, []int{1, 1, 2, 1, 1}, []error{ErrEstimatedTokens})
	if ch := res.Trace.Chunks; !ch[2].At.Equal(ch[3].At) {
		t.Errorf("split chunk at %v and %v, want one instant", ch[2].At, ch[3].At)
	}

	res, _ = readEvents(t, &Options{NoThinkTags: true}, events...)
	adaptertest.CheckKinds(t, res, []timing.ChunkKind{timing.Answer, timing.Answer, timing.Answer, timing.Answer})

	// One token holding both stays an answer chunk: the answer's first
	// text is in it.
	res, _ = readEvents(t, nil, ev("hm", 1), ev("</think>Four", 2))
	adaptertest.CheckKinds(t, res, []timing.ChunkKind{timing.Reasoning, timing.Answer})

	// A server with a reasoning parser: its content is the answer,
	// whatever it holds.
	res, _ = readEvents(t, nil,
		`{"choices":[{"index":0,"delta":{"reasoning":"hm"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"<think>quoted</think>"}}]}`)
	adaptertest.CheckKinds(t, res, []timing.ChunkKind{timing.Reasoning, timing.Answer})
}

func TestReasoningWarning(t *testing.T) {
	n := func(k int) *int { return &k }
	r := func(tokens int) timing.Chunk { return timing.Chunk{Tokens: tokens, Kind: timing.Reasoning} }
	a := timing.Chunk{Tokens: 1}
	for _, tc := range []struct {
		name   string
		chunks []timing.Chunk
		server *int
		warn   bool
	}{
		{"not said", []timing.Chunk{r(1), a}, nil, false},
		{"equal", []timing.Chunk{r(1), r(2), a}, n(3), false},
		{"the opening marker in the first chunk", []timing.Chunk{r(2), r(1), a}, n(2), false},
		{"harmony's three header tokens", []timing.Chunk{r(4), r(1), a}, n(2), false},
		{"more than the first chunk explains", []timing.Chunk{r(2), r(3), a}, n(3), true},
		{"fewer", []timing.Chunk{r(1), a}, n(2), true},
		{"reasoning the stream never showed", []timing.Chunk{a}, n(5), true},
		{"none said, none seen", []timing.Chunk{a}, n(0), false},
	} {
		w := reasoningWarning(tc.chunks, &engine.Usage{ReasoningTokens: tc.server})
		if (w != nil) != tc.warn || (w != nil && !errors.Is(w, ErrReasoningTokens)) {
			t.Errorf("%s: %v, want a warning wrapping ErrReasoningTokens: %v", tc.name, w, tc.warn)
		}
	}
}

// The hidden markers of a reasoning stream without per-chunk usage stay
// out of the chunks; a stream that states every count hides nothing.
func TestHiddenTokens(t *testing.T) {
	reasoning := func(s string) string {
		return fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":"","reasoning":%q}}]}`, s)
	}
	content := func(s string) string { return fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":%q}}]}`, s) }
	final := `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":9,"total_tokens":12}}`
	finish := `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	res, _ := readEvents(t, nil, reasoning("a"), reasoning("b"), content("c"), content("d"), finish, final)
	// 9 = 4 chunks + the end of sequence + 4 hidden (Qwen3 on Ollama:
	// <think>, its newline, </think>, its blank line).
	if res.Trace.HiddenTokens != 4 || res.Trace.Tokens() != 5 {
		t.Errorf("%d hidden, %d in chunks; want 4 and 5", res.Trace.HiddenTokens, res.Trace.Tokens())
	}
	adaptertest.CheckChunks(t, res, []int{1, 1, 1, 2}, []error{ErrHiddenTokens})

	// No reasoning: the same surplus is text held back, placed as before.
	res, _ = readEvents(t, nil, content("a"), content("b"), content("c"), content("d"), finish, final)
	if res.Trace.HiddenTokens != 0 || res.Trace.Tokens() != 9 {
		t.Errorf("%d hidden, %d in chunks; want 0 and 9", res.Trace.HiddenTokens, res.Trace.Tokens())
	}
}
