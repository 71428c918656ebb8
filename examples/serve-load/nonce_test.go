package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/inferbench/inferbench/engine/sim"
)

// cacheProxy forwards to the embedded engine and records, for every
// unstreamed chat completion, the cached_tokens the engine reports in
// its own "sim" block: how much of the prompt its prefix cache served.
type cacheProxy struct {
	mu     sync.Mutex
	cached []int
}

func (c *cacheProxy) take() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.cached
	c.cached = nil
	return got
}

func startCacheProxy(t *testing.T) (*cacheProxy, string) {
	return startCacheProxyWith(t, sim.Options{Preset: sim.Fast()})
}

func startCacheProxyWith(t *testing.T, opts sim.Options) (*cacheProxy, string) {
	t.Helper()
	srv, err := sim.Start(context.Background(), "127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	target, _ := url.Parse(srv.URL)
	c := &cacheProxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(r *http.Response) error {
		if !strings.HasSuffix(r.Request.URL.Path, "/chat/completions") {
			return nil
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		var v struct {
			Sim *struct {
				Cached *int `json:"cached_tokens"`
			} `json:"sim"`
		}
		if err := json.Unmarshal(b, &v); err != nil || v.Sim == nil || v.Sim.Cached == nil {
			t.Errorf("the engine's answer has no sim.cached_tokens: %v %.200s", err, b)
			return nil
		}
		c.mu.Lock()
		c.cached = append(c.cached, *v.Sim.Cached)
		c.mu.Unlock()
		return nil
	}
	p := httptest.NewServer(rp)
	t.Cleanup(p.Close)
	return c, p.URL + "/vllm"
}

// TestServeLoadFreshPrompts: two consecutive serve-load runs against one
// embedded engine, whose prefix cache is on for its OpenAI API: with a
// random run nonce the second run's requests find nothing in the cache
// (cached_tokens 0 for every request), where two runs given the same
// --seed (the same nonce, the same prompts) are served from it; and a
// --shared-prefix ablation shares exactly its tokens.
func TestServeLoadFreshPrompts(t *testing.T) {
	// --allow-saturated: the prompts are under test, not the client's
	// dispatch skew, which a loaded machine may push past the gate.
	args := []string{"--allow-saturated", "--pp", "200", "--tg", "2", "--num-requests", "6", "--rate", "inf", "--stream=false", "--timeout", "30s"}
	// The second run's requests all arrive after the first run's have
	// been prefilled and cached.
	runTwice := func(t *testing.T, extra ...string) (first, second []int, nonces []string) {
		c, base := startCacheProxy(t)
		for i := range 2 {
			var stdout, stderr bytes.Buffer
			a := append(append([]string{"--base-url", base}, args...), extra...)
			if err := run(context.Background(), a, &stdout, &stderr); err != nil {
				t.Fatalf("run %d: %v\n%s", i, err, stderr.String())
			}
			_, after, ok := strings.Cut(stderr.String(), "run nonce ")
			if !ok {
				t.Fatalf("run %d printed no run nonce:\n%s", i, stderr.String())
			}
			nonces = append(nonces, strings.Fields(after)[0])
			if i == 0 {
				first = c.take()
			} else {
				second = c.take()
			}
		}
		if len(first) != 6 || len(second) != 6 {
			t.Fatalf("the engine answered %d and %d requests, want 6 each", len(first), len(second))
		}
		return first, second, nonces
	}
	t.Run("random nonce", func(t *testing.T) {
		_, second, nonces := runTwice(t)
		if nonces[0] == nonces[1] {
			t.Errorf("both runs drew nonce %q", nonces[0])
		}
		for i, n := range second {
			if n != 0 {
				t.Errorf("second run, request %d: %d cached tokens, want 0 (fresh prompts)", i, n)
			}
		}
	})
	t.Run("same seed", func(t *testing.T) {
		_, second, nonces := runTwice(t, "--seed", "7")
		// Same seed: same nonce, same prompts.
		if nonces[0] != nonces[1] {
			t.Errorf("--seed 7 drew nonces %q and %q, want one", nonces[0], nonces[1])
		}
		for i, n := range second {
			if n < 100 {
				t.Errorf("second run, request %d: %d cached tokens; the same prompts again should be served from the cache", i, n)
			}
		}
	})
	t.Run("shared prefix", func(t *testing.T) {
		_, second, _ := runTwice(t, "--shared-prefix", "64")
		for i, n := range second {
			// vLLM's dialect caches whole blocks of 16 tokens: the template
			// and the 64 shared tokens hold 4 or 5 of them.
			if n < 64 || n > 96 {
				t.Errorf("request %d: %d cached tokens, want the 64 shared ones and the template, rounded to blocks", i, n)
			}
		}
	})
}

// TestServeLoadTokenGranularCache: against a cache that reuses any common
// token prefix (the embedded engine with blocks of one token, as
// llama.cpp's per-slot cache reuses tokens), the prompts of a run share
// nothing but the chat template's tokens before the content — the
// embedded engine's <|im_start|> user \n, 3 tokens — because every salt
// opens with the request's own index: each request after the first is
// served exactly those 3 tokens from the cache, not one content token.
// (The template's own tokens are the same in every request, so even a
// run meant to share nothing has a measured hit rate of 3 tokens a
// request on such a cache, not 0.) With --shared-prefix 16 exactly 16
// content tokens more are served.
func TestServeLoadTokenGranularCache(t *testing.T) {
	const n, pp, template = 8, 200, 3
	for _, shared := range []int{0, 16} {
		c, base := startCacheProxyWith(t, sim.Options{Preset: sim.Fast(), BlockSize: 1})
		args := []string{"--base-url", base, "--allow-saturated", "--pp", fmt.Sprint(pp), "--tg", "2", "--num-requests", fmt.Sprint(n),
			"--rate", "inf", "--stream=false", "--timeout", "30s", "--shared-prefix", fmt.Sprint(shared)}
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stderr); err != nil {
			t.Fatalf("shared %d: %v\n%s", shared, err, stderr.String())
		}
		cached := c.take()
		if len(cached) != n {
			t.Fatalf("shared %d: the engine answered %d requests, want %d", shared, len(cached), n)
		}
		slices.Sort(cached)
		want := make([]int, n)
		for i := 1; i < n; i++ {
			want[i] = template + shared
		}
		if !slices.Equal(cached, want) {
			t.Errorf("shared %d: cached tokens per request %v, want %v: the first none, every other the template's %d and the %d shared", shared, cached, want, template, shared)
		}
	}
}
