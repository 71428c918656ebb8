package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/countertest"
	"github.com/inferbench/inferbench/promptsize/remote"
)

// render is the test servers' chat template: ChatML-like text.
func render(msgs []promptsize.Message, addGen bool) string {
	var sb strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&sb, "<|im_start|>%s\n%s<|im_end|>\n", m.Role, m.Content)
	}
	if addGen {
		sb.WriteString("<|im_start|>assistant\n")
	}
	return sb.String()
}

// thinkOff is what the test servers' chat template adds to the generation
// prompt for chat_template_kwargs kw: an empty think block (two tokens)
// when enable_thinking is false, as Qwen3's does.
func thinkOff(kw map[string]any) string {
	if v, ok := kw["enable_thinking"].(bool); ok && !v {
		return "<think>\n\n</think>\n\n"
	}
	return ""
}

// tokenize is the test servers' tokenizer: special markers are one token
// each, the rest one token per white-space separated field.
func tokenize(text string) []int {
	var ids []int
	for _, f := range strings.Fields(strings.NewReplacer("<|im_start|>", " <|im_start|> ", "<|im_end|>", " <|im_end|> ", bos, " "+bos+" ").Replace(text)) {
		ids = append(ids, len(f))
	}
	return ids
}

// bos is the BOS the llama.cpp test server's template writes.
const bos = "<|begin_of_text|>"

type vllmReq struct {
	Model               string               `json:"model"`
	Messages            []promptsize.Message `json:"messages"`
	AddGenerationPrompt *bool                `json:"add_generation_prompt"`
	ChatTemplateKwargs  map[string]any       `json:"chat_template_kwargs"`
}

// newVLLM serves vLLM's /tokenize shape; seen receives each request body.
func newVLLM(t *testing.T, seen chan<- vllmReq) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var req vllmReq
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		if seen != nil {
			select {
			case seen <- req:
			default:
			}
		}
		ids := tokenize(render(req.Messages, req.AddGenerationPrompt != nil && *req.AddGenerationPrompt) + thinkOff(req.ChatTemplateKwargs))
		json.NewEncoder(w).Encode(map[string]any{"count": len(ids), "max_model_len": 32768, "tokens": ids})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// newLlamaCpp serves llama.cpp's /apply-template and /tokenize shapes
// for a vocabulary that adds a BOS (a Llama 3 GGUF from llama.cpp's
// converter).
func newLlamaCpp(t *testing.T) *httptest.Server {
	return newLlamaCppVocab(t, true, nil)
}

// newLlamaCppVocab serves llama.cpp's /apply-template and /tokenize as
// llama.cpp does for a vocabulary whose add_bos_token is addBOS: the
// template writes a BOS, which /apply-template strips when the vocabulary
// adds one; /tokenize adds it with add_special when the vocabulary adds
// one. The count of a chat completion's usage.prompt_tokens is
// inference(msgs). Each /tokenize body goes to seen.
func newLlamaCppVocab(t *testing.T, addBOS bool, seen chan<- map[string]any) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /apply-template", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages           []promptsize.Message `json:"messages"`
			ChatTemplateKwargs map[string]any       `json:"chat_template_kwargs"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		prompt := bos + render(req.Messages, true) + thinkOff(req.ChatTemplateKwargs)
		if addBOS {
			prompt = strings.TrimPrefix(prompt, bos)
		}
		json.NewEncoder(w).Encode(map[string]string{"prompt": prompt})
	})
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var raw map[string]any
		if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if seen != nil {
			select {
			case seen <- raw:
			default:
			}
		}
		content, ok := raw["content"].(string)
		if !ok {
			// llama.cpp answers a body without content with no tokens.
			json.NewEncoder(w).Encode(map[string]any{"tokens": []int{}})
			return
		}
		if parse, _ := raw["parse_special"].(bool); !parse {
			http.Error(w, "expected parse_special", http.StatusBadRequest)
			return
		}
		ids := tokenize(content)
		if add, _ := raw["add_special"].(bool); add && addBOS {
			ids = append([]int{1}, ids...)
		}
		// llama.cpp with with_pieces answers objects; use that shape.
		toks := make([]map[string]any, len(ids))
		for i, id := range ids {
			toks[i] = map[string]any{"id": id, "piece": "x"}
		}
		json.NewEncoder(w).Encode(map[string]any{"tokens": toks})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// inference is the test llama.cpp server's count of a chat completion of
// msgs, whatever its vocabulary: the rendering with its BOS (stripped and
// added back where the vocabulary adds one, kept where it does not).
func inference(msgs []promptsize.Message) int {
	return len(tokenize(bos + render(msgs, true)))
}

func TestVLLMCount(t *testing.T) {
	seen := make(chan vllmReq, 1)
	srv := newVLLM(t, seen)
	c := &remote.VLLM{BaseURL: srv.URL + "/", Model: "m", Header: http.Header{"Authorization": {"Bearer k"}}}
	msgs := []promptsize.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "one two three"}}
	n, err := c.Count(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	// <|im_start|> system Be brief. <|im_end|> = 5; <|im_start|> user one
	// two three <|im_end|> = 6; <|im_start|> assistant = 2.
	if n != 13 {
		t.Errorf("count = %d, want 13", n)
	}
	req := testkit.RecvWithin(t, seen, testkit.Patience)
	if req.Model != "m" || req.AddGenerationPrompt == nil || !*req.AddGenerationPrompt {
		t.Errorf("request model %q, add_generation_prompt %v; want m, true", req.Model, req.AddGenerationPrompt)
	}
	if diff := cmp.Diff(msgs, req.Messages); diff != "" {
		t.Errorf("messages sent (-want +got):\n%s", diff)
	}
}

func TestVLLMConformance(t *testing.T) {
	srv := newVLLM(t, nil)
	countertest.Run(t, &remote.VLLM{BaseURL: srv.URL, Header: http.Header{"Authorization": {"Bearer k"}}},
		&countertest.Options{Waits: true})
}

// TestLlamaCppCount: the count is the server's usage.prompt_tokens for
// the same chat, for a vocabulary that adds a BOS (which /apply-template
// strips and add_special puts back) and one that does not (the template's
// BOS stays, add_special adds nothing); /tokenize is asked with
// add_special and parse_special.
func TestLlamaCppCount(t *testing.T) {
	msgs := []promptsize.Message{{Role: "user", Content: "one two three"}}
	for _, addBOS := range []bool{true, false} {
		seen := make(chan map[string]any, 1)
		srv := newLlamaCppVocab(t, addBOS, seen)
		n, err := (&remote.LlamaCpp{BaseURL: srv.URL}).Count(context.Background(), msgs)
		if err != nil {
			t.Fatal(err)
		}
		// BOS 1, the user turn 6, the generation prompt 2.
		if want := inference(msgs); n != want || want != 9 {
			t.Errorf("add_bos_token %v: count %d, want the server's %d (9)", addBOS, n, want)
		}
		if body := testkit.RecvWithin(t, seen, testkit.Patience); body["add_special"] != true || body["parse_special"] != true {
			t.Errorf("add_bos_token %v: /tokenize body %v, want add_special and parse_special true", addBOS, body)
		}
	}
}

// TestNoTokens: a /tokenize that answers 200 with no token for a chat is
// an error wrapping ErrNoTokens that names the likely cause: vLLM's shape
// sent to llama.cpp's server.
func TestNoTokens(t *testing.T) {
	srv := newLlamaCpp(t)
	_, err := (&remote.VLLM{BaseURL: srv.URL}).Count(context.Background(), []promptsize.Message{{Role: "user", Content: "Hello"}})
	if !errors.Is(err, remote.ErrNoTokens) {
		t.Fatalf("VLLM on llama.cpp's /tokenize: %v, want an error wrapping ErrNoTokens", err)
	}
	for _, want := range []string{"POST " + srv.URL + "/tokenize", "no tokens", "llama.cpp", "remote.LlamaCpp"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// An empty chat is no chat: 0 is what the server says.
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"count": 0, "tokens": []}`))
	}))
	defer empty.Close()
	if n, err := (&remote.VLLM{BaseURL: empty.URL}).Count(context.Background(), nil); err != nil || n != 0 {
		t.Errorf("VLLM of no message on a server counting 0: %d, %v; want 0 and no error", n, err)
	}
	if _, err := (&remote.LlamaCpp{BaseURL: empty.URL}).Count(context.Background(), []promptsize.Message{{Role: "user", Content: "x"}}); err == nil {
		t.Error("LlamaCpp on a server whose /apply-template answers no prompt: no error")
	}
}

func TestLlamaCppConformance(t *testing.T) {
	srv := newLlamaCpp(t)
	countertest.Run(t, &remote.LlamaCpp{BaseURL: srv.URL}, &countertest.Options{Waits: true})
}

func TestBuilderOverRemote(t *testing.T) {
	srv := newLlamaCpp(t)
	b := &promptsize.Builder{Counter: &remote.LlamaCpp{BaseURL: srv.URL}}
	p, err := b.BuildSalted(context.Background(), 500, promptsize.Salt(9))
	if err != nil {
		t.Fatal(err)
	}
	if p.Tokens != 500 || inference(p.Messages) != 500 {
		t.Errorf("remote-built prompt: Tokens %d, server count %d; want 500", p.Tokens, inference(p.Messages))
	}
}

func TestNoEndpoint(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /tokenize", func(w http.ResponseWriter, r *http.Request) {}) // POST → 405
	srv := httptest.NewServer(mux)
	defer srv.Close()

	_, err := (&remote.VLLM{BaseURL: srv.URL}).Count(context.Background(), []promptsize.Message{{Role: "user", Content: "x"}})
	var ee *remote.EndpointError
	if !errors.Is(err, remote.ErrNoEndpoint) || !errors.As(err, &ee) || ee.Status != http.StatusMethodNotAllowed {
		t.Fatalf("VLLM on a server with GET /tokenize only: %v; want a 405 EndpointError", err)
	}
	for _, want := range []string{"POST " + srv.URL + "/tokenize", "405", "remote.LlamaCpp", "promptsize/hf"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}

	_, err = (&remote.LlamaCpp{BaseURL: srv.URL}).Count(context.Background(), []promptsize.Message{{Role: "user", Content: "x"}})
	if !errors.As(err, &ee) || ee.Status != http.StatusNotFound || !strings.Contains(err.Error(), "/apply-template") ||
		!strings.Contains(err.Error(), "remote.VLLM") {
		t.Errorf("LlamaCpp on a server without /apply-template: %v; want a 404 naming the endpoint and remote.VLLM", err)
	}
}

func TestServerErrors(t *testing.T) {
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"500", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":"model not loaded"}`, http.StatusInternalServerError)
		}, "answered 500 Internal Server Error; expected 200: {\"error\":\"model not loaded\"}"},
		{"not json", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) }, "expected a JSON object"},
		{"no count", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"max_model_len": 4}`)) }, "neither count nor tokens"},
		{"disagree", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"count": 3, "tokens": [1,2]}`)) }, "count 3 but 2 tokens"},
		{"negative", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"count": -1}`)) }, "count -1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			_, err := (&remote.VLLM{BaseURL: srv.URL}).Count(context.Background(), []promptsize.Message{{Role: "user", Content: "x"}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v; want one containing %q", err, tc.want)
			}
		})
	}
}

func TestParseTokenizeResponse(t *testing.T) {
	cases := []struct {
		body string
		want int
		ok   bool
	}{
		{`{"count": 4, "max_model_len": 100, "tokens": [1, 2, 3, 4]}`, 4, true},
		{`{"count": 7}`, 7, true},
		{`{"tokens": [5, 6]}`, 2, true},
		{`{"tokens": [{"id": 5, "piece": "a"}, {"id": 6, "piece": [98]}]}`, 2, true},
		{`{"tokens": []}`, 0, true},
		{`{"count": 2.5}`, 0, false},
		{`{"count": "3"}`, 3, true}, // a quoted number is read too
		{`{"tokens": null}`, 0, false},
		{`[]`, 0, false},
		{``, 0, false},
	}
	for _, tc := range cases {
		n, err := remote.ParseTokenizeResponse([]byte(tc.body))
		if (err == nil) != tc.ok || n != tc.want {
			t.Errorf("ParseTokenizeResponse(%s) = %d, %v; want %d, ok=%t", tc.body, n, err, tc.want, tc.ok)
		}
	}
}

func FuzzParseTokenizeResponse(f *testing.F) {
	for _, s := range []string{`{"count": 4, "tokens": [1,2,3,4]}`, `{"tokens":[{"id":1,"piece":"a"}]}`, `{"count":1e3}`,
		`{"count": 99999999999999999999}`, `{"count":-0}`, `{}`, `null`, `{"tokens":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		n, err := remote.ParseTokenizeResponse(body)
		if err == nil && n < 0 {
			t.Fatalf("count %d < 0 without an error", n)
		}
	})
}

func FuzzParseApplyTemplateResponse(f *testing.F) {
	for _, s := range []string{`{"prompt": "<|im_start|>user\nhi<|im_end|>\n"}`, `{"prompt": null}`, `{"prompt": 3}`, `{}`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := remote.ParseApplyTemplateResponse(body)
		if err != nil && p != "" {
			t.Fatalf("prompt %q returned with error %v", p, err)
		}
	})
}

// TestTemplateVars: WithTemplateVars sends its variables as
// chat_template_kwargs, merged over the Counter's own, and the count is the
// server's rendering with them; the Counter it was made from is unchanged
// and sends none it was not given.
func TestTemplateVars(t *testing.T) {
	msgs := []promptsize.Message{{Role: "user", Content: "one two three"}}
	off := map[string]any{"enable_thinking": false, "thinking": false}
	type withVars interface {
		WithTemplateVars(map[string]any) promptsize.Counter
	}
	seen := make(chan vllmReq, 1)
	vllm := newVLLM(t, seen)
	llama := newLlamaCpp(t)
	for _, tc := range []struct {
		name string
		c    promptsize.Counter
	}{
		{"vllm", &remote.VLLM{BaseURL: vllm.URL, Header: http.Header{"Authorization": {"Bearer k"}}, TemplateVars: map[string]any{"x": "y"}}},
		{"llamacpp", &remote.LlamaCpp{BaseURL: llama.URL, TemplateVars: map[string]any{"x": "y"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := tc.c.Count(t.Context(), msgs)
			if err != nil {
				t.Fatal(err)
			}
			wv, ok := tc.c.(withVars)
			if !ok {
				t.Fatalf("%T has no WithTemplateVars", tc.c)
			}
			n, err := wv.WithTemplateVars(off).Count(t.Context(), msgs)
			if err != nil || n != base+2 {
				t.Errorf("count with enable_thinking false = %d, %v; want the server's %d (the empty think block's 2 tokens more)", n, err, base+2)
			}
			if again, err := tc.c.Count(t.Context(), msgs); err != nil || again != base {
				t.Errorf("the Counter counts %d, %v after WithTemplateVars; want %d", again, err, base)
			}
			if same, err := wv.WithTemplateVars(nil).Count(t.Context(), msgs); err != nil || same != base {
				t.Errorf("WithTemplateVars(nil) counts %d, %v; want %d", same, err, base)
			}
		})
	}
	// What vLLM's /tokenize receives: the Counter's variables and the
	// new ones, and none from a Counter without variables.
	for range 4 {
		select {
		case <-seen:
		default:
		}
	}
	c := &remote.VLLM{BaseURL: vllm.URL, Header: http.Header{"Authorization": {"Bearer k"}}, TemplateVars: map[string]any{"x": "y", "thinking": true}}
	if _, err := c.WithTemplateVars(off).Count(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"x": "y", "enable_thinking": false, "thinking": false}
	if got := testkit.RecvWithin(t, seen, testkit.Patience).ChatTemplateKwargs; !cmp.Equal(got, want) {
		t.Errorf("chat_template_kwargs sent: %v; want %v", got, want)
	}
	if _, err := (&remote.VLLM{BaseURL: vllm.URL, Header: http.Header{"Authorization": {"Bearer k"}}}).Count(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	if got := testkit.RecvWithin(t, seen, testkit.Patience).ChatTemplateKwargs; got != nil {
		t.Errorf("a Counter without variables sent chat_template_kwargs %v; want none", got)
	}
}
