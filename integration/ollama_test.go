//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/ollama"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// TestRawStream shows Ollama's own stream, below the SDK: the SSE events of
// one streamed chat completion, with usage asked for, and the native API's
// counts and durations for the same kind of request. It checks what the
// SDK's accounting rests on: one content event per token (as many as
// usage.completion_tokens), nothing before the first text, a final usage.
func TestRawStream(t *testing.T) {
	tg := needOllama(t)
	ctx := timeout(t, 2*time.Minute)
	body := map[string]any{
		"model":          tg.model,
		"messages":       []map[string]string{{"role": "user", "content": "Tell me about the sea."}},
		"max_tokens":     16,
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
	}
	lines := post(ctx, t, tg.url+"/v1/chat/completions", body)
	var content, events int
	var usage *struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
	}
	var first, last, finishEv, usageEv string
	gotDone := false
	for _, l := range lines {
		data, ok := strings.CutPrefix(l.text, "data: ")
		if !ok {
			continue
		}
		events++
		if data == "[DONE]" {
			gotDone = true
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"delta"`
				Finish *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		if c.Usage != nil {
			usage = c.Usage
			usageEv = data
		}
		if len(c.Choices) > 0 && c.Choices[0].Finish != nil {
			finishEv = data
		}
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			if content == 0 {
				first = data
			}
			content++
			last = data
		}
	}
	t.Logf("%d SSE events: %d with content, then a finish event, a usage event and [DONE]", events, content)
	t.Logf("first content event: %s", first)
	t.Logf("last content event:  %s", last)
	if usage == nil {
		t.Fatal("no usage event")
	}
	t.Logf("finish event:        %s", finishEv)
	t.Logf("usage event:         %s", usageEv)
	var gaps []string
	for _, l := range lines[1:] {
		gaps = append(gaps, l.gap.Round(10*time.Microsecond).String())
	}
	t.Logf("gaps between events as read: %s", strings.Join(gaps, " "))
	if !gotDone {
		t.Error("no data: [DONE]")
	}
	if content != usage.Completion {
		t.Errorf("%d content events for completion_tokens %d: not one token an event", content, usage.Completion)
	}
	n, err := tg.tok.Count(ctx, []promptsize.Message{{Role: "user", Content: "Tell me about the sea."}})
	if err != nil {
		t.Fatal(err)
	}
	if usage.Prompt != n {
		t.Errorf("prompt_tokens %d, the tokenizer's chat template counts %d", usage.Prompt, n)
	}

	// The native API states its durations (nanoseconds) beside the counts.
	nat := post(ctx, t, tg.url+"/api/chat", map[string]any{
		"model":    tg.model,
		"messages": []map[string]string{{"role": "user", "content": "Tell me about the sea."}},
		"stream":   false,
		"options":  map[string]any{"num_predict": 16},
	})
	var r struct {
		DoneReason         string `json:"done_reason"`
		PromptEvalCount    int    `json:"prompt_eval_count"`
		PromptEvalDuration int64  `json:"prompt_eval_duration"`
		EvalCount          int    `json:"eval_count"`
		EvalDuration       int64  `json:"eval_duration"`
		LoadDuration       int64  `json:"load_duration"`
		TotalDuration      int64  `json:"total_duration"`
	}
	if len(nat) == 0 || json.Unmarshal([]byte(nat[0].text), &r) != nil {
		t.Fatalf("native /api/chat answered %v", nat)
	}
	t.Logf("native /api/chat: done_reason %s, prompt_eval_count %d in %v, eval_count %d in %v (%.0f tok/s), load %v, total %v",
		r.DoneReason, r.PromptEvalCount, time.Duration(r.PromptEvalDuration), r.EvalCount, time.Duration(r.EvalDuration),
		float64(r.EvalCount)/time.Duration(r.EvalDuration).Seconds(), time.Duration(r.LoadDuration), time.Duration(r.TotalDuration))
	if r.PromptEvalCount != n || r.EvalCount != 16 {
		t.Errorf("native counts: prompt %d (want %d), eval %d (want 16)", r.PromptEvalCount, n, r.EvalCount)
	}
}

type line struct {
	text string
	gap  time.Duration
}

func post(ctx context.Context, t *testing.T, url string, body any) []line {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := testkit.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", url, resp.Status)
	}
	var out []line
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	prev := time.Now()
	for sc.Scan() {
		if sc.Text() == "" {
			continue
		}
		now := time.Now()
		out = append(out, line{sc.Text(), now.Sub(prev)})
		prev = now
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBurst sends one burst of four prompts of exact lengths, released at
// once (benchkit.SendPrompts): every prompt is as long as the server counts
// it, every reply as long as asked, and Ollama's one-token chunks give
// n − 1 gaps with no count estimated and no warning.
func TestBurst(t *testing.T) {
	tg := needServer(t)
	ctx := timeout(t, 3*time.Minute)
	c := newClient(t, tg, tg.url)
	b := tg.builder()
	var prompts []promptsize.Prompt
	for i, pp := range []int{48, 96, 200, 400} {
		p, err := b.BuildSalted(ctx, pp, fmt.Sprintf("burst-%d-%d", time.Now().UnixNano(), i))
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p)
	}
	const tgTokens = 32
	br, err := benchkit.SendPrompts(ctx, c.e, tg.model, tgTokens, prompts, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range br.Requests {
		checkRow(t, tg, r)
	}
	checkStreams(t, tg, c)
	if len(br.Requests) != len(prompts) {
		t.Fatalf("%d records for %d prompts", len(br.Requests), len(prompts))
	}
	t.Logf("burst of %d: skew %v, wall %v, %.0f tok/s over the wall; prewarmed %v",
		len(prompts), br.Skew.Max, br.Wall.Round(time.Millisecond), br.Stats.ThroughputTPS, br.Prewarmed)
	for _, r := range br.Requests {
		t.Logf("  pp %d (server %d) tg %d: TTFT %.1f ms, TPOT %.2f ms, %d ITL gaps", r.PPTokens, deref(r.ServerPromptTokens),
			r.Tokens(), 1e3*derefF(r.TTFTS), 1e3*derefF(r.TPOTS), len(r.ITLS))
	}
}

// TestSendBurst sends hand-made engine requests (benchkit.SendBurst): the
// records then have no client count, and the server's must still be the
// tokenizer's.
func TestSendBurst(t *testing.T) {
	tg := needServer(t)
	ctx := timeout(t, 3*time.Minute)
	c := newClient(t, tg, tg.url)
	var reqs []engine.Request
	var want []int
	for i := range 3 {
		msgs := []engine.Message{{Role: "system", Content: "You are terse."}, {Role: "user", Content: fmt.Sprintf("Question %d: what is %d + %d?", i, i, i)}}
		n, err := tg.tok.Count(ctx, msgs)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, n)
		reqs = append(reqs, engine.Request{Model: tg.model, Messages: msgs, MaxTokens: 20, Stream: true})
	}
	br, err := benchkit.SendBurst(ctx, c.e, reqs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range br.Requests {
		if r.Failed() {
			t.Errorf("request %d failed: %s", i, r.Error)
			continue
		}
		if r.ServerPromptTokens == nil || *r.ServerPromptTokens != want[r.Index] {
			t.Errorf("request %d: server counted %v prompt tokens, the tokenizer %d", r.Index, r.ServerPromptTokens, want[r.Index])
		}
		n := r.Tokens()
		if n != 20 && !(tg.allowEOS && r.FinishReason == "stop" && n < 20) {
			t.Errorf("request %d: %d tokens, want 20", r.Index, n)
		}
		if tg.ollama() && len(r.ITLS) != n-1 {
			t.Errorf("request %d: %d ITL gaps for %d tokens, want %d", r.Index, len(r.ITLS), n, n-1)
		}
	}
	checkStreams(t, tg, c)
}

func newLoad(t *testing.T, tg *target, c *client, stream bool) *benchkit.Load {
	t.Helper()
	return &benchkit.Load{Engine: c.e, Model: tg.model, Builder: tg.builder(), NoStream: !stream, AllowEOS: tg.allowEOS, RequestTimeout: 2 * time.Minute}
}

// TestLoadOpenLoop sends a Poisson open loop of random exact lengths.
func TestLoadOpenLoop(t *testing.T) {
	tg := needServer(t)
	ctx := timeout(t, 4*time.Minute)
	c := newClient(t, tg, tg.url)
	l := newLoad(t, tg, c, true)
	w := benchkit.Lengths{Input: 160, Output: 24, RangeRatio: 0.5, Seed: 7}
	run, err := l.Run(ctx, w, benchkit.Traffic{Rate: 4, NumRequests: 12, Seed: 7}, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, tg, run, 12)
	checkStreams(t, tg, c)
}

// TestLoadSweep sweeps two offered rates, one run each.
func TestLoadSweep(t *testing.T) {
	tg := needServer(t)
	ctx := timeout(t, 4*time.Minute)
	c := newClient(t, tg, tg.url)
	l := newLoad(t, tg, c, true)
	w := benchkit.Lengths{Input: 120, Output: 16, RangeRatio: 0.5, Seed: 3}
	runs, err := l.Sweep(ctx, w, benchkit.Traffic{NumRequests: 8, Seed: 3}, []float64{2, 8}, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs for 2 rates", len(runs))
	}
	for i, run := range runs {
		checkRun(t, tg, run, 8)
		if run.Summary.RequestRate == nil || *run.Summary.RequestRate != []float64{2, 8}[i] {
			t.Errorf("run %d: rate %v", i, run.Summary.RequestRate)
		}
	}
	checkStreams(t, tg, c)
}

// TestLoadClosedLoop runs three users, each sending its next request when
// its previous reply has ended.
func TestLoadClosedLoop(t *testing.T) {
	tg := needServer(t)
	ctx := timeout(t, 4*time.Minute)
	c := newClient(t, tg, tg.url)
	l := newLoad(t, tg, c, true)
	w := benchkit.Lengths{Input: 100, Output: 20, RangeRatio: 0.4, Seed: 5}
	run, err := l.Run(ctx, w, benchkit.Traffic{Users: 3, NumRequests: 9, Seed: 5}, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, tg, run, 9)
	if run.Summary.PeakInFlight > 3 {
		t.Errorf("%d in flight with 3 users", run.Summary.PeakInFlight)
	}
	checkStreams(t, tg, c)
}

// TestSessions runs multi-turn sessions (benchkit.Sessions): each turn's
// prompt carries the whole history, the server's own replies included, and
// must still be exactly as long as the client counted it, every reply as
// long as asked; the server's cached tokens, if it says any, never exceed
// the history. The replies go back trimmed (TrimReplies): Llama 3's
// Hugging Face template trims each message and Ollama's template cannot,
// so a reply that begins or ends in white space would otherwise be
// counted one token apart (TestTrailingWhitespace).
func TestSessions(t *testing.T) {
	tg := needServer(t)
	ctx := timeout(t, 4*time.Minute)
	c := newClient(t, tg, tg.url)
	s := &benchkit.Sessions{Engine: c.e, Model: tg.model, Builder: tg.builder(),
		Count: 3, Turns: 3, UserTokens: 48, Output: 16, MaxActive: 2, RequestTimeout: 2 * time.Minute, TrimReplies: true}
	rows, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 9 {
		t.Fatalf("%d rows for 3 sessions of 3 turns", len(rows))
	}
	// A token-granular cache (llama.cpp's, per slot) also serves the chat
	// template's opening, the tokens before the first message's content,
	// which every chat shares; nothing past it may come from another
	// session.
	opening, err := tg.tok.ContentOffset(ctx, []promptsize.Message{{Role: "user", Content: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		checkRow(t, tg, r)
		if r.Turn > 1 && s.HistoryTokens(r) <= 0 {
			t.Errorf("session %s turn %d: no history counted", r.Session, r.Turn)
		}
		if r.CachedTokens != nil && *r.CachedTokens > max(s.HistoryTokens(r), opening) {
			t.Errorf("session %s turn %d: %d cached tokens of a %d-token history (the template's opening is %d tokens)", r.Session, r.Turn, *r.CachedTokens, s.HistoryTokens(r), opening)
		}
	}
	checkStreams(t, tg, c)
	for _, sum := range s.Summarize(rows, benchkit.ByTurn, timing.SLO{}) {
		t.Logf("turn %d: %d/%d ok, prompt tokens %d, TTFT p50 %.1f ms", sum.Labels.Turn, sum.Completed, sum.Requests, sum.TotalInputTokens, 1e3*derefF(sum.TTFT.P50))
	}
}

// TestOffline is the offline example's load: every request at once, random
// exact lengths, not streamed, so the counts are the usage's alone.
func TestOffline(t *testing.T) {
	tg := needServer(t)
	ctx := timeout(t, 4*time.Minute)
	c := newClient(t, tg, tg.url)
	l := newLoad(t, tg, c, false)
	w := benchkit.Lengths{InputMin: 60, InputMax: 300, OutputMin: 8, OutputMax: 32, Seed: 11}
	run, err := l.Run(ctx, w, benchkit.Traffic{Burst: 8, Seed: 11}, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, tg, run, 8)
}

func checkRun(t *testing.T, tg *target, run benchkit.LoadRun, n int) {
	t.Helper()
	if len(run.Requests) != n {
		t.Errorf("%d rows, want %d", len(run.Requests), n)
	}
	for _, r := range run.Requests {
		checkRow(t, tg, r)
	}
	s := run.Summary
	t.Logf("%s: %d/%d completed, %d in / %d out tokens in %.2f s, TTFT p50 %.1f ms, TPOT p50 %.2f ms, peak in flight %d",
		s.Traffic, s.Completed, s.Requests, s.TotalInputTokens, s.TotalOutputTokens, s.DurationS,
		1e3*derefF(s.TTFT.P50), 1e3*derefF(s.TPOT.P50), s.PeakInFlight)
}

// TestUnknownModel: a model the server does not have is a typed status
// error naming it, in the engine's result and in the burst's record; or,
// on a server that serves its one model under any name (llama.cpp), a
// success that says which model answered.
func TestUnknownModel(t *testing.T) {
	tg := needServer(t)
	ctx := timeout(t, time.Minute)
	c := newClient(t, tg, tg.url)
	res, err := c.e.Complete(ctx, engine.Request{Model: "no-such-model", Messages: []engine.Message{{Role: "user", Content: "hi"}}, MaxTokens: 4, Stream: true})
	if err == nil {
		// A server that serves its one model under any name (llama.cpp):
		// the answer must say so, in the result and in the row.
		anyName(ctx, t, tg, c, res)
		return
	}
	var se *engine.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T), want an *engine.StatusError", err, err)
	}
	if se.Code != http.StatusNotFound || !strings.Contains(se.Message, "no-such-model") {
		t.Errorf("status %d, message %q: want 404 naming the model", se.Code, se.Message)
	}
	if k := engine.KindOf(err); k != engine.KindStatus {
		t.Errorf("kind %q, want %q", k, engine.KindStatus)
	}
	t.Logf("unknown model: %v", err)

	p, err := tg.builder().Build(ctx, 40)
	if err != nil {
		t.Fatal(err)
	}
	br, err := benchkit.SendPrompts(ctx, c.e, "no-such-model", 4, []promptsize.Prompt{p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := br.Requests[0]; !r.Failed() || r.ErrorKind != string(engine.KindStatus) || r.CompletionTokens != nil {
		t.Errorf("record: failed %v, kind %q, completion %v: want a failed status row with no counts", r.Failed(), r.ErrorKind, r.CompletionTokens)
	}
}

// anyName checks the answer of a server that served a model it was not
// asked for: a warning wrapping openai.ErrModelMismatch that names both,
// the served name in the result, and in the row (served_model) of a
// request that otherwise succeeded.
func anyName(ctx context.Context, t *testing.T, tg *target, c *client, res engine.Result) {
	t.Helper()
	mismatch := false
	for _, w := range res.Warnings {
		if errors.Is(w, openai.ErrModelMismatch) && strings.Contains(w.Error(), "no-such-model") {
			mismatch = true
		}
	}
	if !mismatch || res.Model == "" || res.Model == "no-such-model" {
		t.Fatalf("a request for no-such-model succeeded as %q with warnings %v: want a warning wrapping openai.ErrModelMismatch naming both", res.Model, res.Warnings)
	}
	t.Logf("the server serves any name: answered no-such-model as %q", res.Model)
	p, err := tg.builder().Build(ctx, 40)
	if err != nil {
		t.Fatal(err)
	}
	br, err := benchkit.SendPrompts(ctx, c.e, "no-such-model", 4, []promptsize.Prompt{p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := br.Requests[0]; r.Failed() || r.ServedModel != res.Model {
		t.Errorf("record: failed %v (%s), served_model %q: want a measured row that names the served model %q", r.Failed(), r.Error, r.ServedModel, res.Model)
	}
}

// TestCancelled: a request whose context the caller cancels mid-stream ends
// with KindCanceled.
func TestCancelled(t *testing.T) {
	tg := needServer(t)
	c := newClient(t, tg, tg.url)
	ctx, cancel := context.WithCancel(timeout(t, time.Minute))
	time.AfterFunc(300*time.Millisecond, cancel)
	res, err := c.e.Complete(ctx, engine.Request{Model: tg.model, Messages: []engine.Message{{Role: "user", Content: "Write a long story."}}, MaxTokens: 1500, Stream: true})
	if k := engine.KindOf(err); k != engine.KindCanceled {
		t.Fatalf("kind %q (%v), want %q", k, err, engine.KindCanceled)
	}
	t.Logf("cancelled after %d chunks: %v", len(res.Trace.Chunks), err)
}

// TestLoadInterrupted: a load whose context ends mid-run (Ctrl-C) keeps every
// row measured before, each with the server's counts, and marks the requests
// cut short as cancelled.
func TestLoadInterrupted(t *testing.T) {
	tg := needServer(t)
	c := newClient(t, tg, tg.url)
	ctx, cancel := context.WithCancel(timeout(t, 3*time.Minute))
	defer cancel()
	l := newLoad(t, tg, c, true)
	var done atomic.Int64
	l.Sinks = []benchkit.Sink{benchkit.SinkFunc(func(r benchkit.Request) error {
		if !r.Failed() && done.Add(1) == 3 {
			cancel()
		}
		return nil
	})}
	// Short replies first, then long ones still running when the third ends.
	w := benchkit.Lengths{Input: 80, OutputMin: 8, OutputMax: 600, Seed: 2}
	run, err := l.Run(ctx, w, benchkit.Traffic{Rate: math.Inf(1), NumRequests: 8, MaxConcurrency: 4, Seed: 2}, timing.SLO{})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	var ok, cancelled int
	for _, r := range run.Requests {
		switch {
		case !r.Failed():
			ok++
			checkRow(t, tg, r)
		case r.ErrorKind == string(engine.KindCanceled):
			cancelled++
		default:
			t.Errorf("request %d: kind %q: %s", r.Index, r.ErrorKind, r.Error)
		}
	}
	t.Logf("interrupted: %d rows (%d measured, %d cancelled) of 8 planned; run error %v", len(run.Requests), ok, cancelled, err)
	if ok < 3 {
		t.Errorf("%d measured rows kept, want at least the 3 before the interrupt", ok)
	}
	if cancelled == 0 {
		t.Error("no request was cut short: the interrupt came after the run")
	}
}

// TestServerStopped: the server goes away mid-run. The rows measured before
// are kept with their counts; the requests it cut off, and those sent after,
// are rows of a connection kind (truncated, reset, connect).
func TestServerStopped(t *testing.T) {
	tg := needServer(t)
	srv := startServer(t)
	ctx := timeout(t, 4*time.Minute)
	c := newClient(t, tg, srv.url)
	// Load the model first, so that the stop falls inside generation.
	if _, err := c.e.Complete(ctx, engine.Request{Model: tg.model, Messages: []engine.Message{{Role: "user", Content: "hi"}}, MaxTokens: 2}); err != nil {
		t.Fatalf("warming the model: %v\n%s", err, srv.log.String())
	}
	l := newLoad(t, tg, c, true)
	var done atomic.Int64
	l.Sinks = []benchkit.Sink{benchkit.SinkFunc(func(r benchkit.Request) error {
		if !r.Failed() && done.Add(1) == 2 {
			go srv.stop(t)
		}
		return nil
	})}
	w := benchkit.Lengths{Input: 80, OutputMin: 8, OutputMax: 800, Seed: 4}
	run, err := l.Run(ctx, w, benchkit.Traffic{Rate: 20, NumRequests: 10, MaxConcurrency: 4, Seed: 4}, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	var ok int
	for _, r := range run.Requests {
		if !r.Failed() {
			ok++
			checkRow(t, tg, r)
			continue
		}
		kinds[r.ErrorKind]++
		switch engine.Kind(r.ErrorKind) {
		case engine.KindTruncated, engine.KindReset, engine.KindConnect:
		default:
			t.Errorf("request %d: kind %q, want a connection kind: %s", r.Index, r.ErrorKind, r.Error)
		}
	}
	t.Logf("server stopped: %d rows, %d measured, failures by kind %v", len(run.Requests), ok, kinds)
	if len(run.Requests) != 10 {
		t.Errorf("%d rows, want all 10", len(run.Requests))
	}
	if ok < 2 || len(kinds) == 0 {
		t.Errorf("%d measured and %v failed: want the 2 before the stop kept and the rest failed", ok, kinds)
	}
}

// TestServeLoadExample runs the serve-load example against the server as a
// user would, and reads its results file: exit 0, and every request's
// prompt and reply counted as the server counted them.
func TestServeLoadExample(t *testing.T) {
	tg := needServer(t)
	ctx := timeout(t, 5*time.Minute)
	dir := t.TempDir()
	bin := filepath.Join(dir, "serve-load")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "../examples/serve-load")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building serve-load: %v\n%s", err, out)
	}
	tokDir, err := filepath.Abs(tg.dir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results.json")
	args := []string{"--base-url", tg.url + "/v1", "--model", tg.model, "--tokenizer", tokDir,
		"--input-len", "128", "--output-len", "24", "--range-ratio", "0.5", "--num-requests", "8", "--rate", "4",
		"--seed", "1", "--json-out", out, "--no-server-metrics", "--allow-saturated"}
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	t.Logf("serve-load %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), stdout.String(), stderr.String())
	if err != nil {
		t.Fatalf("serve-load: %v", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc benchkit.LoadDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	runs := doc.AllRuns()
	if len(runs) != 1 {
		t.Fatalf("%d runs in the results, want 1", len(runs))
	}
	// serve-load builds its prompts with promptsize's default atoms, whose
	// content ends in a letter: nothing for the Hugging Face template to
	// trim that Ollama's would keep (TestTrailingWhitespace).
	checkRun(t, tg, runs[0], 8)
}

// TestTrailingWhitespace pins down where a chat template and Ollama
// disagree. Llama 3's Hugging Face template trims each message's content
// (message['content'] | trim), so the client counts "… a a " as "… a a";
// Ollama's Go templates have no trim and send the space, one token more.
// promptsize's Builder therefore writes content with no white space around
// it, which both count alike; the same content with a space after it shows
// the disagreement.
func TestTrailingWhitespace(t *testing.T) {
	tg := needOllama(t)
	ctx := timeout(t, 2*time.Minute)
	c := newClient(t, tg, tg.url)
	p, err := tg.builder().BuildSalted(ctx, 64, "trailing")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(p.Content) != p.Content {
		t.Fatalf("the Builder's content %q has white space around it", p.Content)
	}
	for _, tc := range []struct {
		name    string
		content string
		extra   int // the tokens Ollama counts beyond the client
	}{{"the Builder's content", p.Content, 0}, {"with a space after it", p.Content + " ", 1}} {
		msgs := []engine.Message{{Role: "user", Content: tc.content}}
		client, err := tg.tok.Count(ctx, msgs)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.e.Complete(ctx, engine.Request{Model: tg.model, Messages: msgs, MaxTokens: 2, Stream: true})
		if err != nil {
			t.Fatal(err)
		}
		if server := res.Usage.PromptTokens; server != client+tc.extra {
			t.Errorf("%s (ends %q): client %d, Ollama %d; want Ollama %d", tc.name, tc.content[len(tc.content)-3:], client, server, client+tc.extra)
		}
	}
}

// TestNativeAdapter runs an open loop through Ollama's native API
// (engine/ollama: /api/chat, its NDJSON stream, eval_count and durations):
// every count is the server's as on the OpenAI path, one chunk per token,
// and each response's own timings (prompt_eval_duration, eval_duration,
// load_duration, total_duration) summarised beside the client's TTFT, TPOT
// and E2E, whose differences it states. An unknown model is a 404 there too.
func TestNativeAdapter(t *testing.T) {
	tg := needOllama(t)
	ctx := timeout(t, 3*time.Minute)
	c, err := ollama.New(tg.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	// Ollama has no ignore_eos: asking for it only draws a warning. The
	// tiny model's replies run to num_predict anyway.
	l := &benchkit.Load{Engine: c, Model: tg.model, Builder: tg.builder(), AllowEOS: true, RequestTimeout: 2 * time.Minute}
	run, err := l.Run(ctx, benchkit.Lengths{Input: 160, Output: 24, RangeRatio: 0.5, Seed: 11}, benchkit.Traffic{Rate: 4, NumRequests: 8, Seed: 11}, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	native := *tg
	native.allowEOS = true
	for _, r := range run.Requests {
		checkRow(t, &native, r)
		st := r.Stats
		if st == nil || st.Source != "ollama" || st.Prefill == nil || st.Decode == nil || st.Total == nil || st.GenerationTokens != r.Tokens() || st.PromptTokens != r.PPTokens {
			t.Errorf("request %d: server stats %+v; want Ollama's durations and counts (%d prompt, %d generated)", r.Index, st, r.PPTokens, r.Tokens())
		}
	}
	rt := run.Summary.Responses
	if rt == nil || rt.Source != "ollama" || rt.Requests != len(run.Requests) || len(rt.Beside) != 3 {
		t.Fatalf("per-response timings %+v; want Ollama's over every request, beside TTFT, TPOT and E2E", rt)
	}
	for _, b := range rt.Beside {
		t.Logf("%s: client %.2f ms, Ollama %.2f ms, client − server %+.2f ms (%s)", b.Figure, 1e3*b.Client, 1e3*b.Server, 1e3*b.Difference, b.Contains)
		// The server's timers run inside the client's: its first token
		// and total cannot be later than the client saw them.
		if b.Figure != "tpot_s" && b.Difference < 0 {
			t.Errorf("%s: the server's %.3f ms exceeds the client's %.3f ms", b.Figure, 1e3*b.Server, 1e3*b.Client)
		}
	}
	_, err = c.Complete(ctx, engine.Request{Model: "no-such-model:latest", Stream: true, MaxTokens: 2,
		Messages: []engine.Message{{Role: "user", Content: "hello"}}})
	var se *engine.StatusError
	if !errors.As(err, &se) || se.Code != 404 || !strings.Contains(se.Error(), "no-such-model") {
		t.Errorf("unknown model through the native API: %v; want a 404 naming it", err)
	}
}

func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

func derefF(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// TestThinkingControls sends requests with each thinking control through
// both adapters to the real Ollama: the OpenAI API's (as FlavourOllama
// sends them: reasoning_effort; and as a generic server gets them:
// chat_template_kwargs, reasoning_effort and the budgets) and the native
// one's think. Ollama v0.6.5 knows none of these fields and ignores them,
// and the tiny model's template has no thinking variable: the prompt
// counts stay exact, counted with the request's template variables where
// the counter takes them. The model does not think, so every stream has
// answer chunks only, no hidden tokens and no warning but the one for a
// budget Ollama cannot take.
func TestThinkingControls(t *testing.T) {
	tg := needOllama(t)
	ctx := timeout(t, 3*time.Minute)
	off, on := false, true
	settings := []struct {
		name string
		th   *engine.Thinking
	}{
		{"none", nil},
		{"off", &engine.Thinking{Enabled: &off}},
		{"on", &engine.Thinking{Enabled: &on}},
		{"effort low", &engine.Thinking{Effort: "low"}},
		{"on, high, budget", &engine.Thinking{Enabled: &on, Effort: "high", Budget: 64}},
	}
	type varsCounter interface {
		WithTemplateVars(map[string]any) promptsize.Counter
	}
	oa, err := openai.New(tg.url+"/v1", &openai.Options{Flavour: openai.FlavourOllama, Counter: tg.tok})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oa.CloseIdleConnections)
	generic, err := openai.New(tg.url+"/v1", &openai.Options{Counter: tg.tok, NoContinuousUsage: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(generic.CloseIdleConnections)
	native, err := ollama.New(tg.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(native.CloseIdleConnections)
	engines := []struct {
		name string
		e    engine.Engine
		// unsupported is the warning of a budget the engine cannot send.
		unsupported error
	}{{"openai flavour ollama", oa, openai.ErrUnsupported}, {"openai generic", generic, nil}, {"native", native, ollama.ErrUnsupported}}
	for i, s := range settings {
		var counter promptsize.Counter = tg.tok
		if vc, ok := any(tg.tok).(varsCounter); ok {
			counter = vc.WithTemplateVars(s.th.TemplateVars())
		}
		b := &promptsize.Builder{Counter: counter}
		p, err := b.BuildSalted(ctx, 96, fmt.Sprintf("thinking-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range engines {
			res, err := en.e.Complete(ctx, engine.Request{Model: tg.model, Messages: []engine.Message{{Role: "user", Content: p.Content}},
				MaxTokens: 8, Stream: true, Thinking: s.th})
			id := s.name + " through " + en.name
			if err != nil {
				t.Errorf("%s: %v", id, err)
				continue
			}
			if res.Usage == nil || res.Usage.PromptTokens != p.Tokens {
				t.Errorf("%s: usage %+v, want prompt_tokens %d, the client's count", id, res.Usage, p.Tokens)
				continue
			}
			if got := res.Trace.Tokens() + res.Trace.HiddenTokens; got != res.Usage.CompletionTokens || res.Trace.HiddenTokens != 0 {
				t.Errorf("%s: chunks carry %d tokens, %d hidden; completion_tokens %d, want all in chunks", id, res.Trace.Tokens(), res.Trace.HiddenTokens, res.Usage.CompletionTokens)
			}
			for j, ch := range res.Trace.Chunks {
				if ch.Kind != timing.Answer {
					t.Errorf("%s: chunk %d is %v; a model that does not think streams the answer only", id, j, ch.Kind)
					break
				}
			}
			if res.Usage.ReasoningTokens != nil {
				t.Errorf("%s: reasoning_tokens %d; Ollama says none", id, *res.Usage.ReasoningTokens)
			}
			// No reasoning: its figures are undefined (null in every
			// record), not zero.
			if m, err := res.Trace.Metrics(); err != nil {
				t.Errorf("%s: metrics: %v", id, err)
			} else if m.ReasoningDefined || m.ReasoningTokens != 0 || m.TTFA != m.TTFT {
				t.Errorf("%s: reasoning figures defined %v (%d tokens), TTFA %v against TTFT %v: want none, TTFA = TTFT", id, m.ReasoningDefined, m.ReasoningTokens, m.TTFA, m.TTFT)
			}
			for _, w := range res.Warnings {
				if s.th != nil && s.th.Budget > 0 && en.unsupported != nil && errors.Is(w, en.unsupported) {
					continue
				}
				t.Errorf("%s: warning %v", id, w)
			}
		}
	}
}
