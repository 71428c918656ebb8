package openai

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
)

// pathRecorder is recorded that also keeps each request's path.
type pathRecorder struct {
	recorded
	pmu   sync.Mutex
	paths []string
}

func (p *pathRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.pmu.Lock()
	p.paths = append(p.paths, r.URL.Path)
	p.pmu.Unlock()
	p.recorded.ServeHTTP(w, r)
}

// TestCompletionsRequestBody: a request with a Prompt goes to
// /v1/completions with the prompt as ids or text, no messages, and the
// fields a chat request sends.
func TestCompletionsRequestBody(t *testing.T) {
	body := `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" a b","logprobs":null,"finish_reason":"length","stop_reason":null}],"usage":{"prompt_tokens":3,"total_tokens":5,"completion_tokens":2,"prompt_tokens_details":null}}`
	rec := &pathRecorder{recorded: recorded{ctype: "application/json", body: []byte(body)}}
	srv := serve(t, rec)
	c := newClient(t, srv.URL, nil)
	res, err := c.Complete(context.Background(), engine.Request{Model: "m", Prompt: &engine.Prompt{Tokens: []int{7, 8, 9}},
		MaxTokens: 2, IgnoreEOS: true, MinTokens: 2, Stop: []string{"\n"}})
	if err != nil {
		t.Fatal(err)
	}
	// Streamed, answered with JSON: read as a whole answer, with a warning.
	if _, err := c.Complete(context.Background(), engine.Request{Model: "m", Prompt: &engine.Prompt{Text: "Once"}, MaxTokens: 2, Stream: true}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{completionsPath, completionsPath}, rec.paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	want := map[string]any{"model": "m", "prompt": []any{7.0, 8.0, 9.0}, "stream": false, "max_tokens": 2.0,
		"ignore_eos": true, "min_tokens": 2.0, "stop": []any{"\n"}}
	if diff := cmp.Diff(want, rec.bodies[0]); diff != "" {
		t.Errorf("token-id body (-want +got):\n%s", diff)
	}
	if rec.bodies[1]["prompt"] != "Once" || rec.bodies[1]["messages"] != nil || rec.bodies[1]["stream_options"] == nil {
		t.Errorf("text body %v: want the prompt as a string, no messages, stream_options", rec.bodies[1])
	}
	if res.Text != " a b" || res.FinishReason != "length" || res.Usage.PromptTokens != 3 || res.Usage.CachedTokens != nil || len(res.Warnings) != 0 {
		t.Errorf("result text %q finish %q usage %+v warnings %v", res.Text, res.FinishReason, res.Usage, res.Warnings)
	}
}

// TestCompletionsHostile: the completion path bounds what the server
// reports as the chat path does, and more tightly for the prompt, whose
// size the client knows: a prompt count far beyond a 3-id prompt, and more
// cached tokens than prompt tokens, are implausible, and the result keeps
// no usage and no chunks.
func TestCompletionsHostile(t *testing.T) {
	chunk := `data: {"id":"cmpl-1","object":"text_completion","model":"m","choices":[{"index":0,"text":" a","finish_reason":null}],"usage":{"prompt_tokens":3,"total_tokens":4,"completion_tokens":1}}` + "\n\n"
	for name, final := range map[string]string{
		"prompt count":  `{"id":"cmpl-1","object":"text_completion","model":"m","choices":[],"usage":{"prompt_tokens":900000,"total_tokens":900001,"completion_tokens":1}}`,
		"cached tokens": `{"id":"cmpl-1","object":"text_completion","model":"m","choices":[],"usage":{"prompt_tokens":3,"total_tokens":4,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":4}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := serve(t, &recorded{ctype: "text/event-stream", body: []byte(chunk + "data: " + final + "\n\ndata: [DONE]\n\n")})
			c := newClient(t, srv.URL, nil)
			res, err := c.Complete(context.Background(), engine.Request{Model: "m", Prompt: &engine.Prompt{Tokens: []int{1, 2, 3}}, MaxTokens: 1, Stream: true})
			if engine.KindOf(err) != engine.KindImplausibleUsage {
				t.Fatalf("error %v, want kind implausible_usage", err)
			}
			if res.Usage != nil || len(res.Trace.Chunks) != 0 {
				t.Errorf("usage %+v and %d chunks kept from a stream whose counts cannot be true", res.Usage, len(res.Trace.Chunks))
			}
			if !strings.Contains(err.Error(), "usage.prompt_tokens") {
				t.Errorf("error %q does not name the field", err)
			}
		})
	}
	// The chat path of a stream that answers a chat is not read as a
	// completion: its delta text is its text, a text field is ignored.
	srv := serve(t, &recorded{ctype: "text/event-stream", body: []byte(`data: {"choices":[{"index":0,"text":"no","delta":{"content":"yes"}}]}` + "\n\ndata: [DONE]\n\n")})
	c := newClient(t, srv.URL, nil)
	res, err := c.Complete(context.Background(), engine.Request{Model: "m", Messages: []engine.Message{{Role: "user", Content: "x"}}, Stream: true})
	if err != nil || res.Text != "yes" {
		t.Errorf("chat text %q (%v), want the delta's", res.Text, err)
	}
	res, err = c.Complete(context.Background(), engine.Request{Model: "m", Prompt: &engine.Prompt{Text: "x"}, Stream: true})
	if err != nil || res.Text != "no" {
		t.Errorf("completion text %q (%v), want the choice's text", res.Text, err)
	}
}
