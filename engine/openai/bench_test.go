package openai

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/engine"
)

// vllmStream builds a vLLM stream of n one-token content chunks with
// continuous usage, as the server sends it for max_tokens=n.
func vllmStream(n int) []byte {
	var b bytes.Buffer
	const head = `data: {"id":"chatcmpl-8f1b2c3d4e5f40718293a4b5c6d7e8f9","object":"chat.completion.chunk","created":1764420000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{`
	fmt.Fprintf(&b, "%s\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":{\"prompt_tokens\":21,\"total_tokens\":21,\"completion_tokens\":0}}\n\n", head)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%s\"content\":\" word\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":{\"prompt_tokens\":21,\"total_tokens\":%d,\"completion_tokens\":%d}}\n\n", head, 21+i, i)
	}
	fmt.Fprintf(&b, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":21,\"total_tokens\":%d,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", 21+n, n)
	return b.Bytes()
}

// BenchmarkParseChunk measures decoding one vLLM chunk with usage.
func BenchmarkParseChunk(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-8f1b2c3d4e5f40718293a4b5c6d7e8f9","object":"chat.completion.chunk","created":1764420000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" brown fox"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":21,"total_tokens":25,"completion_tokens":4}}`)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseChunk(data, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadStream measures reading a 1024-chunk stream from memory:
// the adapter's cost per streamed token, without the network.
func BenchmarkReadStream(b *testing.B) {
	const n = 1024
	body := vllmStream(n)
	c, err := New("http://127.0.0.1:9", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var res engine.Result
		if err := c.readStream(context.Background(), bytes.NewReader(body), nil, engine.Request{}, &res); err != nil {
			b.Fatal(err)
		}
		if len(res.Trace.Chunks) != n {
			b.Fatalf("%d chunks", len(res.Trace.Chunks))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
}

// BenchmarkCompleteLoopback measures one streamed request of 128 chunks
// over loopback HTTP on a kept-alive connection: the adapter's and
// net/http's overhead per request.
func BenchmarkCompleteLoopback(b *testing.B) {
	body := vllmStream(128)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(body)
	}))
	defer srv.Close()
	c, err := New(srv.URL, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseIdleConnections()
	req := engine.Request{Model: "m", Messages: []engine.Message{{Role: "user", Content: "hi"}}, MaxTokens: 128, Stream: true}
	b.ReportAllocs()
	for b.Loop() {
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
