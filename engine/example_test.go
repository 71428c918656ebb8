package engine_test

import (
	"fmt"
	"strings"

	"github.com/inferbench/inferbench/engine"
)

// The end of an exo stream: a content chunk, the generation_stats comment
// and [DONE].
func ExampleSSEReader() {
	stream := strings.NewReader(": keep-alive\n\n" +
		`data: {"choices":[{"delta":{"content":" a"},"finish_reason":"length"}]}` + "\n\n" +
		`: generation_stats {"prompt_tps":2315.4,"generation_tps":187.2,"prompt_tokens":4096,"generation_tokens":128,"peak_memory_usage":{"in_bytes":2415919104},"prefix_cache_hit":"none"}` + "\n\n" +
		"data: [DONE]\n\n")

	sr := engine.NewSSEReader(stream, nil)
	for sr.Next() {
		ev := sr.Event()
		switch ev.Type {
		case engine.EventComment:
			name, payload := ev.Comment()
			if string(name) != "generation_stats" {
				fmt.Printf("comment %s\n", name)
				continue
			}
			stats, err := engine.ParseGenerationStats(payload)
			if err != nil {
				fmt.Println(err)
				continue
			}
			fmt.Printf("stats: %d prompt tokens at %.1f tok/s, %d generated at %.1f tok/s, cache %s\n",
				stats.PromptTokens, stats.PromptTPS, stats.GenerationTokens, stats.GenerationTPS, stats.PrefixCacheHit)
		case engine.EventData:
			fmt.Printf("chunk %s\n", ev.Data)
		case engine.EventDone:
			fmt.Println("done")
		}
	}
	fmt.Println("err:", sr.Err())
	// Output:
	// comment keep-alive
	// chunk {"choices":[{"delta":{"content":" a"},"finish_reason":"length"}]}
	// stats: 4096 prompt tokens at 2315.4 tok/s, 128 generated at 187.2 tok/s, cache none
	// done
	// err: <nil>
}

// A stream that stops before [DONE] is truncated, and an error the server
// sends inside a 200 stream is an error event.
func ExampleSSEReader_errors() {
	for _, stream := range []string{
		"data: {\"choices\":[]}\n\ndata: {\"cho",
		`data: {"error":{"message":"out of memory","type":"InternalServerError","code":500}}` + "\n\ndata: [DONE]\n\n",
	} {
		sr := engine.NewSSEReader(strings.NewReader(stream), nil)
		for sr.Next() {
			if ev := sr.Event(); ev.Type == engine.EventError {
				err := &engine.Error{Kind: engine.KindStreamError, Op: "read stream", Err: ev.ServerError()}
				fmt.Println(engine.KindOf(err), "—", err)
			}
		}
		if err := sr.Err(); err != nil {
			fmt.Println(engine.KindOf(err), "—", err)
		}
	}
	// Output:
	// truncated — engine: read SSE stream: truncated: stream ended without data: [DONE]: the input ended inside an event (5 bytes of its data read), want a blank line then [DONE]
	// stream_error — engine: read stream: stream_error: server reported an error in the stream (code 500) InternalServerError: out of memory
}

// KindOf reduces any error to a short, stable string for a result row.
func ExampleKindOf() {
	errs := []error{
		nil,
		engine.NewStatusError(404, []byte(`{"error":{"message":"No instance found for model m","type":"Not Found","code":404}}`)),
		&engine.Error{Kind: engine.KindTruncated, Op: "read SSE stream", Err: engine.ErrNoDone},
	}
	for _, err := range errs {
		fmt.Printf("%q: %v\n", engine.KindOf(err), err)
	}
	// Output:
	// "": <nil>
	// "status": engine: HTTP status 404, want 2xx: No instance found for model m
	// "truncated": engine: read SSE stream: truncated: stream ended without data: [DONE]
}
