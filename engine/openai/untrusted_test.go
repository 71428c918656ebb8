package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/engine"
)

// chunkWithUsage is a content chunk carrying cumulative completion tokens.
func chunkWithUsage(text string, completion int) string {
	return fmt.Sprintf(`data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"content":%q}}],"usage":{"prompt_tokens":9,"completion_tokens":%d,"total_tokens":%d}}`+"\n\n", text, completion, 9+completion)
}

// TestImplausibleStreamUsage: a usage count the request cannot explain
// (negative, falling, past MaxPlausibleCount(MaxTokens)) ends the stream
// as an implausible_usage error naming both numbers, with no chunks and
// no usage left in the result, and without allocating per claimed token.
func TestImplausibleStreamUsage(t *testing.T) {
	cases := []struct {
		name string
		body string
		want []string // in the message
	}{
		{"1e18", chunkWithUsage("a", 1) + chunkWithUsage("b", 1000000000000000000), []string{"1000000000000000000", "32"}},
		{"2e7", chunkWithUsage("a", 1) + chunkWithUsage("b", 20000000), []string{"20000000", "32"}},
		{"negative", chunkWithUsage("a", -3), []string{"-3", "negative"}},
		{"falling", chunkWithUsage("a", 5) + chunkWithUsage("b", 2), []string{"fell from 5 to 2"}},
		{"negative prompt", `data: {"choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":-461,"completion_tokens":1,"total_tokens":1}}` + "\n\n", []string{"prompt_tokens", "-461"}},
		{"final usage", chunkWithUsage("a", 1) + `data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":900,"total_tokens":909}}` + "\n\n", []string{"900", "32"}},
		{"timings", `data: {"choices":[{"index":0,"delta":{"content":"a"}}]}` + "\n\n" + `data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10},"timings":{"prompt_n":9,"prompt_ms":1.5,"predicted_n":2000000000000000000,"predicted_ms":10}}` + "\n\n", []string{"timings.predicted_n", "2000000000000000000"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, _, err := parseRecorded(t, []byte(tc.body+"data: [DONE]\n\n"), nil, engine.Request{MaxTokens: 16})
			if engine.KindOf(err) != engine.KindImplausibleUsage {
				t.Fatalf("error %v, want kind implausible_usage", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if len(res.Trace.Chunks) != 0 || res.Usage != nil {
				t.Errorf("result keeps %d chunks and usage %+v after an implausible count", len(res.Trace.Chunks), res.Usage)
			}
		})
	}
}

// TestImplausibleBodyUsage: the same bounds hold for a non-streamed body.
func TestImplausibleBodyUsage(t *testing.T) {
	for _, usage := range []string{
		`{"prompt_tokens":9,"completion_tokens":2000000000000000000,"total_tokens":9}`,
		`{"prompt_tokens":9,"completion_tokens":-3461,"total_tokens":9}`,
	} {
		srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"length"}],"usage":`+usage+`}`)
		}))
		c := newClient(t, srv.URL, nil)
		res, err := c.Complete(context.Background(), engine.Request{Model: "m", MaxTokens: 16})
		if engine.KindOf(err) != engine.KindImplausibleUsage || res.Usage != nil {
			t.Errorf("usage %s: error %v, usage %+v; want implausible_usage and no usage", usage, err, res.Usage)
		}
	}
}

// TestEndlessText: a stream of far more text than MaxTokens allows is
// stopped as implausible once its content chunks (each at least one token)
// pass the bound, keeping at most engine.MaxKeptText bytes of text.
func TestEndlessText(t *testing.T) {
	big := strings.Repeat("x", 200<<10)
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 1000; i++ {
			if _, err := fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", big); err != nil {
				return
			}
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	c := newClient(t, srv.URL, nil)
	res, err := c.Complete(context.Background(), engine.Request{Model: "m", MaxTokens: 16, Stream: true})
	if engine.KindOf(err) != engine.KindImplausibleUsage {
		t.Fatalf("error %v, want implausible_usage", err)
	}
	if len(res.Text) > engine.MaxKeptText {
		t.Errorf("kept %d bytes of text, want at most %d", len(res.Text), engine.MaxKeptText)
	}
}

// TestTextCut: an answer longer than engine.MaxKeptText within a plausible
// count is kept cut, counted whole, and flagged.
func TestTextCut(t *testing.T) {
	part := strings.Repeat("y", 600<<10)
	body := chunkWithUsage(part, 1) + chunkWithUsage(part, 2) + chunkWithUsage(part, 3) + "data: [DONE]\n\n"
	res, _, err := parseRecorded(t, []byte(body), nil, engine.Request{MaxTokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Text) != engine.MaxKeptText || res.Trace.Tokens() != 3 {
		t.Errorf("kept %d bytes, %d tokens; want %d bytes, 3 tokens", len(res.Text), res.Trace.Tokens(), engine.MaxKeptText)
	}
	var cut bool
	for _, w := range res.Warnings {
		cut = cut || errors.Is(w, ErrTextCut)
	}
	if !cut {
		t.Errorf("Warnings %v, want one wrapping ErrTextCut", res.Warnings)
	}
}

// TestLlamaCppTimings: llama.cpp's timings on the final chunk become the
// result's server stats, with exo's generation formula.
func TestLlamaCppTimings(t *testing.T) {
	var r replay
	for _, rr := range loadReplays(t) {
		if rr.name == "llamacpp_plain" {
			r = rr
		}
	}
	var body []byte
	for _, w := range r.writes {
		body = append(body, w.data...)
	}
	res, _, err := parseRecorded(t, body, nil, engine.Request{MaxTokens: r.maxTokens})
	if err != nil {
		t.Fatal(err)
	}
	s := res.ServerStats
	// predicted_n 6 over predicted_ms 75: (6 − 1) / 0.075 s; prompt_n 75
	// over prompt_ms 180.025.
	if s == nil || s.GenerationTokens != 6 || s.PromptTokens != 75 ||
		s.GenerationTPS < 66.666 || s.GenerationTPS > 66.667 || s.PromptTPS < 416.60 || s.PromptTPS > 416.61 {
		t.Errorf("server stats %+v, want 6 tokens at 66.67 tok/s, 75 prompt tokens at 416.6 tok/s", s)
	}
}
