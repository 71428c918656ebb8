package main

import (
	"fmt"
	"strings"
)

// The shapes of streamed chunks the two adapters read, as exo and vLLM
// send them.
const (
	exoHead  = `{"id":"3f7e2a64-1c1b-4a8e-9d1e-5e0c2b8a9f10","object":"chat.completion","created":1767225603,"model":"mlx-community/Llama-3.2-1B-Instruct-4bit","choices":[{"index":0,"delta":{"role":"assistant","content":"%s"}%s}]%s}`
	vllmHead = `{"id":"chatcmpl-8f1b2c3d4e5f40718293a4b5c6d7e8f9","object":"chat.completion.chunk","created":1764420000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":"%s"},"logprobs":null,"finish_reason":%s}]%s}`
)

// shape is "exo" or "openai": the adapter a stream is for.
type shape string

// chunkEvent returns the SSE event of one content chunk carrying text,
// with cumulative usage (completion tokens done) when withUsage, and a
// finish reason on the last.
func (s shape) chunkEvent(text string, done, prompt int, withUsage, last bool) string {
	usage := ""
	if withUsage {
		usage = fmt.Sprintf(`,"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, prompt, done, prompt+done)
	}
	if s == "exo" {
		finish := ""
		if last {
			finish = `,"finish_reason":"length"`
		}
		return "data: " + fmt.Sprintf(exoHead, text, finish, usage) + "\n\n"
	}
	finish := "null"
	if last {
		finish = `"length"`
	}
	return "data: " + fmt.Sprintf(vllmHead, text, finish, usage) + "\n\n"
}

// tail returns what follows the last content chunk: exo's generation_stats
// comment, and [DONE].
func (s shape) tail(prompt, tokens int) string {
	if s == "exo" {
		return fmt.Sprintf(`: generation_stats {"prompt_tps":2315.4,"generation_tps":187.2,"prompt_tokens":%d,"generation_tokens":%d,"peak_memory_usage":{"in_bytes":2415919104},"prefix_cache_hit":"none"}`+"\n\n", prompt, tokens) +
			"data: [DONE]\n\n"
	}
	return "data: [DONE]\n\n"
}

// stream returns a whole stream of n one-token chunks as the server sends
// it: exo puts usage on the last chunk only, vLLM (continuous usage) on
// every chunk.
func (s shape) stream(n int) []byte {
	const prompt = 128
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(s.chunkEvent(" word", i, prompt, s == "openai" || i == n, i == n))
	}
	b.WriteString(s.tail(prompt, n))
	return []byte(b.String())
}
