package openai

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/adaptertest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden is what a recorded stream parses into, times in milliseconds of
// the step clock.
type golden struct {
	Text         string                    `json:"text"`
	ResponseID   string                    `json:"response_id"`
	Model        string                    `json:"model"`
	FinishReason string                    `json:"finish_reason"`
	Usage        *engine.Usage             `json:"usage"`
	Stats        *engine.ServerStats       `json:"stats,omitempty"`
	Chunks       []adaptertest.GoldenChunk `json:"chunks"`
	HiddenTokens int                       `json:"hidden_tokens,omitempty"`
	EndMS        int64                     `json:"end_ms"`
	Warnings     []string                  `json:"warnings"`
	ErrorKind    engine.Kind               `json:"error_kind,omitempty"`
	Error        string                    `json:"error,omitempty"`
}

// parseRecorded reads a recorded stream through readStream with a step
// clock and returns what it produced.
func parseRecorded(t *testing.T, body []byte, opts *Options, req engine.Request) (engine.Result, golden, error) {
	t.Helper()
	clk := adaptertest.NewStepClock()
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.Now = clk.Now
	c, err := New("http://127.0.0.1:9", &o)
	if err != nil {
		t.Fatal(err)
	}
	var res engine.Result
	rerr := c.readStream(context.Background(), adaptertest.NewFeeder(body, "\n\n"), nil, req, &res)
	g := golden{
		Text: res.Text, ResponseID: res.ResponseID, Model: res.Model, FinishReason: res.FinishReason,
		Usage: res.Usage, Stats: res.ServerStats, HiddenTokens: res.Trace.HiddenTokens, EndMS: res.Trace.End.Sub(clk.Base).Milliseconds(),
		Chunks: adaptertest.GoldenChunks(clk.Base, res), Warnings: adaptertest.Strings(res.Warnings),
	}
	if rerr != nil {
		g.ErrorKind = engine.KindOf(rerr)
		g.Error = rerr.Error()
	}
	return res, g, rerr
}

// TestGoldenStreams parses recorded bodies in the exact shapes of vLLM,
// SGLang, llama.cpp and Ollama and compares the results with golden files.
// The token counts are also asserted by hand below each case: they follow
// from the usage blocks in the recordings.
func TestGoldenStreams(t *testing.T) {
	wordCount := func(_ context.Context, s string) (int, error) { return len(strings.Fields(s)), nil }
	cases := []struct {
		name   string
		opts   *Options
		req    engine.Request
		tokens []int // hand-computed from the recording
		warns  []error
		kind   engine.Kind
		hidden int
	}{
		// completion_tokens 1,2,4,5,6,7,8 on the content chunks: " brown
		// fox" carried two tokens.
		{name: "vllm_continuous", req: engine.Request{MaxTokens: 8, IgnoreEOS: true},
			tokens: []int{1, 1, 2, 1, 1, 1, 1}},
		// The first text-less token (completion_tokens 1) is credited to
		// "Okay" (2 − 0); then 4−2, 5−4, 8−5, 10−8; the end-of-sequence
		// token (11) came on a text-less chunk with finish_reason "stop":
		// it goes to the last chunk, so that the trace's total is the
		// server's 11.
		{name: "vllm_reasoning", req: engine.Request{MaxTokens: 32},
			tokens: []int{2, 2, 1, 3, 3}},
		// Usage on content chunks only, null elsewhere: 1, 2−1, 5−2, 7−5.
		{name: "sglang_continuous", req: engine.Request{MaxTokens: 7, IgnoreEOS: true},
			tokens: []int{1, 1, 3, 2}},
		// Usage at the end only, 6 tokens over 6 content chunks: one each,
		// exact.
		{name: "llamacpp", req: engine.Request{MaxTokens: 6, IgnoreEOS: true},
			tokens: []int{1, 1, 1, 1, 1, 1}},
		// Usage at the end only, 7 tokens over 4 content chunks (reasoning
		// "Short", " answer.", answer "Four", "."), no counter: one each,
		// the end of sequence (finish_reason "stop") to the last; the
		// stream's reasoning came in delta.reasoning, so the 2 left are the
		// <think> and </think> Ollama's thinking parser swallowed: hidden,
		// in no chunk, and a warning says so.
		{name: "ollama", req: engine.Request{MaxTokens: 64},
			tokens: []int{1, 1, 1, 2}, warns: []error{ErrHiddenTokens}, hidden: 2},
		// The same with a word-counting CountText: prefixes "Short",
		// "Short answer.", "Short answer.Four", "Short answer.Four." count
		// 1, 2, 2, 2 words: tokens max(1, 1−0), max(1, 2−1), max(1, 2−2),
		// max(1, 2−3) = 1, 1, 1, 1, no extra token; usage says 7: with
		// finish_reason "stop" one goes to the last chunk (the end of
		// sequence), the two the count found no place for are hidden.
		{name: "ollama_counted", opts: &Options{CountText: wordCount}, req: engine.Request{MaxTokens: 64},
			tokens: []int{1, 1, 1, 2}, warns: []error{ErrHiddenTokens}, hidden: 2},
		// What came before an error is kept: "Once" had no usage.
		{name: "sglang_stream_error", req: engine.Request{MaxTokens: 16},
			tokens: []int{0}, kind: engine.KindStreamError}, // a failed request: no note on its counts
		// "The" had completion_tokens 1.
		{name: "vllm_truncated", req: engine.Request{MaxTokens: 8},
			tokens: []int{1}, kind: engine.KindTruncated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := strings.TrimSuffix(tc.name, "_counted")
			body, err := os.ReadFile(filepath.Join("testdata", rec+".sse"))
			if err != nil {
				t.Fatal(err)
			}
			res, g, rerr := parseRecorded(t, body, tc.opts, tc.req)
			if got := engine.KindOf(rerr); got != tc.kind {
				t.Fatalf("error kind %q (%v), want %q", got, rerr, tc.kind)
			}
			adaptertest.CheckChunks(t, res, tc.tokens, tc.warns)
			if res.Trace.HiddenTokens != tc.hidden {
				t.Errorf("%d hidden tokens, want %d", res.Trace.HiddenTokens, tc.hidden)
			}
			adaptertest.CheckGolden(t, tc.name, g, *update)
		})
	}
}
