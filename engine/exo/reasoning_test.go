package exo

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/adaptertest"
	"github.com/inferbench/inferbench/engine/sim"
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

// Each side's TPOT of the thinking stream, read one event a read on a
// clock that steps a millisecond a reading. The fixture has no truth to
// extend, so the figures are computed here by hand from its instants:
// the keep-alive comment at 1 ms, the 5 reasoning chunks at 2 to 6 ms, the
// 4 answer chunks at 7 to 10 ms, generation_stats at 11 ms, [DONE] (End)
// at 12 ms, one token a chunk and no first-chunk anchor. The reasoning's
// 4 tokens after its first took 1 ms each: 4/4 = 1 ms. The answer's first
// token (its gap from the reasoning left out) is followed by 3 of 1 ms
// each, then the 2 ms to End: (3 + 2)/3 ms. <think> and </think>, counted
// but never sent, are in neither.
func TestStreamThinkingSideTPOT(t *testing.T) {
	opts := fastOptions()
	clk := newStepClock()
	start := clk.t
	opts.Now = clk.Now
	c, err := New("http://127.0.0.1:9", opts)
	if err != nil {
		t.Fatal(err)
	}
	resp := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(adaptertest.NewFeeder(fixture(t, "stream_thinking.sse"), "\n\n"))}
	var res engine.Result
	if err := c.readStream(context.Background(), "read", nil, engine.Request{MaxTokens: 64, Stream: true}, resp, &res); err != nil {
		t.Fatal(err)
	}
	tr := res.Trace
	since := func(at time.Time) time.Duration { return at.Sub(start) }
	// The instants the hand computation rests on.
	if len(tr.Chunks) != 9 || !tr.FirstChunk.IsZero() || since(tr.End) != 12*time.Millisecond {
		t.Fatalf("%d chunks, anchor %v, End at %v: want 9, none, 12ms", len(tr.Chunks), !tr.FirstChunk.IsZero(), since(tr.End))
	}
	for i, ch := range tr.Chunks {
		if want := time.Duration(2+i) * time.Millisecond; since(ch.At) != want || ch.Tokens != 1 {
			t.Fatalf("chunk %d at %v with %d tokens, want at %v with 1", i, since(ch.At), ch.Tokens, want)
		}
	}
	if got, err := tr.TPOTReasoning(); err != nil || got != time.Millisecond {
		t.Errorf("TPOT of the reasoning %v (%v), want 1ms", got, err)
	}
	if got, err := tr.TPOTAnswer(); err != nil || got != 5*time.Millisecond/3 {
		t.Errorf("TPOT of the answer %v (%v), want %v", got, err, 5*time.Millisecond/3)
	}
}

// exo's bench path runs no output parser: a thinking model's block
// arrives as content, the markers visible. Against the embedded engine
// in its reasoning mode, the streamed bench answer's block is read as
// reasoning chunks, then the answer's, every token in one or the other;
// NoThinkTags leaves it all answer.
func TestBenchStreamThinkInContent(t *testing.T) {
	s := newSim(t, sim.Options{Reasoning: sim.ReasoningOptions{Enabled: true, MinTokens: 8, MaxTokens: 16, HiddenMarkers: true}})
	on := true
	req := engine.Request{Model: s.Model(), Messages: []engine.Message{{Role: "user", Content: "2+2?"}},
		MaxTokens: 40, IgnoreEOS: true, Stream: true, Thinking: &engine.Thinking{Enabled: &on}}
	for _, noTags := range []bool{false, true} {
		opts := fastOptions()
		opts.NoThinkTags = noTags
		c := adaptertest.NewClient(t, New, s.URL, opts)
		res, err := c.Complete(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Text, "</think>") {
			t.Fatalf("text %q: want the bench path's visible </think>", res.Text)
		}
		var reasoning, answer int
		for i, ch := range res.Trace.Chunks {
			switch {
			case ch.Kind == timing.Reasoning && answer == 0:
				reasoning += ch.Tokens
			case ch.Kind == timing.Answer:
				answer += ch.Tokens
			default:
				t.Fatalf("chunk %d of kind %v after %d answer tokens: want reasoning then answer", i, ch.Kind, answer)
			}
		}
		if res.Usage == nil || reasoning+answer != res.Usage.CompletionTokens || res.Trace.HiddenTokens != 0 {
			t.Fatalf("%d reasoning + %d answer tokens, %d hidden, usage %+v: want the completion tokens in the chunks", reasoning, answer, res.Trace.HiddenTokens, res.Usage)
		}
		if noTags {
			if reasoning != 0 {
				t.Errorf("NoThinkTags: %d reasoning tokens, want none", reasoning)
			}
		} else if reasoning < 8+2 || reasoning > 16+2 || answer == 0 {
			// The drawn thinking, its two markers included.
			t.Errorf("%d reasoning and %d answer tokens: want 10 to 18 reasoning, some answer", reasoning, answer)
		}
		for _, w := range res.Warnings {
			if errors.Is(w, ErrReasoningTokens) || errors.Is(w, ErrHiddenTokens) {
				t.Errorf("warning %v", w)
			}
		}
	}
}
