package exo

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/timing"
)

// A thinking model's stream, written as exo's generate_chat_stream writes
// it (src/exo/api/adapters/chat_completions.py@b5375f8): a thinking
// token's chunk carries delta.reasoning_content, the others content, one
// chunk per token but for <think> and </think>, which parse_thinking_models
// swallows; usage on the finish chunk, with reasoning_tokens the
// is_thinking tokens (count_reasoning_tokens).
func TestCompleteStreamThinking(t *testing.T) {
	rec := &recorder{body: fixture(t, "stream_thinking.sse"), contentType: "text/event-stream"}
	opts := fastOptions()
	opts.Now = newStepClock().Now
	c, _ := newTestClient(t, rec, opts)
	on := true
	req := engine.Request{Model: "mlx-community/Qwen3-8B-4bit", Messages: []engine.Message{{Role: "user", Content: "2+2?"}},
		MaxTokens: 64, Stream: true, Thinking: &engine.Thinking{Enabled: &on, Effort: "low", Budget: 32}}
	res, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if rec.bodies[0]["enable_thinking"] != true || rec.bodies[0]["reasoning_effort"] != "low" {
		t.Errorf("body %v: want enable_thinking true and reasoning_effort low", rec.bodies[0])
	}
	var kinds []timing.ChunkKind
	var tokens []int
	for _, ch := range res.Trace.Chunks {
		kinds = append(kinds, ch.Kind)
		tokens = append(tokens, ch.Tokens)
	}
	r, a := timing.Reasoning, timing.Answer
	if diff := cmp.Diff([]timing.ChunkKind{r, r, r, r, r, a, a, a, a}, kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{1, 1, 1, 1, 1, 1, 1, 1, 1}, tokens); diff != "" {
		t.Errorf("tokens (-want +got):\n%s", diff)
	}
	// 11 counted, 9 chunks: <think> and </think>.
	if res.Trace.HiddenTokens != 2 {
		t.Errorf("%d hidden tokens, want 2", res.Trace.HiddenTokens)
	}
	if res.Text != "\nOkay, so two\n\nFour." {
		t.Errorf("text %q", res.Text)
	}
	// The budget is not sent (ErrUnsupported); the hidden tokens are
	// said; reasoning_tokens 5 agrees with the stream; generation_stats'
	// 11 agrees with the chunks and the hidden tokens.
	if len(res.Warnings) != 2 || !errors.Is(res.Warnings[0], ErrUnsupported) || !errors.Is(res.Warnings[1], ErrHiddenTokens) {
		t.Errorf("warnings %v, want ErrUnsupported then ErrHiddenTokens", res.Warnings)
	}
}

// exo's tool parser holds a call's tokens back and sends the call as one
// chunk: the usage's tokens beyond the stream's other chunks are its.
func TestCompleteStreamToolCall(t *testing.T) {
	body := sseBody(
		`data: {"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Let me check."}}]}`,
		`data: {"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"id":"call_0f3a","index":0,"type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":120,"completion_tokens":19,"total_tokens":139}}`,
		`data: [DONE]`)
	rec := &recorder{body: body, contentType: "text/event-stream"}
	c, _ := newTestClient(t, rec, nil)
	res, err := c.Complete(context.Background(), engine.Request{Model: "m", Messages: []engine.Message{{Role: "user", Content: "weather?"}}, MaxTokens: 64, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Trace.Chunks) != 2 || res.Trace.Chunks[1].Kind != timing.ToolCall || res.Trace.Chunks[1].Tokens != 18 || res.Trace.HiddenTokens != 0 {
		t.Errorf("chunks %+v, hidden %d: want an answer chunk, then a tool call of 18 tokens", res.Trace.Chunks, res.Trace.HiddenTokens)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings %v", res.Warnings)
	}
}

func TestThinkingBody(t *testing.T) {
	off := false
	b, warns, err := body(engine.Request{Model: "m", Thinking: &engine.Thinking{Enabled: &off}, Extra: map[string]any{"reasoning_effort": "none"}})
	if err != nil || len(warns) != 0 {
		t.Fatalf("%v %v", err, warns)
	}
	if got := string(b); got != `{"enable_thinking":false,"messages":[],"model":"m","reasoning_effort":"none","stream":false}` {
		t.Errorf("body %s", got)
	}
}
