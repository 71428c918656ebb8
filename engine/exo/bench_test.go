package exo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/engine"
)

// exoStream builds an exo bench stream of n one-token chunks: the
// keep-alive, a prefill progress comment, n data chunks (usage on the
// last), the generation_stats comment and [DONE].
func exoStream(n int) []byte {
	var b bytes.Buffer
	b.WriteString(": keep-alive\n\n")
	b.WriteString(`: prefill_progress {"PrefillProgressChunk":{"model":"mlx-community/Llama-3.2-1B-Instruct-4bit","processed_tokens":4095,"total_tokens":4096}}` + "\n\n")
	const head = `data: {"id":"3f7e2a64-1c1b-4a8e-9d1e-5e0c2b8a9f10","object":"chat.completion","created":1767225603,"model":"mlx-community/Llama-3.2-1B-Instruct-4bit","choices":[{"index":0,"delta":{"role":"assistant","content":" a"}`
	for i := 1; i < n; i++ {
		b.WriteString(head + "}]}\n\n")
	}
	fmt.Fprintf(&b, `%s,"finish_reason":"length"}],"usage":{"prompt_tokens":4096,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`+"\n\n", head, n, 4096+n)
	fmt.Fprintf(&b, `: generation_stats {"prompt_tps":2315.4,"generation_tps":187.2,"prompt_tokens":4096,"generation_tokens":%d,"peak_memory_usage":{"in_bytes":2415919104},"prefix_cache_hit":"none"}`+"\n\n", n)
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// BenchmarkParseCompletion measures decoding a non-streaming bench body
// with generation_stats and power_usage.
func BenchmarkParseCompletion(b *testing.B) {
	data := fixture(b, "bench_response.json")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var res engine.Result
		if err := parseCompletion(data, &res); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadStream measures reading a 1024-token exo stream from
// memory: the adapter's cost per streamed token, without the network.
func BenchmarkReadStream(b *testing.B) {
	const n = 1024
	body := exoStream(n)
	c, err := New("http://127.0.0.1:9", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: io.NopCloser(bytes.NewReader(body))}
		var res engine.Result
		if err := c.readStream(context.Background(), "read", nil, engine.Request{MaxTokens: n}, resp, &res); err != nil {
			b.Fatal(err)
		}
		if res.Trace.Tokens() != n || res.ServerStats == nil {
			b.Fatalf("%d tokens, stats %v", res.Trace.Tokens(), res.ServerStats)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/token")
}

// BenchmarkCompleteLoopback measures one non-streaming bench request to a
// canned loopback server on a kept-alive connection: the client's own
// overhead per request, round trip included.
func BenchmarkCompleteLoopback(b *testing.B) {
	rec := &recorder{body: fixture(b, "bench_response.json")}
	c, _ := newTestClient(b, rec, nil)
	req := benchRequest(false)
	b.ReportAllocs()
	for b.Loop() {
		rec.mu.Lock()
		rec.paths, rec.bodies, rec.headers = rec.paths[:0], rec.bodies[:0], rec.headers[:0]
		rec.mu.Unlock()
		if _, err := c.Complete(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrepare measures the client-side work Prepare moves before a
// burst's release (validation, JSON encoding, the http.Request and its
// headers) for a one-sentence prompt and a 32 KiB one; nothing is sent.
func BenchmarkPrepare(b *testing.B) {
	c, err := New("http://127.0.0.1:9", nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []struct {
		name    string
		content string
	}{
		{"sentence", "Measure the dispatch skew of this request, please."},
		{"32KiB", strings.Repeat("All work and no play makes Jack a dull boy. ", 32<<10/44)},
	} {
		req := engine.Request{Model: "m", MaxTokens: 128, IgnoreEOS: true,
			Messages: []engine.Message{{Role: "user", Content: size.content}},
			Header:   http.Header{"X-Index": {"7"}}}
		b.Run(size.name, func(b *testing.B) {
			b.SetBytes(int64(len(size.content)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Prepare(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
