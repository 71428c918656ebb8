package metrics

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// llamaCppText writes llama-server's /metrics (to_metrics: counters and
// gauges, no labels, no request counter) after requests that each decoded
// n tokens at step seconds a step (n − 1 steps from the first token to the
// last) and prompt tokens evaluated and cached.
func llamaCppText(ns []int, step float64, prompt, cached int) string {
	tokens, seconds := 0, 0.0
	for _, n := range ns {
		tokens += n
		seconds += float64(n-1) * step
	}
	var b strings.Builder
	counter := func(name, help string, v float64) {
		fmt.Fprintf(&b, "# HELP llamacpp:%s %s\n# TYPE llamacpp:%s counter\nllamacpp:%s %g\n", name, help, name, name, v)
	}
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(&b, "# HELP llamacpp:%s %s\n# TYPE llamacpp:%s gauge\nllamacpp:%s %g\n", name, help, name, name, v)
	}
	counter("prompt_tokens_total", "Number of prompt tokens processed, excluding cached tokens", float64(prompt))
	counter("prompt_tokens_cached_total", "Number of prompt tokens reused from the cache", float64(cached))
	counter("prompt_seconds_total", "Total time spent processing prompts", float64(prompt)*0.0002)
	counter("tokens_predicted_total", "Number of generation tokens processed", float64(tokens))
	counter("tokens_predicted_seconds_total", "Total time spent generating tokens", seconds)
	counter("n_decode_total", "Total number of llama_decode() calls", float64(tokens))
	gauge("n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call", 1)
	gauge("prompt_tokens_seconds", "Average prompt throughput in tokens/s.", 5000)
	gauge("predicted_tokens_seconds", "Average generation throughput in tokens/s.", 1/step)
	gauge("requests_processing", "Number of requests processing.", 0)
	gauge("requests_deferred", "Number of requests deferred.", 0)
	gauge("n_tokens_max", "Largest observed n_tokens.", 1024)
	return b.String()
}

// TestLlamaCpp: the output speed its counters give runs n/(n−1) high;
// LlamaCppStepSpeed, handed the requests, gives the per-step speed its
// own timings give. Cached prompt tokens are read and the hit rate counts
// them beside the tokens evaluated. It has no request counter, and says so.
func TestLlamaCpp(t *testing.T) {
	step := 1 / 89.3
	before := parseString(t, llamaCppText([]int{60}, step, 100, 0))
	after := parseString(t, llamaCppText([]int{60, 60, 60, 60, 60}, step, 1100, 3000))
	if before.Server() != ServerLlamaCpp || ServerLlamaCpp.CountsRequests() {
		t.Errorf("server %q, counts requests %v", before.Server(), ServerLlamaCpp.CountsRequests())
	}
	w, warns := Delta(before, after)
	if len(warns) != 0 {
		t.Fatal(warns)
	}
	out, ok := w.LlamaCppOutputSpeed()
	if !ok || math.Abs(out-89.3*60/59) > 1e-6 {
		t.Errorf("output speed %v, want the n/(n−1)-high %v", out, 89.3*60/59)
	}
	speed, ok := w.LlamaCppStepSpeed(4)
	if !ok || math.Abs(speed-89.3) > 1e-6 {
		t.Errorf("step speed over 4 requests %v, %v; want 89.3", speed, ok)
	}
	for _, n := range []int{0, -1, 241} {
		if v, ok := w.LlamaCppStepSpeed(n); ok {
			t.Errorf("step speed over %d requests: %v", n, v)
		}
	}
	if v, ok := w.CachedTokens(); !ok || v != 3000 {
		t.Errorf("cached tokens %v, %v", v, ok)
	}
	if v, ok := w.PromptTokens(); !ok || v != 1000 {
		t.Errorf("prompt tokens %v, %v", v, ok)
	}
	if r, ok := w.PrefixHitRate(); !ok || r != 0.75 {
		t.Errorf("hit rate %v, %v; want 3000 cached of 1000 evaluated + 3000", r, ok)
	}
	if w.HasRequestCounter() || w.Server().CountsRequests() || w.Server() != ServerLlamaCpp {
		t.Errorf("request counter %v, server %q", w.HasRequestCounter(), w.Server())
	}
	if _, ok := w.Requests(); ok {
		t.Error("a request count from llama.cpp")
	}
	if err := w.CheckRequests(7); err != nil {
		t.Errorf("CheckRequests without a counter: %v", err)
	}
	// The others count requests; an unknown server is expected to.
	for _, s := range []Server{ServerVLLM, ServerSGLang, ServerTGI, ServerUnknown} {
		if !s.CountsRequests() {
			t.Errorf("%q counts no requests", s)
		}
	}
}
