package openai

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/adaptertest"
)

// sseBody is a stream of content chunks, each with its cumulative
// completion_tokens when usage[i] ≥ 0, an optional role chunk before them,
// a finish chunk and, when final ≥ 0, a usage chunk.
func sseBody(role bool, texts []string, usage []int, finish string, final int) []byte {
	var b strings.Builder
	if role {
		b.WriteString(`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n")
	}
	for i, s := range texts {
		fmt.Fprintf(&b, `data: {"choices":[{"index":0,"delta":{"content":%q}}]`, s)
		if usage != nil && usage[i] >= 0 {
			fmt.Fprintf(&b, `,"usage":{"prompt_tokens":3,"completion_tokens":%d}`, usage[i])
		}
		b.WriteString("}\n\n")
	}
	if finish != "" {
		fmt.Fprintf(&b, `data: {"choices":[{"index":0,"delta":{},"finish_reason":%q}]}`+"\n\n", finish)
	}
	if final >= 0 {
		fmt.Fprintf(&b, `data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":%d}}`+"\n\n", final)
	}
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

// TestAttributeUsesWhatTheStreamStates checks the token counts of streams
// whose counts the stream itself states, wholly or in part, against
// counters that split the text otherwise: what the stream states wins,
// a count only places what it leaves, and the warnings claim nothing the
// stream does not show.
func TestAttributeUsesWhatTheStreamStates(t *testing.T) {
	// splits counts every byte as a token: far more than the model made.
	splits := func(_ context.Context, s string) (int, error) { return len(s), nil }
	words := func(_ context.Context, s string) (int, error) { return len(strings.Fields(s)), nil }
	cases := []struct {
		name    string
		body    []byte
		count   func(context.Context, string) (int, error)
		tokens  []int
		warns   []error // in order
		noCount bool    // the counter must not be asked
	}{
		{name: "as many chunks as tokens, no counter",
			body:   sseBody(false, []string{"Sure", ",\n\n", "here"}, nil, "length", 3),
			tokens: []int{1, 1, 1}, noCount: true},
		{name: "as many chunks as tokens, a counter that splits",
			body:  sseBody(false, []string{"Sure", ",\n\n", "here"}, nil, "length", 3),
			count: splits, tokens: []int{1, 1, 1}, noCount: true},
		{name: "one token a chunk and an end of sequence",
			body:  sseBody(false, []string{"37", ",\n\n", "because"}, nil, "stop", 4),
			count: splits, tokens: []int{1, 1, 2}, noCount: true},
		// 2 beyond one a chunk; the count finds 3, 1, 3 bytes beyond: the
		// 2 are shared in proportion, 0.86, 0.29, 0.86, largest
		// remainders first, ties to the earlier: 1, 0, 1.
		{name: "a count that finds more than the surplus",
			body:  sseBody(false, []string{"abcd", "ef", "ghij"}, nil, "length", 5),
			count: splits, tokens: []int{2, 1, 2}, warns: []error{ErrEstimatedTokens}},
		// 3 beyond one a chunk, the words place none: all to the first.
		{name: "a count that finds fewer than the surplus",
			body:  sseBody(false, []string{"a", " b", " c"}, nil, "length", 6),
			count: words, tokens: []int{4, 1, 1}, warns: []error{ErrEstimatedTokens}},
		// The server's usage on the first chunk states its 3 tokens.
		{name: "usage states several tokens in the first chunk",
			body:   sseBody(false, []string{"été", " chaud"}, []int{3, 4}, "length", 4),
			tokens: []int{3, 1}, warns: []error{ErrHiddenFirstTokens}},
		{name: "usage states them, the role chunk marks the first",
			body:   sseBody(true, []string{"été", " chaud"}, []int{3, 4}, "length", 4),
			tokens: []int{3, 1}},
		// One chunk carried every token: the stream says so.
		{name: "a single chunk",
			body:   sseBody(false, []string{"Hello there"}, nil, "length", 3),
			tokens: []int{3}, warns: []error{ErrHiddenFirstTokens}},
		// vLLM's end of sequence on a text-less chunk after the last
		// content chunk with usage: to the last.
		{name: "tokens after the last chunk with usage",
			body:   sseBody(true, []string{"a", " b"}, []int{1, 2}, "stop", 4),
			tokens: []int{1, 3}},
		// Usage on the second chunk only: the first two carry its 4 (one
		// each, and the 2 the words do not place to the chunk whose usage
		// covered them), the last two the final 6 − 4, one each.
		{name: "usage on one chunk in the middle",
			body:  sseBody(false, []string{"a", " b", " c", " d"}, []int{-1, 4, -1, -1}, "length", 6),
			count: words, tokens: []int{1, 3, 1, 1}, warns: []error{ErrEstimatedTokens}},
		// A first chunk with usage 0: counted as one, taken back from the
		// next chunk's 3, so that the total stays the server's.
		{name: "usage that did not grow",
			body:   sseBody(false, []string{"a", " b"}, []int{0, 3}, "length", 3),
			tokens: []int{1, 2}, warns: []error{ErrEstimatedTokens}},
		// Fewer tokens than chunks: one each, and the mismatch said.
		{name: "a final count below the chunks'",
			body:   sseBody(false, []string{"a", " b", " c"}, nil, "length", 2),
			tokens: []int{1, 1, 1}, warns: []error{ErrTokenMismatch}},
		{name: "no final count, no counter",
			body:   sseBody(false, []string{"a", " b"}, nil, "length", -1),
			tokens: []int{0, 0}, warns: []error{ErrUnknownTokens}},
		{name: "no final count, a counter",
			body:  sseBody(false, []string{"a b", " c"}, nil, "length", -1),
			count: words, tokens: []int{2, 1}, warns: []error{ErrEstimatedTokens}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			asked := 0
			var opts *Options
			if tc.count != nil {
				opts = &Options{CountText: func(ctx context.Context, s string) (int, error) {
					asked++
					return tc.count(ctx, s)
				}}
			}
			res, _, err := parseRecorded(t, tc.body, opts, engine.Request{MaxTokens: 64})
			if err != nil {
				t.Fatal(err)
			}
			adaptertest.CheckChunks(t, res, tc.tokens, tc.warns)
			if tc.noCount && asked > 0 {
				t.Errorf("the counter was asked %d times; the stream states every count", asked)
			}
			if res.Usage != nil && !errors.Is(errors.Join(res.Warnings...), ErrTokenMismatch) && res.Trace.Tokens() != res.Usage.CompletionTokens {
				t.Errorf("trace carries %d tokens, usage says %d", res.Trace.Tokens(), res.Usage.CompletionTokens)
			}
		})
	}
}

// TestEstimateNamesItsFirstChunk checks that an estimate putting several
// tokens in an unanchored first chunk says so in its own warning, and
// that no warning wrapping ErrHiddenFirstTokens claims it.
func TestEstimateNamesItsFirstChunk(t *testing.T) {
	body := sseBody(false, []string{"abcdef", "g", "h"}, nil, "length", 5)
	res, _, err := parseRecorded(t, body, nil, engine.Request{MaxTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Trace.Chunks[0].Tokens; got != 3 {
		t.Fatalf("first chunk %d tokens, want 3 (the 2 beyond one a chunk by text length)", got)
	}
	if len(res.Warnings) != 1 || !errors.Is(res.Warnings[0], ErrEstimatedTokens) || errors.Is(res.Warnings[0], ErrHiddenFirstTokens) ||
		!strings.Contains(res.Warnings[0].Error(), "the estimate puts 3 tokens in the first content chunk") {
		t.Errorf("warnings %v: want one estimate naming the first chunk's 3 tokens", res.Warnings)
	}
}

// TestSharedFirstRead reads vLLM-shaped streams whose role chunk and first
// token come in one read, as vLLM writes them: the role chunk is the
// trace's anchor, not a content chunk, so that read makes neither
// FirstContentShared nor SharedInstants; only a read that also holds the
// second token does.
func TestSharedFirstRead(t *testing.T) {
	role := `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n"
	tok := func(s string) string {
		return `data: {"choices":[{"index":0,"delta":{"content":"` + s + `"}}]}` + "\n\n"
	}
	done := "data: [DONE]\n\n"
	for _, tc := range []struct {
		name   string
		writes []replayWrite
		shared bool
		count  int
	}{
		{"role and first token in one read", []replayWrite{
			{at: 10, data: []byte(role + tok("The"))}, {at: 20, data: []byte(tok(" cat"))}, {at: 30, data: []byte(tok(" sat") + done)}}, false, 0},
		{"role, first and second token in one read", []replayWrite{
			{at: 10, data: []byte(role + tok("The") + tok(" cat"))}, {at: 30, data: []byte(tok(" sat") + done)}}, true, 1},
		{"the role alone, then the first two tokens in one read", []replayWrite{
			{at: 10, data: []byte(role)}, {at: 20, data: []byte(tok("The") + tok(" cat"))}, {at: 30, data: []byte(tok(" sat") + done)}}, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{}
			base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			clk.set(base)
			c, err := New("http://127.0.0.1:9", &Options{Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			res := engine.Result{Trace: engineTraceAt(base)}
			if err := c.readStream(context.Background(), &scheduledReader{clk: clk, base: base, writes: tc.writes}, nil, engine.Request{MaxTokens: 8}, &res); err != nil {
				t.Fatal(err)
			}
			tr := res.Trace
			if len(tr.Chunks) != 3 || tr.FirstChunk.IsZero() {
				t.Fatalf("%d content chunks, anchor %v: want 3 and an anchor", len(tr.Chunks), tr.FirstChunk)
			}
			if got := tr.FirstContentShared(); got != tc.shared {
				t.Errorf("FirstContentShared = %v, want %v", got, tc.shared)
			}
			if got := tr.SharedInstants(); got != tc.count {
				t.Errorf("SharedInstants = %d, want %d", got, tc.count)
			}
		})
	}
}
