package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/sim"
)

// TestRequestBody: the fields of a Request go where api.ChatRequest and
// api.Options take them; "stream" is always written; Extra replaces.
func TestRequestBody(t *testing.T) {
	temp, topP, topK, seed := 0.2, 0.9, 40, int64(7)
	b, warns, err := requestBody(engine.Request{Model: "llama3.2", Messages: []engine.Message{{Role: "user", Content: "hi"}},
		MaxTokens: 32, Temperature: &temp, TopP: &topP, TopK: &topK, Seed: &seed, Stop: []string{"\n\n"},
		IgnoreEOS: true, MinTokens: 4, Extra: map[string]any{"keep_alive": "5m"}})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"model": "llama3.2", "stream": false, "keep_alive": "5m",
		"messages": []any{map[string]any{"role": "user", "content": "hi"}},
		"options":  map[string]any{"num_predict": 32.0, "temperature": 0.2, "top_p": 0.9, "top_k": 40.0, "seed": 7.0, "stop": []any{"\n\n"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	if len(warns) != 2 || !errors.Is(warns[0], ErrUnsupported) || !errors.Is(warns[1], ErrUnsupported) {
		t.Errorf("warnings %v, want two wrapping ErrUnsupported (ignore_eos, min_tokens)", warns)
	}
	b, _, _ = requestBody(engine.Request{Model: "m", Stream: true})
	if string(b) != `{"messages":[],"model":"m","stream":true}` {
		t.Errorf("minimal body %s", b)
	}
	for _, req := range []engine.Request{{Model: "m", Prompt: &engine.Prompt{Text: "x"}}, {Model: "m", MaxTokens: -1}} {
		if _, _, err := requestBody(req); engine.KindOf(err) != engine.KindOther {
			t.Errorf("%+v: error %v, want kind other before sending", req, err)
		}
	}
}

// TestKeyRedacted: a bearer token the server echoes back in an error is
// not in the error the caller sees.
func TestKeyRedacted(t *testing.T) {
	const key = "sk-ollama-proxy-0123456789abcdef"
	t.Setenv("OLLAMA_PROXY_KEY", key)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":"bad token `+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+`"}`)
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, &Options{APIKeyEnv: "OLLAMA_PROXY_KEY"})
	_, err := c.Complete(context.Background(), engine.Request{Model: "m", Messages: []engine.Message{{Role: "user", Content: "x"}}})
	var se *engine.StatusError
	if !errors.As(err, &se) || se.Code != 401 {
		t.Fatalf("error %v, want a 401", err)
	}
	if strings.Contains(err.Error(), key) || strings.Contains(se.Body, key) {
		t.Errorf("the token leaked: %v / %q", err, se.Body)
	}
}

// TestSimHeldBackLines: when several tokens share a line (the sim's
// StreamChunk standing for text Ollama's runner holds back), eval_count
// exceeds the lines and the result says so instead of spreading tokens.
func TestSimHeldBackLines(t *testing.T) {
	s := newSim(t, sim.Options{StreamChunk: 2, NaturalLength: 1 << 16})
	c := newClient(t, s.OllamaURL(), nil)
	ctx := context.Background()
	res, err := c.Complete(ctx, engine.Request{Model: s.Model(), Stream: true, MaxTokens: 10,
		Messages: []engine.Message{{Role: "user", Content: "Count to ten."}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage == nil || res.Usage.CompletionTokens != 10 || len(res.Trace.Chunks) != 5 || res.Trace.Tokens() != 5 {
		t.Fatalf("usage %+v over %d chunks of %d tokens, want 10 over 5 chunks of one each", res.Usage, len(res.Trace.Chunks), res.Trace.Tokens())
	}
	if len(res.Warnings) != 1 || !errors.Is(res.Warnings[0], ErrTokenMismatch) {
		t.Errorf("warnings %v, want one wrapping ErrTokenMismatch", res.Warnings)
	}
	st := res.ServerStats
	if st == nil || st.Source != "ollama" || st.Prefill == nil || st.Decode == nil || st.Load == nil || st.Total == nil ||
		*st.Prefill+*st.Decode > *st.Total || st.GenerationTPS <= 0 {
		t.Errorf("stats %+v", st)
	}
	models, err := c.Models(ctx)
	if err != nil || len(models) != 1 || models[0].ID != s.Model()+":latest" {
		t.Errorf("Models = %+v, %v", models, err)
	}
	if v, err := c.Version(ctx); err != nil || v != sim.OllamaVersion {
		t.Errorf("Version = %q, %v", v, err)
	}
}

// TestSimStop: a request that ends at its end of sequence has one line
// fewer than eval_count; the last chunk carries that token, the trace
// adds up to eval_count and nothing is warned.
func TestSimStop(t *testing.T) {
	s := newSim(t, sim.Options{NaturalLength: 40})
	c := newClient(t, s.OllamaURL(), nil)
	for i := range 50 {
		res, err := c.Complete(context.Background(), engine.Request{Model: s.Model(), Stream: true, MaxTokens: 100,
			Messages: []engine.Message{{Role: "user", Content: strings.Repeat("again ", i)}}})
		if err != nil {
			t.Fatal(err)
		}
		if res.FinishReason != "stop" || len(res.Trace.Chunks) < 2 {
			continue
		}
		last := res.Trace.Chunks[len(res.Trace.Chunks)-1]
		if res.Trace.Tokens() != res.Usage.CompletionTokens || last.Tokens != 2 || len(res.Warnings) != 0 {
			t.Fatalf("trace of %d tokens (last chunk %d), eval_count %d, warnings %v", res.Trace.Tokens(), last.Tokens, res.Usage.CompletionTokens, res.Warnings)
		}
		return
	}
	t.Fatal("no prompt ended at its end of sequence")
}
