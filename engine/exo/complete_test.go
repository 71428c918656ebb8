package exo

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
)

const llama = "mlx-community/Llama-3.2-1B-Instruct-4bit"

// recorder is a handler that serves one canned answer and records the
// requests it got.
type recorder struct {
	mu          sync.Mutex
	paths       []string
	bodies      []map[string]any
	headers     []http.Header
	status      int
	contentType string
	body        []byte
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	r.mu.Lock()
	r.paths = append(r.paths, req.URL.Path)
	r.bodies = append(r.bodies, m)
	r.headers = append(r.headers, req.Header.Clone())
	r.mu.Unlock()
	ct := r.contentType
	if ct == "" {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	if r.status != 0 {
		w.WriteHeader(r.status)
	}
	_, _ = w.Write(r.body)
}

// benchPrompt is the prompt of benchRequest: 8192 bytes, enough for the
// fixtures' prompt counts (recorded with an 8191-token prompt) to be
// plausible (engine.MaxPlausiblePromptCount bounds them by bytes).
var benchPrompt = strings.Repeat("a ", 4096)

func benchRequest(stream bool) engine.Request {
	return engine.Request{
		Model:     llama,
		Messages:  []engine.Message{{Role: "user", Content: benchPrompt}},
		MaxTokens: 4,
		Stream:    stream,
		IgnoreEOS: true,
	}
}

// errorStrings turns warnings into their messages for comparison.
func errorStrings(errs []error) []string {
	var s []string
	for _, e := range errs {
		s = append(s, e.Error())
	}
	return s
}

func TestCompleteBenchJSON(t *testing.T) {
	rec := &recorder{body: fixture(t, "bench_response.json")}
	clk := newStepClock()
	opts := fastOptions()
	opts.Now = clk.Now
	c, _ := newTestClient(t, rec, opts)

	var hooked []time.Time
	ctx := engine.WithSendHook(context.Background(), func(t time.Time) { hooked = append(hooked, t) })
	res, err := c.Complete(ctx, benchRequest(false))
	if err != nil {
		t.Fatal(err)
	}

	wantBody := map[string]any{
		"model":            llama,
		"messages":         []any{map[string]any{"role": "user", "content": benchPrompt}},
		"stream":           false,
		"max_tokens":       4.0,
		"logprobs":         false,
		"use_prefix_cache": false,
	}
	if diff := cmp.Diff([]string{BenchPath}, rec.paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantBody, rec.bodies[0]); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
	if got := rec.headers[0].Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", got)
	}

	wantPower := &engine.PowerUsage{
		ElapsedSeconds: 2.61, TotalAvgSysPowerWatts: 61.8, TotalEnergyJoules: 161.3,
		PrefillSeconds: ptr(0.64), GenerationSeconds: ptr(1.97),
		PrefillEnergyJoules: ptr(44.9), GenerationEnergyJoules: ptr(116.4),
		PrefillAvgSysPowerWatts: ptr(70.2), GenerationAvgSysPowerWatts: ptr(59.0),
		Nodes: []engine.NodePower{{NodeID: "12D3KooWA1", Samples: 5, AvgSysPower: 61.8,
			PrefillAvgSysPower: ptr(70.2), GenerationAvgSysPower: ptr(59.0),
			PrefillEnergyJoules: ptr(44.9), GenerationEnergyJoules: ptr(116.4)}},
	}
	wantStats := &engine.ServerStats{PromptTPS: 2315.4, GenerationTPS: 187.2, PromptTokens: 4096,
		GenerationTokens: 4, PeakMemoryBytes: 2415919104, PrefixCacheHit: engine.PrefixCacheNone}
	if diff := cmp.Diff(wantStats, res.ServerStats); diff != "" {
		t.Errorf("ServerStats (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantPower, res.Power); diff != "" {
		t.Errorf("Power (-want +got):\n%s", diff)
	}
	if res.Usage != nil {
		t.Errorf("Usage = %+v, want nil (exo sends null)", res.Usage)
	}
	if res.Text != " a a a a" || res.ResponseID != "3f7e2a64-1c1b-4a8e-9d1e-5e0c2b8a9f10" || res.FinishReason != "length" || res.Model != llama {
		t.Errorf("text/id/finish/model = %q %q %q %q", res.Text, res.ResponseID, res.FinishReason, res.Model)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings: %v", res.Warnings)
	}
	if err := res.Trace.Validate(); err != nil {
		t.Errorf("trace: %v", err)
	}
	if len(res.Trace.Chunks) != 0 {
		t.Errorf("non-streaming trace has %d chunks, want 0", len(res.Trace.Chunks))
	}
	if !res.Trace.Start.Before(res.Trace.Headers) || !res.Trace.Headers.Before(res.Trace.End) {
		t.Errorf("trace instants out of order: %+v", res.Trace)
	}
	if len(hooked) != 1 || !hooked[0].Equal(res.Trace.Start) {
		t.Errorf("send hook got %v, want once with Trace.Start %v", hooked, res.Trace.Start)
	}
}

func TestCompleteBenchNullStats(t *testing.T) {
	rec := &recorder{body: fixture(t, "bench_response_cancelled.json")}
	c, _ := newTestClient(t, rec, nil)
	res, err := c.Complete(context.Background(), benchRequest(false))
	if err != nil {
		t.Fatal(err)
	}
	if res.ServerStats != nil {
		t.Errorf("ServerStats = %+v, want nil for null generation_stats", res.ServerStats)
	}
	want := &engine.PowerUsage{ElapsedSeconds: 0.5, Nodes: []engine.NodePower{}}
	if diff := cmp.Diff(want, res.Power); diff != "" {
		t.Errorf("Power (-want +got):\n%s", diff)
	}
	if len(res.Warnings) != 1 || !errors.Is(res.Warnings[0], engine.ErrNoStats) {
		t.Errorf("warnings = %v, want one wrapping ErrNoStats", res.Warnings)
	}
}

func TestCompleteChatPath(t *testing.T) {
	body := `{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`
	rec := &recorder{body: []byte(body)}
	c, _ := newTestClient(t, rec, nil)
	temp := 0.0
	req := engine.Request{Model: "m", Messages: []engine.Message{{Role: "user", Content: "x"}},
		Temperature: &temp, Stop: []string{"\n"}, Extra: map[string]any{"enable_thinking": false},
		Header: http.Header{"X-Test": {"1"}}}
	res, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if rec.paths[0] != ChatPath {
		t.Errorf("path = %q, want %q", rec.paths[0], ChatPath)
	}
	want := map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": "x"}},
		"stream": false, "temperature": 0.0, "stop": []any{"\n"}, "enable_thinking": false}
	if diff := cmp.Diff(want, rec.bodies[0]); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	if rec.headers[0].Get("X-Test") != "1" {
		t.Errorf("request header X-Test not sent")
	}
	if diff := cmp.Diff(&engine.Usage{PromptTokens: 9, CompletionTokens: 1, TotalTokens: 10}, res.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if res.Text != "hi" || res.ServerStats != nil || res.Power != nil || len(res.Warnings) != 0 {
		t.Errorf("result = %+v", res)
	}
}

func TestCompleteStream(t *testing.T) {
	rec := &recorder{body: fixture(t, "stream_bench.sse"), contentType: "text/event-stream"}
	clk := newStepClock()
	opts := fastOptions()
	opts.Now = clk.Now
	c, _ := newTestClient(t, rec, opts)
	var progress []PrefillProgress
	ctx := WithPrefillProgress(context.Background(), func(p PrefillProgress) {
		p.At = time.Time{}
		progress = append(progress, p)
	})
	res, err := c.Complete(ctx, benchRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	if rec.bodies[0]["stream"] != true || rec.headers[0].Get("Accept") != "text/event-stream" {
		t.Errorf("stream request: body stream=%v, Accept %q", rec.bodies[0]["stream"], rec.headers[0].Get("Accept"))
	}
	if err := res.Trace.Validate(); err != nil {
		t.Fatalf("trace: %v", err)
	}
	var tokens []int
	for _, ch := range res.Trace.Chunks {
		tokens = append(tokens, ch.Tokens)
	}
	// Four data chunks, one per token, the second with empty text.
	if diff := cmp.Diff([]int{1, 1, 1, 1}, tokens); diff != "" {
		t.Errorf("chunk tokens (-want +got):\n%s", diff)
	}
	if res.Text != " a a a" {
		t.Errorf("text = %q, want %q", res.Text, " a a a")
	}
	wantStats := &engine.ServerStats{PromptTPS: 2315.4, GenerationTPS: 187.2, PromptTokens: 8191,
		GenerationTokens: 4, PeakMemoryBytes: 2415919104, PrefixCacheHit: engine.PrefixCachePartial}
	if diff := cmp.Diff(wantStats, res.ServerStats); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	zero := 0 // the stream states cached_tokens and reasoning_tokens 0, which is not "not reported"
	if diff := cmp.Diff(&engine.Usage{PromptTokens: 8191, CompletionTokens: 4, TotalTokens: 8195, CachedTokens: &zero, ReasoningTokens: &zero}, res.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]PrefillProgress{{Processed: 4096, Total: 8191}, {Processed: 8190, Total: 8191}}, progress); diff != "" {
		t.Errorf("prefill progress (-want +got):\n%s", diff)
	}
	if res.FinishReason != "length" || res.ResponseID != "3f7e2a64-1c1b-4a8e-9d1e-5e0c2b8a9f10" || res.Power != nil {
		t.Errorf("finish %q id %q power %v", res.FinishReason, res.ResponseID, res.Power)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings: %v", res.Warnings)
	}
	// The step clock makes every reading distinct: the chunks, read after
	// the headers, carry later instants; the reader stamps the events of
	// one read with that read's instant, so they may share one.
	if !res.Trace.Chunks[0].At.After(res.Trace.Headers) || res.Trace.End.Before(res.Trace.Chunks[3].At) {
		t.Errorf("chunk instants not inside (Headers, End): %+v", res.Trace)
	}
}

// sseBody joins events into a stream.
func sseBody(events ...string) []byte {
	return []byte(strings.Join(events, "\n\n") + "\n\n")
}

func TestCompleteStreamUsageDeltas(t *testing.T) {
	chunk := func(content string, completion int) string {
		return `data: {"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"` +
			content + `"}}],"usage":{"prompt_tokens":5,"completion_tokens":` + itoa(completion) + `,"total_tokens":` + itoa(5+completion) + `}}`
	}
	tests := []struct {
		name   string
		events []string
		want   []int
		warns  int
	}{
		{"usage on every chunk gives deltas",
			[]string{chunk("ab", 2), chunk("c", 3), chunk("de", 5), "data: [DONE]"}, []int{2, 1, 2}, 0},
		{"usage only at the end counts one per chunk",
			[]string{
				`data: {"id":"x","choices":[{"index":0,"delta":{"content":"a"}}]}`,
				`data: {"id":"x","choices":[{"index":0,"delta":{"content":"b"}}]}`,
				chunk("c", 3), "data: [DONE]"}, []int{1, 1, 1}, 0},
		{"a usage-only chunk is no token but seeds the delta",
			[]string{`data: {"id":"x","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":0,"total_tokens":5}}`,
				chunk("ab", 2), chunk("c", 3), "data: [DONE]"}, []int{2, 1}, 0},
		{"usage that disagrees with the chunks warns",
			[]string{
				`data: {"id":"x","choices":[{"index":0,"delta":{"content":"a"}}]}`,
				chunk("b", 7), "data: [DONE]"}, []int{1, 1}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{body: sseBody(tt.events...), contentType: "text/event-stream; charset=utf-8"}
			c, _ := newTestClient(t, rec, nil)
			res, err := c.Complete(context.Background(), engine.Request{Model: "m", Stream: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, ch := range res.Trace.Chunks {
				got = append(got, ch.Tokens)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("tokens (-want +got):\n%s", diff)
			}
			if len(res.Warnings) != tt.warns {
				t.Errorf("warnings = %v, want %d", res.Warnings, tt.warns)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestCompleteStreamErrorAfter200(t *testing.T) {
	rec := &recorder{body: fixture(t, "stream_error.sse"), contentType: "text/event-stream"}
	c, _ := newTestClient(t, rec, nil)
	res, err := c.Complete(context.Background(), benchRequest(true))
	if engine.KindOf(err) != engine.KindStreamError {
		t.Fatalf("error kind = %q (%v), want %q", engine.KindOf(err), err, engine.KindStreamError)
	}
	var se *engine.StreamError
	if !errors.As(err, &se) {
		t.Fatalf("error %v holds no *engine.StreamError", err)
	}
	if diff := cmp.Diff(engine.StreamError{Message: "Metal GPU timeout on rank 0", Type: "InternalServerError", Code: 500}, *se); diff != "" {
		t.Errorf("stream error (-want +got):\n%s", diff)
	}
	if len(res.Trace.Chunks) != 2 || res.Trace.End.IsZero() {
		t.Errorf("partial trace: %d chunks, end %v; want 2 chunks and an end", len(res.Trace.Chunks), res.Trace.End)
	}
	if err := res.Trace.Validate(); err != nil {
		t.Errorf("partial trace invalid: %v", err)
	}
}

func TestCompleteStreamFailures(t *testing.T) {
	tok := `data: {"id":"x","choices":[{"index":0,"delta":{"content":"a"}}]}`
	tests := []struct {
		name, contentType string
		body              []byte
		want              engine.Kind
	}{
		{"no [DONE]", "text/event-stream", sseBody(tok, tok), engine.KindTruncated},
		{"chunk not JSON", "text/event-stream", sseBody(tok, "data: {not json", "data: [DONE]"), engine.KindMalformed},
		{"stats not JSON", "text/event-stream", sseBody(tok, ": generation_stats {oops", "data: [DONE]"), engine.KindMalformed},
		{"JSON instead of a stream", "application/json", fixture(t, "bench_response.json"), engine.KindMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{body: tt.body, contentType: tt.contentType}
			c, _ := newTestClient(t, rec, nil)
			res, err := c.Complete(context.Background(), engine.Request{Model: "m", Stream: true})
			if got := engine.KindOf(err); got != tt.want {
				t.Errorf("kind = %q (%v), want %q", got, err, tt.want)
			}
			if res.Trace.Start.IsZero() || res.Trace.End.IsZero() {
				t.Errorf("trace lacks start or end: %+v", res.Trace)
			}
		})
	}
}

func TestCompleteStatusError(t *testing.T) {
	for _, tt := range []struct {
		file    string
		code    int
		message string
	}{
		{"error_404.json", 404, "No instance found for model " + llama},
		{"error_422.json", 422, ""},
	} {
		t.Run(tt.file, func(t *testing.T) {
			rec := &recorder{body: fixture(t, tt.file), status: tt.code}
			c, _ := newTestClient(t, rec, nil)
			_, err := c.Complete(context.Background(), benchRequest(false))
			var se *engine.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is no *engine.StatusError", err)
			}
			if se.Code != tt.code || tt.message != "" && se.Message != tt.message {
				t.Errorf("status error = %d %q, want %d %q", se.Code, se.Message, tt.code, tt.message)
			}
			if len(rec.paths) != 1 {
				t.Errorf("bench request sent %d times, want once (never retried)", len(rec.paths))
			}
		})
	}
}

func TestCompleteNeverRetried(t *testing.T) {
	rec := &recorder{body: []byte(`{"error":{"message":"boom","type":"Internal Server Error","param":null,"code":500}}`), status: 500}
	c, _ := newTestClient(t, rec, nil)
	_, err := c.Complete(context.Background(), benchRequest(false))
	if engine.KindOf(err) != engine.KindStatus {
		t.Fatalf("kind = %q, want status", engine.KindOf(err))
	}
	if len(rec.paths) != 1 {
		t.Errorf("sent %d times, want 1", len(rec.paths))
	}
}

func TestCompleteCanceled(t *testing.T) {
	arrived := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body lets the server notice the client leaving.
		_, _ = io.ReadAll(r.Body)
		close(arrived)
		<-r.Context().Done()
	})
	c, _ := newTestClient(t, h, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }()
	res, err := c.Complete(ctx, benchRequest(false))
	if engine.KindOf(err) != engine.KindCanceled || !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v (kind %q), want canceled", err, engine.KindOf(err))
	}
	if res.Trace.Start.IsZero() || res.Trace.End.Before(res.Trace.Start) {
		t.Errorf("trace = %+v", res.Trace)
	}
}

func TestCompleteConnectError(t *testing.T) {
	c, srv := newTestClient(t, http.NotFoundHandler(), nil)
	srv.Close()
	_, err := c.Complete(context.Background(), benchRequest(false))
	if got := engine.KindOf(err); got != engine.KindConnect {
		t.Errorf("kind = %q (%v), want connect", got, err)
	}
}

func TestCompleteWarnings(t *testing.T) {
	one := `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"content":"a"},"finish_reason":"length"}],"usage":null,` +
		`"generation_stats":{"prompt_tps":10,"generation_tps":0.0,"prompt_tokens":5,"generation_tokens":1,"peak_memory_usage":{"inBytes":1}},"power_usage":null}`
	rec := &recorder{body: []byte(one)}
	c, _ := newTestClient(t, rec, nil)
	req := benchRequest(false)
	req.MinTokens = 3
	res, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"exo: min_tokens=3 not sent: exo has no such parameter (use IgnoreEOS for an exact count)",
		"exo: generation_tps is 0 because 1 generated token(s) leave no interval: the rate is undefined, not 0",
		`exo: bench request asked for 4 tokens, generation_stats says 1 were generated (finish_reason "length")`,
	}
	if diff := cmp.Diff(want, errorStrings(res.Warnings)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if _, ok := rec.bodies[0]["min_tokens"]; ok {
		t.Errorf("min_tokens was sent")
	}
	if res.ServerStats.PrefixCacheHit != engine.PrefixCacheNone {
		t.Errorf("missing prefix_cache_hit decoded as %q, want none", res.ServerStats.PrefixCacheHit)
	}
}

// TestCompletePromptRefused: exo serves chat completions only, so a
// request with a completion Prompt is refused before anything is sent.
func TestCompletePromptRefused(t *testing.T) {
	rec := &recorder{body: []byte(`{}`), contentType: "application/json"}
	c, _ := newTestClient(t, rec, nil)
	for _, p := range []*engine.Prompt{{Tokens: []int{1, 2, 3}}, {Text: "Once upon a time"}} {
		_, err := c.Complete(context.Background(), engine.Request{Model: "m", Prompt: p, MaxTokens: 4})
		if engine.KindOf(err) != engine.KindOther || !strings.Contains(err.Error(), "chat completions only") {
			t.Errorf("Prompt %+v: error %v, want one of kind other saying exo serves chat only", p, err)
		}
	}
	if len(rec.paths) != 0 {
		t.Errorf("%d requests sent, want none", len(rec.paths))
	}
}
