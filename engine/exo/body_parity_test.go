package exo

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
)

// exoBenchPayload is the body bench/exo_bench.py sends to
// /bench/chat/completions at exo commit b5375f8 (run_one_completion, and
// the pre-built payload of its concurrent path), field by field:
//
//	{"model": model_id, "messages": [{"role": "user", "content": content}],
//	 "max_tokens": tg, "logprobs": False, "use_prefix_cache": use_prefix_cache,
//	 "stream": False}   (stream_bench_chat_completions sets "stream": True)
//
// No sampling field (temperature, top_p, seed) is sent: the server's
// model-card defaults apply, and with EOS banned the count is exact either
// way.
func exoBenchPayload(model, content string, tg int, prefixCache, stream bool) map[string]any {
	return map[string]any{
		"model":            model,
		"messages":         []any{map[string]any{"role": "user", "content": content}},
		"max_tokens":       float64(tg),
		"logprobs":         false,
		"use_prefix_cache": prefixCache,
		"stream":           stream,
	}
}

// TestBenchBodyMatchesExoBench compares, field by field, the body this
// client sends for a benchmark request (what benchkit's Runner asks for:
// IgnoreEOS, MaxTokens, Stream, UsePrefixCache) with the one exo_bench.py
// sends.
func TestBenchBodyMatchesExoBench(t *testing.T) {
	var mu sync.Mutex
	var got map[string]any
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = nil
		json.Unmarshal(b, &got)
		mu.Unlock()
		notFound(w, "test")
	}), fastOptions())
	for _, tc := range []struct{ prefixCache, stream bool }{{false, false}, {true, false}, {false, true}} {
		req := engine.Request{
			Model: llama, Messages: []engine.Message{{Role: "user", Content: "a a a a "}},
			MaxTokens: 128, IgnoreEOS: true, Stream: tc.stream, UsePrefixCache: tc.prefixCache,
		}
		c.Complete(context.Background(), req) // the answer is a 404; only the body matters
		mu.Lock()
		body := got
		mu.Unlock()
		want := exoBenchPayload(llama, "a a a a ", 128, tc.prefixCache, tc.stream)
		if diff := cmp.Diff(want, body); diff != "" {
			t.Errorf("prefix cache %v, stream %v: body differs from exo_bench.py's (-exo_bench +ours):\n%s", tc.prefixCache, tc.stream, diff)
		}
	}
}
