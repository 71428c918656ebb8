package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
)

func TestServerStatsBothCasings(t *testing.T) {
	want := engine.ServerStats{
		PromptTPS: 2315.4, GenerationTPS: 187.2, PromptTokens: 4096, GenerationTokens: 128,
		PeakMemoryBytes: 2415919104, PrefixCacheHit: engine.PrefixCacheNone,
	}
	for _, tc := range []struct{ name, in string }{
		{"json body (by alias)", `{"prompt_tps": 2315.4, "generation_tps": 187.2, "prompt_tokens": 4096,
			"generation_tokens": 128, "peak_memory_usage": {"inBytes": 2415919104}, "prefix_cache_hit": "none"}`},
		{"stream comment (no alias)", `{"prompt_tps":2315.4,"generation_tps":187.2,"prompt_tokens":4096,"generation_tokens":128,"peak_memory_usage":{"in_bytes":2415919104},"prefix_cache_hit":"none"}`},
		{"no prefix_cache_hit (sequential engine)", `{"prompt_tps":2315.4,"generation_tps":187.2,"prompt_tokens":4096,"generation_tokens":128,"peak_memory_usage":{"in_bytes":2415919104}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := engine.ParseGenerationStats([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ParseGenerationStats mismatch (-want +got):\n%s", diff)
			}
		})
	}
	// Encoding gives exo's JSON-body form, which decodes back to the same value.
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	const wantJSON = `{"prompt_tps":2315.4,"generation_tps":187.2,"prompt_tokens":4096,"generation_tokens":128,"peak_memory_usage":{"inBytes":2415919104},"prefix_cache_hit":"none"}`
	if string(b) != wantJSON {
		t.Errorf("Marshal = %s\nwant      %s", b, wantJSON)
	}
	var back engine.ServerStats
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, back); diff != "" {
		t.Errorf("round trip mismatch (-want +got):\n%s", diff)
	}
}

func TestParseGenerationStatsRejects(t *testing.T) {
	for _, in := range []string{"", "null", " null ", "[1]", `{"prompt_tps": "fast"}`, "{"} {
		if _, err := engine.ParseGenerationStats([]byte(in)); err == nil {
			t.Errorf("ParseGenerationStats(%q) = nil error, want one", in)
		}
	}
	if _, err := engine.ParseGenerationStats([]byte("null")); !errors.Is(err, engine.ErrNoStats) {
		t.Errorf("ParseGenerationStats(null) = %v, want ErrNoStats", err)
	}
}

func TestUsageJSON(t *testing.T) {
	in := `{"prompt_tokens":4096,"completion_tokens":128,"total_tokens":4224,"prompt_tokens_details":{"cached_tokens":7,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}`
	var u engine.Usage
	if err := json.Unmarshal([]byte(in), &u); err != nil {
		t.Fatal(err)
	}
	seven, none := 7, 0
	want := engine.Usage{PromptTokens: 4096, CompletionTokens: 128, TotalTokens: 4224, CachedTokens: &seven, ReasoningTokens: &none}
	if diff := cmp.Diff(want, u); diff != "" {
		t.Errorf("Usage mismatch (-want +got):\n%s", diff)
	}
	b, _ := json.Marshal(u)
	if got, w := string(b), `{"prompt_tokens":4096,"completion_tokens":128,"total_tokens":4224,"prompt_tokens_details":{"cached_tokens":7},"completion_tokens_details":{"reasoning_tokens":0}}`; got != w {
		t.Errorf("Marshal = %s, want %s", got, w)
	}
	b, _ = json.Marshal(engine.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3})
	if got, w := string(b), `{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}`; got != w {
		t.Errorf("Marshal = %s, want %s", got, w)
	}
	// Reported 0 (nothing cached) and not reported stay apart, both ways.
	zero := 0
	b, _ = json.Marshal(engine.Usage{PromptTokens: 1, CachedTokens: &zero})
	if got, w := string(b), `{"prompt_tokens":1,"completion_tokens":0,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":0}}`; got != w {
		t.Errorf("Marshal = %s, want %s", got, w)
	}
	for in, want := range map[string]*int{
		`{"prompt_tokens":3,"prompt_tokens_details":{"cached_tokens":0}}`:    &zero,
		`{"prompt_tokens":3,"prompt_tokens_details":{"cached_tokens":null}}`: nil,
		`{"prompt_tokens":3,"prompt_tokens_details":null}`:                   nil,
		`{"prompt_tokens":3,"prompt_tokens_details":{}}`:                     nil,
		`{"prompt_tokens":3}`: nil,
	} {
		var u engine.Usage
		if err := json.Unmarshal([]byte(in), &u); err != nil {
			t.Fatal(err)
		}
		got, ok := u.Cached()
		if ok != (want != nil) || (want != nil && got != *want) {
			t.Errorf("%s: Cached() = %d, %v; want %v", in, got, ok, want)
		}
	}
}

func TestPowerUsageJSON(t *testing.T) {
	in := `{"elapsed_seconds": 2.61, "total_avg_sys_power_watts": 61.8, "total_energy_joules": 161.3,
	 "prefill_seconds": 0.64, "generation_seconds": 1.97,
	 "prefill_energy_joules": 44.9, "generation_energy_joules": null,
	 "prefill_avg_sys_power_watts": 70.2, "generation_avg_sys_power_watts": 59.0,
	 "nodes": [{"node_id": "n1", "samples": 5, "avg_sys_power": 61.8,
	            "prefill_avg_sys_power": 70.2, "generation_avg_sys_power": 59.0,
	            "prefill_energy_joules": 44.9, "generation_energy_joules": 116.4}]}`
	var p engine.PowerUsage
	if err := json.Unmarshal([]byte(in), &p); err != nil {
		t.Fatal(err)
	}
	f := func(v float64) *float64 { return &v }
	want := engine.PowerUsage{
		ElapsedSeconds: 2.61, TotalAvgSysPowerWatts: 61.8, TotalEnergyJoules: 161.3,
		PrefillSeconds: f(0.64), GenerationSeconds: f(1.97), PrefillEnergyJoules: f(44.9),
		PrefillAvgSysPowerWatts: f(70.2), GenerationAvgSysPowerWatts: f(59.0),
		Nodes: []engine.NodePower{{NodeID: "n1", Samples: 5, AvgSysPower: 61.8,
			PrefillAvgSysPower: f(70.2), GenerationAvgSysPower: f(59.0),
			PrefillEnergyJoules: f(44.9), GenerationEnergyJoules: f(116.4)}},
	}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("PowerUsage mismatch (-want +got):\n%s", diff)
	}
}

func TestStatusError(t *testing.T) {
	tests := []struct {
		name, body  string
		wantMessage string
	}{
		{"exo envelope", `{"error": {"message": "No instance found for model m", "type": "Not Found", "param": null, "code": 404}}`, "No instance found for model m"},
		{"string error", `{"error": "model not loaded"}`, "model not loaded"},
		{"vllm object error", `{"object":"error","message":"bad max_tokens","type":"BadRequestError","param":null,"code":400}`, "bad max_tokens"},
		{"fastapi detail", `{"detail":[{"loc":["body","model"],"msg":"field required"}]}`, `[{"loc":["body","model"],"msg":"field required"}]`},
		{"plain text", `upstream connect error`, ""},
		{"empty", ``, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := engine.NewStatusError(404, []byte(tc.body))
			if e.Code != 404 || e.Message != tc.wantMessage || e.Body != tc.body {
				t.Errorf("NewStatusError = %+v, want code 404, message %q, body %q", e, tc.wantMessage, tc.body)
			}
			if !strings.Contains(e.Error(), "404") || !strings.Contains(e.Error(), "want 2xx") {
				t.Errorf("Error() = %q, want it to name 404 and 2xx", e.Error())
			}
			if got := engine.KindOf(fmt.Errorf("wrapped: %w", e)); got != engine.KindStatus {
				t.Errorf("KindOf = %q, want %q", got, engine.KindStatus)
			}
		})
	}
}

func TestStatusErrorBodyBounded(t *testing.T) {
	body := strings.Repeat("é", engine.MaxBodyExcerpt) // 2 bytes per rune
	e := engine.NewStatusError(500, []byte(body))
	got := strings.TrimSuffix(e.Body, "…")
	if len(got) > engine.MaxBodyExcerpt || len(got) < engine.MaxBodyExcerpt-3 {
		t.Errorf("excerpt has %d bytes, want within 3 of %d", len(got), engine.MaxBodyExcerpt)
	}
	if !strings.HasSuffix(e.Body, "…") || strings.ContainsRune(got, '\uFFFD') || !strings.HasPrefix(body, got) {
		t.Errorf("excerpt %q is not a clean prefix ending in …", e.Body)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

func TestKindOf(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	tests := []struct {
		name string
		err  error
		want engine.Kind
	}{
		{"nil", nil, engine.KindNone},
		{"typed", &engine.Error{Kind: engine.KindMalformed, Err: errors.New("x")}, engine.KindMalformed},
		{"typed wrapped", fmt.Errorf("ctx: %w", &engine.Error{Kind: engine.KindTruncated}), engine.KindTruncated},
		{"canceled", fmt.Errorf("get: %w", context.Canceled), engine.KindCanceled},
		{"deadline", context.DeadlineExceeded, engine.KindTimeout},
		{"net timeout", timeoutErr{}, engine.KindTimeout},
		{"dial", dial, engine.KindConnect},
		{"dns", &net.DNSError{Err: "no such host", Name: "x"}, engine.KindConnect},
		{"other", io.EOF, engine.KindOther},
	}
	for _, tc := range tests {
		if got := engine.KindOf(tc.err); got != tc.want {
			t.Errorf("%s: KindOf(%v) = %q, want %q", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestWrap(t *testing.T) {
	bg := context.Background()
	canceled, cancel := context.WithCancel(bg)
	cancel()
	expired, cancel2 := context.WithDeadline(bg, time.Unix(0, 0))
	defer cancel2()
	reset := errors.New("read: connection reset by peer")

	tests := []struct {
		name     string
		ctx      context.Context
		fallback engine.Kind
		err      error
		want     engine.Kind
		is       error
	}{
		{"fallback reset", bg, engine.KindReset, reset, engine.KindReset, reset},
		{"fallback truncated", bg, engine.KindTruncated, io.ErrUnexpectedEOF, engine.KindTruncated, io.ErrUnexpectedEOF},
		{"ctx canceled beats cause", canceled, engine.KindReset, reset, engine.KindCanceled, context.Canceled},
		{"ctx canceled keeps cause", canceled, engine.KindReset, reset, engine.KindCanceled, reset},
		{"ctx expired", expired, engine.KindTruncated, reset, engine.KindTimeout, context.DeadlineExceeded},
		{"cause says timeout", bg, engine.KindTruncated, timeoutErr{}, engine.KindTimeout, nil},
		{"cause says dial", bg, engine.KindReset, &net.OpError{Op: "dial", Err: reset}, engine.KindConnect, reset},
	}
	for _, tc := range tests {
		err := engine.Wrap(tc.ctx, tc.fallback, "POST /x", tc.err)
		var e *engine.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: Wrap = %T, want *engine.Error", tc.name, err)
		}
		if e.Kind != tc.want || e.Op != "POST /x" {
			t.Errorf("%s: Wrap = {Kind %q, Op %q}, want {%q, %q}", tc.name, e.Kind, e.Op, tc.want, "POST /x")
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: errors.Is(%v, %v) = false", tc.name, err, tc.is)
		}
	}
	if engine.Wrap(bg, engine.KindReset, "op", nil) != nil {
		t.Error("Wrap(nil) != nil")
	}
	se := engine.NewStatusError(503, nil)
	if got := engine.Wrap(canceled, engine.KindReset, "op", se); got != error(se) {
		t.Errorf("Wrap(StatusError) = %v, want it unchanged", got)
	}
	e := &engine.Error{Kind: engine.KindMalformed, Op: "read", Err: errors.New("bad json")}
	if got := engine.Wrap(bg, engine.KindReset, "op", e); got != error(e) {
		t.Errorf("Wrap(*Error) = %v, want it unchanged", got)
	}
	if got, want := e.Error(), "engine: read: malformed: bad json"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestSendHook(t *testing.T) {
	ctx := context.Background()
	if engine.SendHook(ctx) != nil {
		t.Fatal("SendHook on a bare context is not nil")
	}
	engine.NotifySend(ctx, time.Now()) // no hook: must not panic
	var got []time.Time
	ctx = engine.WithSendHook(ctx, func(t time.Time) { got = append(got, t) })
	at := time.Unix(100, 5)
	engine.NotifySend(ctx, at)
	if diff := cmp.Diff([]time.Time{at}, got); diff != "" {
		t.Errorf("hook calls mismatch (-want +got):\n%s", diff)
	}
}

func TestFuncAdapters(t *testing.T) {
	ctx := context.Background()
	e := engine.Func(func(_ context.Context, r engine.Request) (engine.Result, error) {
		return engine.Result{Text: r.Model}, nil
	})
	if r, _ := e.Complete(ctx, engine.Request{Model: "m"}); r.Text != "m" {
		t.Errorf("Func.Complete text = %q, want m", r.Text)
	}
	var n int
	_ = engine.PrewarmFunc(func(_ context.Context, k int) error { n = k; return nil }).Prewarm(ctx, 3)
	if n != 3 {
		t.Errorf("PrewarmFunc got n = %d, want 3", n)
	}
	ms, _ := engine.ModelListerFunc(func(context.Context) ([]engine.Model, error) {
		return []engine.Model{{ID: "a/b", Name: "b"}}, nil
	}).Models(ctx)
	if diff := cmp.Diff([]engine.Model{{ID: "a/b", Name: "b"}}, ms); diff != "" {
		t.Errorf("ModelListerFunc mismatch:\n%s", diff)
	}
	c, _ := engine.TokenCounterFunc(func(_ context.Context, _ string, m []engine.Message) (int, error) {
		return len(m), nil
	}).CountTokens(ctx, "m", []engine.Message{{Role: "user", Content: "x"}})
	if c != 1 {
		t.Errorf("TokenCounterFunc = %d, want 1", c)
	}
}

func TestServerStatsOtherServersRoundTrip(t *testing.T) {
	n := 96
	d := func(ms int) *time.Duration { v := time.Duration(ms) * time.Millisecond; return &v }
	want := engine.ServerStats{
		PromptTokens: 128, GenerationTokens: 32, PrefixCacheHit: engine.PrefixCachePartial,
		Source: "llama.cpp", CachedTokens: &n, Queue: d(3), Prefill: d(41), Decode: d(310),
		Inference: d(351), Load: d(7), Total: d(362),
	}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	const wantJSON = `{"prompt_tps":0,"generation_tps":0,"prompt_tokens":128,"generation_tokens":32,"prefix_cache_hit":"partial","source":"llama.cpp","cached_tokens":96,"queue_s":0.003,"prefill_s":0.041,"decode_s":0.31,"inference_s":0.351,"load_s":0.007,"total_s":0.362}`
	if string(b) != wantJSON {
		t.Errorf("Marshal = %s\nwant      %s", b, wantJSON)
	}
	var back engine.ServerStats
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, back); diff != "" {
		t.Errorf("round trip mismatch (-want +got):\n%s", diff)
	}
}

func TestThinkingTemplateVars(t *testing.T) {
	off, on := false, true
	for _, c := range []struct {
		th   *engine.Thinking
		want map[string]any
	}{
		{nil, nil},
		{&engine.Thinking{}, nil},
		{&engine.Thinking{Budget: 512}, nil},
		{&engine.Thinking{Enabled: &off}, map[string]any{"enable_thinking": false, "thinking": false}},
		{&engine.Thinking{Enabled: &on, Effort: "high"}, map[string]any{"enable_thinking": true, "thinking": true, "reasoning_effort": "high"}},
		{&engine.Thinking{Effort: "low"}, map[string]any{"reasoning_effort": "low"}},
	} {
		if diff := cmp.Diff(c.want, c.th.TemplateVars()); diff != "" {
			t.Errorf("%+v: TemplateVars mismatch (-want +got):\n%s", c.th, diff)
		}
	}
}
