package exo

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
)

// FuzzParseCompletion feeds arbitrary bench bodies to the non-streaming
// parser and its checks: they must never panic, what the parser accepts is
// a consistent result, and what the checks accept has every server number
// within its bound.
func FuzzParseCompletion(f *testing.F) {
	f.Add(fixture(f, "bench_response.json"))
	f.Add(fixture(f, "bench_response_cancelled.json"))
	f.Add([]byte(`{"generation_stats":{"prompt_tps":1,"generation_tps":2,"prompt_tokens":3,"generation_tokens":4,"peak_memory_usage":{"in_bytes":5},"prefix_cache_hit":"exact"},"power_usage":null}`))
	f.Add([]byte(`{"generation_stats":{"peak_memory_usage":{"inBytes":1e3}},"power_usage":{"nodes":[{"node_id":"n","prefill_energy_joules":null}]}}`))
	f.Add([]byte(`{"choices":[],"usage":{"prompt_tokens":1}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"generation_stats":{"prompt_tps":100,"generation_tps":65000000000000000000,"prompt_tokens":3,"generation_tokens":2000000000000000000}}`))
	f.Add([]byte(`{"generation_stats":{"generation_tps":-3461.8},"usage":{"prompt_tokens":-1,"completion_tokens":2000000000000000000}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var res engine.Result
		if err := parseCompletion(data, &res); err != nil {
			if engine.KindOf(err) != engine.KindMalformed {
				t.Errorf("parse error of kind %q, want malformed: %v", engine.KindOf(err), err)
			}
			return
		}
		if res.ServerStats != nil && res.ServerStats.PrefixCacheHit == "" {
			t.Errorf("accepted stats with an empty prefix_cache_hit")
		}
		req := engine.Request{Messages: []engine.Message{{Role: "user", Content: "a a"}}, MaxTokens: 8}
		if err := checkCompletion(req, &res); err != nil {
			if engine.KindOf(err) != engine.KindImplausibleUsage {
				t.Errorf("check error of kind %q, want implausible_usage: %v", engine.KindOf(err), err)
			}
			return
		}
		checkPlausible(t, req, res)
	})
}

// checkPlausible fails t when an accepted result carries a server number
// past its bound.
func checkPlausible(t *testing.T, req engine.Request, res engine.Result) {
	t.Helper()
	limit, promptLimit := engine.MaxPlausibleCount(req.MaxTokens), engine.MaxPlausiblePromptCount(req.Messages)
	if u := res.Usage; u != nil && (u.CompletionTokens < 0 || u.CompletionTokens > limit || u.PromptTokens < 0 || u.PromptTokens > promptLimit) {
		t.Errorf("accepted usage %+v past its bounds %d, %d", u, limit, promptLimit)
	}
	if st := res.ServerStats; st != nil {
		if st.GenerationTokens < 0 || st.GenerationTokens > limit || st.PromptTokens < 0 || st.PromptTokens > promptLimit {
			t.Errorf("accepted stats counts %+v past their bounds %d, %d", st, limit, promptLimit)
		}
		for _, v := range []float64{st.PromptTPS, st.GenerationTPS} {
			if !(v >= 0 && v <= engine.MaxPlausibleRate) {
				t.Errorf("accepted stats rate %v", v)
			}
		}
	}
	if n := res.Trace.Tokens(); n > limit {
		t.Errorf("accepted a trace of %d tokens, bound %d", n, limit)
	}
	if len(res.Text) > engine.MaxKeptText {
		t.Errorf("kept %d bytes of text", len(res.Text))
	}
}

// FuzzStatsCasing builds exo's generation_stats and power_usage from
// fuzzed values in both casings of peak memory (the JSON body's inBytes,
// the stream comment's in_bytes) and checks that both decode to the
// values they were built from.
func FuzzStatsCasing(f *testing.F) {
	f.Add(2315.4, 187.2, 4096, 128, int64(2415919104), "none", 2.61, 161.3, 44.9)
	f.Add(0.0, 0.0, 1, 1, int64(0), "exact", 0.0, 0.0, -1.0)
	f.Add(1e-9, 1e9, 0, 32168, int64(1)<<52, "partial", 1e4, 5e5, 0.0)
	f.Fuzz(func(t *testing.T, ptps, gtps float64, pt, gt int, peak int64, hit string, elapsed, energyJ, prefillJ float64) {
		if peak < 0 || peak > 1<<53 || hit == "" || !utf8.ValidString(hit) {
			return // exo's peak is a non-negative float64 count of bytes
		}
		for _, v := range []float64{ptps, gtps, elapsed, energyJ, prefillJ} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return // not representable in JSON
			}
		}
		want := engine.ServerStats{PromptTPS: ptps, GenerationTPS: gtps, PromptTokens: pt, GenerationTokens: gt,
			PeakMemoryBytes: peak, PrefixCacheHit: engine.PrefixCacheHit(hit)}
		var prefill *float64
		if prefillJ >= 0 {
			prefill = &prefillJ
		}
		wantPower := engine.PowerUsage{ElapsedSeconds: elapsed, TotalEnergyJoules: energyJ, PrefillEnergyJoules: prefill,
			Nodes: []engine.NodePower{{NodeID: "n", PrefillEnergyJoules: prefill}}}
		for _, key := range []string{"inBytes", "in_bytes"} {
			stats := map[string]any{"prompt_tps": ptps, "generation_tps": gtps, "prompt_tokens": pt, "generation_tokens": gt,
				"peak_memory_usage": map[string]any{key: peak}, "prefix_cache_hit": hit}
			power := map[string]any{"elapsed_seconds": elapsed, "total_energy_joules": energyJ, "prefill_energy_joules": prefill,
				"nodes": []any{map[string]any{"node_id": "n", "prefill_energy_joules": prefill}}}
			body, err := json.Marshal(map[string]any{"id": "x", "generation_stats": stats, "power_usage": power, "usage": nil})
			if err != nil {
				t.Fatal(err)
			}
			var res engine.Result
			if err := parseCompletion(body, &res); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			if diff := cmp.Diff(&want, res.ServerStats); diff != "" {
				t.Errorf("%s: stats (-want +got):\n%s", key, diff)
			}
			if diff := cmp.Diff(&wantPower, res.Power); diff != "" {
				t.Errorf("%s: power (-want +got):\n%s", key, diff)
			}
			// The stream comment's payload is the stats object alone.
			payload, _ := json.Marshal(stats)
			st, err := engine.ParseGenerationStats(payload)
			if err != nil || !cmp.Equal(want, st) {
				t.Errorf("%s: stream payload decodes to %+v, %v", key, st, err)
			}
		}
	})
}

// FuzzStream feeds arbitrary bytes to the stream reader through a real
// Complete call on a canned server: it must never panic, a trace it
// returns must be valid, and what it accepts has every server number
// within its bound.
func FuzzStream(f *testing.F) {
	f.Add(fixture(f, "stream_bench.sse"))
	f.Add(fixture(f, "stream_error.sse"))
	f.Add([]byte(": prefill_progress {\"PrefillProgressChunk\":{\"processed_tokens\":1}}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"usage\":{\"completion_tokens\":3}}\n\ndata: [DONE]\n\n"))
	// Usage that jumps to 1e18 and 2e7, or falls; absurd stats.
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"usage\":{\"completion_tokens\":1}}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"usage\":{\"completion_tokens\":1000000000000000000}}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"usage\":{\"completion_tokens\":20000000}}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"usage\":{\"completion_tokens\":2}}\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n: generation_stats {\"generation_tps\":-3461.8,\"generation_tokens\":2000000000000000000}\n\ndata: [DONE]\n\n"))
	rec := &recorder{contentType: "text/event-stream"}
	c, _ := newTestClient(f, rec, nil)
	var mu = make(chan struct{}, 1)
	f.Fuzz(func(t *testing.T, data []byte) {
		mu <- struct{}{}
		defer func() { <-mu }() // bounded: the send above put a token in mu
		rec.mu.Lock()
		rec.body = data
		rec.paths, rec.bodies, rec.headers = nil, nil, nil
		rec.mu.Unlock()
		req := engine.Request{Model: "m", Stream: true, MaxTokens: 8, Messages: []engine.Message{{Role: "user", Content: "a a"}}}
		res, err := c.Complete(context.Background(), req)
		if verr := res.Trace.Validate(); verr != nil && !res.Trace.Start.IsZero() {
			t.Errorf("stream gives an invalid trace (error %v): %v", err, verr)
		}
		if err == nil {
			checkPlausible(t, req, res)
		}
	})
}

// FuzzTagged feeds arbitrary JSON to the tagged-union decoders: they must
// never panic.
func FuzzTagged(f *testing.F) {
	for _, name := range []string{"previews.json", "state_instances.json", "runners.json", "downloads.json"} {
		f.Add(fixture(f, name))
	}
	f.Add([]byte(`{"RunnerLoading":{"layers_loaded":1,"total_layers":2}}`))
	f.Add([]byte(`{"inBytes":12}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = parsePreviews(data)
		_, _ = parseInstances(data)
		var rs map[string]RunnerStatus
		_ = json.Unmarshal(data, &rs)
		var ds []Download
		_ = json.Unmarshal(data, &ds)
		var m memory
		_ = json.Unmarshal(data, &m)
		var nm NodeMetrics
		_ = json.Unmarshal(data, &nm)
		var l InstanceLink
		_ = json.Unmarshal(data, &l)
		var ts map[string]Task
		_ = json.Unmarshal(data, &ts)
	})
}
