package openai_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
)

// A bench request against the simulated vLLM server: ignore_eos makes it
// generate exactly max_tokens tokens, and the continuous usage stats give
// every chunk its token count.
func Example() {
	s := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer s.Close()

	c, err := openai.New(s.VLLMURL, &openai.Options{Flavour: openai.FlavourVLLM})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Prewarm(ctx, 1); err != nil { // dialing is not part of the measurement
		log.Fatal(err)
	}
	res, err := c.Complete(ctx, engine.Request{
		Model:     s.Model(),
		Messages:  []engine.Message{{Role: "user", Content: "Tell me a story."}},
		MaxTokens: 8,
		IgnoreEOS: true,
		Stream:    true,
	})
	if err != nil {
		log.Fatal(err)
	}
	m, err := res.Trace.Metrics()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("model:", res.Model)
	fmt.Println("prompt tokens:", res.Usage.PromptTokens, "completion tokens:", res.Usage.CompletionTokens)
	fmt.Println("chunks:", len(res.Trace.Chunks), "trace tokens:", res.Trace.Tokens(), "finish:", res.FinishReason)
	fmt.Println("TTFT > 0:", m.TTFT > 0, "warnings:", len(res.Warnings))
	// The sim's template counts 3 + (5 + 5) prompt tokens: "Tell", " me",
	// " a", " story", ".".

	// Output:
	// model: sim/tiny-1b-8bit
	// prompt tokens: 13 completion tokens: 8
	// chunks: 8 trace tokens: 8 finish: length
	// TTFT > 0: true warnings: 0
}

// A text completion of token ids (/v1/completions): the server counts the
// ids exactly, and the second prompt, which shares the first 32 of its 40
// ids, is served two 16-token blocks from the prefix cache.
func ExampleClient_Complete_tokenIDs() {
	s := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer s.Close()
	c, err := openai.New(s.VLLMURL, nil)
	if err != nil {
		log.Fatal(err)
	}
	ids := make([]int, 40)
	for i := range ids {
		ids[i] = 1000 + i
	}
	for _, tail := range []int{0, 5000} {
		p := append([]int(nil), ids...)
		for i := 32; i < len(p); i++ {
			p[i] += tail
		}
		res, err := c.Complete(context.Background(), engine.Request{
			Model: s.Model(), Prompt: &engine.Prompt{Tokens: p}, MaxTokens: 4, IgnoreEOS: true, Stream: true,
		})
		if err != nil {
			log.Fatal(err)
		}
		cached, _ := res.Usage.Cached()
		fmt.Println("prompt tokens:", res.Usage.PromptTokens, "cached:", cached, "generated:", res.Trace.Tokens())
	}
	// Output:
	// prompt tokens: 40 cached: 0 generated: 4
	// prompt tokens: 40 cached: 32 generated: 4
}

// Chunk token counts from usage deltas: a server that puts a cumulative
// usage block on every chunk (vLLM's continuous_usage_stats) tells how
// many tokens each chunk carried, even when one chunk carries several.
func ExampleClient_Complete_usageDeltas() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":{"prompt_tokens":9,"completion_tokens":0,"total_tokens":9}}`+"\n\n")
		io.WriteString(w, `data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"Hello"}}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`+"\n\n")
		io.WriteString(w, `data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":", wonderful"}}],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`+"\n\n")
		io.WriteString(w, `data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":" world"},"finish_reason":"length"}],"usage":{"prompt_tokens":9,"completion_tokens":5,"total_tokens":14}}`+"\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()

	c, err := openai.New(srv.URL, nil)
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.Complete(context.Background(), engine.Request{Model: "m", MaxTokens: 5, Stream: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, ch := range res.Trace.Chunks {
		fmt.Print(ch.Tokens, " ")
	}
	fmt.Printf("= %d tokens: %q\n", res.Trace.Tokens(), res.Text)
	// Output:
	// 1 3 1 = 5 tokens: "Hello, wonderful world"
}

// Listing the models a server serves.
func ExampleClient_Models() {
	s := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer s.Close()
	c, err := openai.New(s.VLLMURL+"/v1", nil)
	if err != nil {
		log.Fatal(err)
	}
	models, err := c.Models(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range models {
		fmt.Println(m.ID, m.ContextLength > 0)
	}
	// Output:
	// sim/tiny-1b-8bit true
}
