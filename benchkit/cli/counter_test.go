package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/promptsize/remote"
)

// llamaBOS is the fake llama.cpp server's BOS.
const llamaBOS = "<|begin_of_text|>"

// fakeLlamaCpp is a server that answers as llama.cpp's does, for a model
// whose vocabulary adds a BOS: its routes at the root (none under /v1
// but the OpenAI ones), /tokenize of "content" only (a body without it
// gets {"tokens": []}), /apply-template that strips the template's BOS,
// its one model listed under its file name, and Server: llama.cpp on
// every answer.
type fakeLlamaCpp struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
}

// served is the fake llama.cpp server's model.
const served = "tiny-llama-3.1.gguf"

func newFakeLlamaCpp(t *testing.T) *fakeLlamaCpp {
	f := &fakeLlamaCpp{}
	words := func(s string) int { return len(strings.Fields(strings.ReplaceAll(s, llamaBOS, " "+llamaBOS+" "))) }
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"`+served+`","object":"model","owned_by":"llamacpp"}]}`)
	})
	mux.HandleFunc("POST /apply-template", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []promptsize.Message `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		var b strings.Builder
		b.WriteString(llamaBOS) // the template's, stripped: the vocabulary adds one
		for _, m := range req.Messages {
			b.WriteString(" " + m.Role + ": " + m.Content)
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"prompt": strings.TrimPrefix(b.String(), llamaBOS)})
	})
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		content, ok := req["content"].(string)
		n := 0
		if ok {
			n = words(content)
			if add, _ := req["add_special"].(bool); add {
				n++
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"tokens": make([]int, n)})
	})
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.paths = append(f.paths, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		w.Header().Set("Server", "llama.cpp")
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// startTarget checks and starts a Target with args, returning its stderr.
func startTarget(t *testing.T, args ...string) (*Target, string, error) {
	t.Helper()
	tg := &Target{Program: "prog"}
	parseTarget(t, tg, args...)
	ctx := context.Background()
	if err := tg.Check(ctx, args, 0); err != nil {
		return tg, "", err
	}
	var stderr strings.Builder
	err := tg.Start(ctx, &stderr)
	t.Cleanup(tg.Close)
	return tg, stderr.String(), err
}

// TestTargetCountsWithLlamaCpp: without --tokenizer a llama.cpp server,
// named by its root or by its OpenAI API under /v1, counts with
// /apply-template and /tokenize, at the root, as the server does (the BOS
// it adds back at inference included); --server-counter llamacpp says so
// outright, and --server-counter tokenize gets an error that names the
// likely cause.
func TestTargetCountsWithLlamaCpp(t *testing.T) {
	srv := newFakeLlamaCpp(t)
	msgs := []promptsize.Message{{Role: "user", Content: "one two three"}}
	const want = 1 + 1 + 3 // the BOS, "user:" and three words
	for _, args := range [][]string{
		{"--base-url", srv.URL + "/v1"},
		{"--base-url", srv.URL + "/"},
		{"--base-url", srv.URL, "--server-counter", CounterLlamaCpp},
	} {
		tg, _, err := startTarget(t, args...)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if _, ok := tg.Counter.(*remote.LlamaCpp); !ok || !strings.Contains(tg.Info.Tokenizer, "llama.cpp") || tg.Model != served {
			t.Errorf("%q: counter %T (%s), model %q; want llama.cpp's, the served model", args, tg.Counter, tg.Info.Tokenizer, tg.Model)
			continue
		}
		if n, err := tg.Counter.Count(context.Background(), msgs); err != nil || n != want {
			t.Errorf("%q: count %d, %v; want %d, as the server counts", args, n, err, want)
		}
	}
	_, _, err := startTarget(t, "--base-url", srv.URL, "--server-counter", CounterTokenize)
	if !errors.Is(err, remote.ErrNoTokens) || !strings.Contains(err.Error(), "remote.LlamaCpp") {
		t.Errorf("--server-counter tokenize on llama.cpp: %v; want an error wrapping ErrNoTokens that names llama.cpp's counter", err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, p := range srv.paths {
		if strings.HasPrefix(p, "POST /v1/") {
			t.Errorf("asked %s: the counter's endpoints are at the root", p)
		}
	}
}

// TestTargetCountsWithVLLMUnderV1: a vLLM server named by its OpenAI API
// under /v1 counts with /tokenize at its root.
func TestTargetCountsWithVLLMUnderV1(t *testing.T) {
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer srv.Close()
	tg, _, err := startTarget(t, "--base-url", srv.VLLMURL+"/v1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tg.Counter.(*remote.VLLM); !ok || tg.Info.Tokenizer != "the server's /tokenize" {
		t.Errorf("counter %T (%s), want the server's /tokenize", tg.Counter, tg.Info.Tokenizer)
	}
}

// TestTargetServerCounterUsage: --server-counter takes auto, tokenize or
// llamacpp, and anything else is a usage error.
func TestTargetServerCounterUsage(t *testing.T) {
	tg := &Target{Program: "prog"}
	parseTarget(t, tg, "--server-counter", "bogus")
	var ue *UsageError
	if err := tg.Check(context.Background(), nil, 0); !errors.As(err, &ue) || !strings.Contains(err.Error(), "llamacpp") {
		t.Errorf("--server-counter bogus: %v; want a usage error naming the choices", err)
	}
}

// TestTargetWarnsOfUnservedModel: a --model that llama.cpp does not serve
// is warned about at start (llama.cpp would answer every request under
// it), naming the served model; the served name gets no warning. Another
// server that does not list it gets a warning too.
func TestTargetWarnsOfUnservedModel(t *testing.T) {
	srv := newFakeLlamaCpp(t)
	_, stderr, err := startTarget(t, "--base-url", srv.URL, "--model", "no-such-model")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"no-such-model"`, served, "llama.cpp", "any name"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q does not mention %s", stderr, want)
		}
	}
	tg, stderr, err := startTarget(t, "--base-url", srv.URL, "--model", served)
	if err != nil || strings.Contains(stderr, "warning") {
		t.Errorf("--model %s: %v, stderr %q; want no warning", served, err, stderr)
	}
	if c, err := tg.OpenAI(openaiOptions()); err != nil || c == nil {
		t.Errorf("the target's client: %v", err)
	}

	vllm := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer vllm.Close()
	_, stderr, err = startTarget(t, "--base-url", vllm.VLLMURL, "--model", "no-such-model")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, `--model "no-such-model" is not among the server's models`) || !strings.Contains(stderr, vllm.Model()) {
		t.Errorf("stderr %q: want a warning naming the server's models", stderr)
	}
}
