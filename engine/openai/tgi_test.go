package openai

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
)

// tgiBody is a non-streamed chat completion as text-generation-inference
// writes it (router/src/lib.rs ChatCompletion: object, id, created,
// model, system_fingerprint, choices, usage).
const tgiBody = `{"object":"chat.completion","id":"","created":1764420400,"model":"meta-llama/Llama-3.1-8B-Instruct","system_fingerprint":"3.3.4-sha-9f38d93","choices":[{"index":0,"message":{"role":"assistant","content":"The quick brown fox"},"logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":21,"completion_tokens":4,"total_tokens":25}}`

// TestTGIHeaders: TGI's timing headers on a response that is not streamed
// become the request's server stats, in TGI's units (whole
// milliseconds); a malformed header is left out with a warning; an
// implausible count fails the request; a response without them has none.
func TestTGIHeaders(t *testing.T) {
	d := func(ms int) *time.Duration { v := time.Duration(ms) * time.Millisecond; return &v }
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    *engine.ServerStats
		warn    string
		kind    engine.Kind
	}{
		{"all", map[string]string{"x-compute-type": "gpu+optimized", "x-compute-time": "0.251306", "x-compute-characters": "88",
			"x-total-time": "251", "x-validation-time": "2", "x-queue-time": "17", "x-inference-time": "232", "x-time-per-token": "58",
			"x-prompt-tokens": "21", "x-generated-tokens": "4"},
			&engine.ServerStats{Source: "tgi", PrefixCacheHit: engine.PrefixCacheNone, Queue: d(17), Inference: d(232), Total: d(251),
				PromptTokens: 21, GenerationTokens: 4, GenerationTPS: 4 / (232 * time.Millisecond).Seconds()}, "", ""},
		{"malformed queue", map[string]string{"x-total-time": "251", "x-queue-time": "1.5e3", "x-inference-time": "-4"},
			&engine.ServerStats{Source: "tgi", PrefixCacheHit: engine.PrefixCacheNone, Total: d(251)}, "x-queue-time", ""},
		{"implausible count", map[string]string{"x-inference-time": "232", "x-generated-tokens": "900000"}, nil, "", engine.KindImplausibleUsage},
		{"none", map[string]string{"x-compute-type": "gpu+optimized"}, nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.headers {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(tgiBody))
			}))
			defer srv.Close()
			c := newClient(t, srv.URL, nil)
			res, err := c.Complete(context.Background(), engine.Request{Model: "m", MaxTokens: 4})
			if tc.kind != "" {
				if engine.KindOf(err) != tc.kind {
					t.Fatalf("error %v; want kind %s", err, tc.kind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, res.ServerStats); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
			warned := false
			for _, w := range res.Warnings {
				warned = warned || tc.warn != "" && strings.Contains(strings.ToLower(w.Error()), tc.warn)
			}
			if tc.warn != "" && !warned {
				t.Errorf("warnings %v; want one naming %s", res.Warnings, tc.warn)
			}
		})
	}
}

// FuzzTGIHeaders: any header values decode without a panic into stats
// with no negative duration or count, or into an implausible-usage error.
func FuzzTGIHeaders(f *testing.F) {
	f.Add("17", "232", "251", "21", "4")
	f.Add("", "9223372036854775807", "-1", "x", "99999999999999999999")
	f.Add(" 3 ", "0", "", "0", "0")
	f.Fuzz(func(t *testing.T, queue, inference, total, prompt, generated string) {
		h := http.Header{}
		for k, v := range map[string]string{tgiQueue: queue, tgiInference: inference, tgiTotal: total, tgiPrompt: prompt, tgiGenerated: generated} {
			h.Set(k, v)
		}
		st, _, err := tgiStats(h, 64)
		if err != nil {
			if engine.KindOf(err) != engine.KindImplausibleUsage {
				t.Fatalf("error %v of kind %s", err, engine.KindOf(err))
			}
			return
		}
		if st == nil {
			return
		}
		for _, d := range []*time.Duration{st.Queue, st.Inference, st.Total} {
			if d != nil && *d < 0 {
				t.Fatalf("negative duration in %+v", st)
			}
		}
		if st.PromptTokens < 0 || st.GenerationTokens < 0 || st.GenerationTokens > engine.MaxPlausibleCount(64) || st.GenerationTPS < 0 {
			t.Fatalf("implausible stats %+v", st)
		}
	})
}
