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

// tokenize is the test servers' tokenizer: special markers are one token
// each, the rest one token per white-space separated field.
func tokenize(text string) []int {
	var ids []int
	for _, f := range strings.Fields(strings.NewReplacer("<|im_start|>", " <|im_start|> ", "<|im_end|>", " <|im_end|> ").Replace(text)) {
		ids = append(ids, len(f))
	}
	return ids
}

type vllmReq struct {
	Model               string               `json:"model"`
	Messages            []promptsize.Message `json:"messages"`
	AddGenerationPrompt *bool                `json:"add_generation_prompt"`
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
		ids := tokenize(render(req.Messages, req.AddGenerationPrompt != nil && *req.AddGenerationPrompt))
		json.NewEncoder(w).Encode(map[string]any{"count": len(ids), "max_model_len": 32768, "tokens": ids})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// newLlamaCpp serves llama.cpp's /apply-template and /tokenize shapes.
func newLlamaCpp(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /apply-template", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []promptsize.Message `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"prompt": render(req.Messages, true)})
	})
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Content      string `json:"content"`
			AddSpecial   bool   `json:"add_special"`
			ParseSpecial bool   `json:"parse_special"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !req.ParseSpecial {
			http.Error(w, "expected parse_special", http.StatusBadRequest)
			return
		}
		ids := tokenize(req.Content)
		if req.AddSpecial {
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

func TestLlamaCppCount(t *testing.T) {
	srv := newLlamaCpp(t)
	c := &remote.LlamaCpp{BaseURL: srv.URL}
	n, err := c.Count(context.Background(), []promptsize.Message{{Role: "user", Content: "one two three"}})
	if err != nil {
		t.Fatal(err)
	}
	if n != 8 {
		t.Errorf("count = %d, want 8 (6 for the user turn, 2 for the generation prompt)", n)
	}
	c.AddSpecial = true
	if n, _ := c.Count(context.Background(), []promptsize.Message{{Role: "user", Content: "one two three"}}); n != 9 {
		t.Errorf("count with add_special = %d, want 9", n)
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
	if p.Tokens != 500 || len(tokenize(render(p.Messages, true))) != 500 {
		t.Errorf("remote-built prompt: Tokens %d, server count %d; want 500", p.Tokens, len(tokenize(render(p.Messages, true))))
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
