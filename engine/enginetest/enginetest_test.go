package enginetest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/enginetest"
	"github.com/inferbench/inferbench/internal/testkit"
	"github.com/inferbench/inferbench/timing"
)

const model = "fake/model"

// fake is an in-process engine that keeps every contract unless broken
// names one to break. A request of more than 100 tokens runs until its
// context ends, so the cancellation checks always find it running however
// late their timer fires; shorter ones return at once. The "deaf" fake
// goes on for deafLinger after its context ends, far past cancelWithin.
type fake struct {
	broken string
}

func (f *fake) Complete(ctx context.Context, req engine.Request) (engine.Result, error) {
	var res engine.Result
	if req.Model != model {
		if f.broken == "untyped" {
			return res, errors.New("no such model")
		}
		return res, engine.NewStatusError(http.StatusNotFound,
			[]byte(`{"error":{"message":"No instance found for model `+req.Model+`","type":"Not Found","code":404}}`))
	}
	n := req.MaxTokens
	if !req.IgnoreEOS {
		n = min(n, 5) // a model that meets end-of-sequence early
	}
	if f.broken == "short" && n > 1 {
		n--
	}

	res.Trace.Start = time.Now()
	engine.NotifySend(ctx, res.Trace.Start)
	if f.broken == "hook twice" {
		engine.NotifySend(ctx, res.Trace.Start)
	}
	res.Trace.Headers = time.Now()
	if req.Header.Get("X-Fake-Fault") == "cut" {
		res.Trace.End = time.Now()
		return res, &engine.Error{Kind: engine.KindTruncated, Op: "read fake stream", Err: engine.ErrNoDone}
	}

	if n > 100 {
		<-ctx.Done()
		switch f.broken {
		case "deaf":
			linger := time.NewTimer(deafLinger)
			<-linger.C
		case "untyped cancel":
			res.Trace.End = time.Now()
			return res, errors.New("stopped")
		default:
			res.Trace.End = time.Now()
			return res, engine.Wrap(ctx, engine.KindTruncated, "read fake stream", ctx.Err())
		}
	}
	end := time.Now()
	if req.Stream && f.broken != "no chunks" {
		span := end.Sub(res.Trace.Headers)
		for i := range n {
			at := res.Trace.Headers.Add(span * time.Duration(i+1) / time.Duration(n))
			if f.broken == "backwards" && i == 0 {
				at = res.Trace.Start.Add(-time.Second)
			}
			res.Trace.Chunks = append(res.Trace.Chunks, timing.Chunk{At: at, Tokens: 1})
		}
	}
	res.Trace.End = end
	res.Text = strings.Repeat(" a", n)
	res.FinishReason = "length"
	if f.broken != "no stats" {
		res.ServerStats = &engine.ServerStats{PromptTPS: 1000, GenerationTPS: 100, PromptTokens: 12,
			GenerationTokens: n, PeakMemoryBytes: 1 << 30, PrefixCacheHit: engine.PrefixCacheNone}
	}
	if req.Stream {
		res.Usage = &engine.Usage{PromptTokens: 12, CompletionTokens: n, TotalTokens: 12 + n}
	}
	return res, nil
}

// capable is a fake with the optional capabilities.
type capable struct {
	fake
	warmed atomic.Int32
}

func (f *capable) Prewarm(ctx context.Context, n int) error {
	if f.broken == "cold" {
		return errors.New("prewarm: dial refused")
	}
	f.warmed.Store(int32(n))
	return nil
}

func (f *capable) Models(context.Context) ([]engine.Model, error) {
	if f.broken == "no model" {
		return []engine.Model{{ID: "other/model"}}, nil
	}
	return []engine.Model{{ID: "other/model"}, {ID: model, Name: "model"}}, nil
}

func (f *capable) CountTokens(_ context.Context, m string, msgs []engine.Message) (int, error) {
	if f.broken == "drift" {
		return 11, nil // the fake server counts 12
	}
	return 12, nil
}

// Prepare readies a request whose Send calls the fake's Complete once; the
// "resend" fake lets a Prepared be sent again, the "eager" one calls the
// send hook while preparing.
func (f *capable) Prepare(ctx context.Context, req engine.Request) (engine.Prepared, error) {
	if f.broken == "eager" {
		engine.NotifySend(ctx, time.Now())
	}
	var sent atomic.Bool
	return engine.PreparedFunc(func(ctx context.Context) (engine.Result, error) {
		if sent.Swap(true) && f.broken != "resend" {
			return engine.Result{}, engine.SentTwice("fake send")
		}
		return f.Complete(ctx, req)
	}), nil
}

var (
	_ engine.Preparer     = (*capable)(nil)
	_ engine.Prewarmer    = (*capable)(nil)
	_ engine.ModelLister  = (*capable)(nil)
	_ engine.TokenCounter = (*capable)(nil)
)

func TestCapabilities(t *testing.T) {
	tests := []struct {
		broken string
		want   []string
	}{
		{"", nil},
		{"cold", []string{"prewarm"}},
		{"no model", []string{"models"}},
		{"drift", []string{"count_tokens"}},
		{"resend", []string{"prepare"}},
		{"eager", []string{"prepare"}},
	}
	for _, tc := range tests {
		t.Run(tc.broken, func(t *testing.T) {
			t.Parallel()
			e := &capable{fake: fake{broken: tc.broken}}
			err := enginetest.Check(t.Context(), config(e))
			if diff := cmp.Diff(tc.want, failed(t, err)); diff != "" {
				t.Errorf("checks that failed (-want +got):\n%s\nfindings:\n%v", diff, err)
			}
			if tc.broken == "" && e.warmed.Load() != enginetest.DefaultConcurrency {
				t.Errorf("Prewarm got n = %d, want %d", e.warmed.Load(), enginetest.DefaultConcurrency)
			}
		})
	}
}

// dialer is an engine that sends a real HTTP request to its URL.
type dialer struct{ url string }

func (d dialer) Complete(ctx context.Context, req engine.Request) (engine.Result, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url+"/v1/chat/completions", nil)
	if err != nil {
		return engine.Result{}, err
	}
	resp, err := testkit.Client.Do(hr)
	if err != nil {
		return engine.Result{}, engine.Wrap(ctx, engine.KindReset, "POST "+hr.URL.String(), err)
	}
	resp.Body.Close()
	return engine.Result{}, engine.NewStatusError(resp.StatusCode, nil)
}

// cancelWithin is how soon a cancelled request must return: far above
// the scheduling delays of a loaded machine, since a conforming fake
// returns as soon as its context ends. deafLinger is how long the "deaf"
// fake goes on after that: twice the bound, so it is late by construction.
const (
	cancelWithin = 2 * time.Second
	deafLinger   = 2 * cancelWithin
)

func config(e engine.Engine) enginetest.Config {
	return enginetest.Config{
		Engine:          e,
		Model:           model,
		Stream:          true,
		ChunkTokens:     true,
		Bench:           true,
		Stats:           enginetest.Both,
		Usage:           enginetest.Streamed,
		SendHook:        true,
		CancelMaxTokens: 300,
		CancelAfter:     20 * time.Millisecond,
		CancelWithin:    cancelWithin,
		NewAt:           func(url string) engine.Engine { return dialer{url} },
		Faults: []enginetest.Fault{{
			Name: "cut", Header: http.Header{"X-Fake-Fault": {"cut"}}, Stream: true, Want: engine.KindTruncated,
		}},
	}
}

// failed returns the sorted, distinct names of the checks err's findings
// come from.
func failed(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Check returned %T, want errors.Join of findings", err)
	}
	var names []string
	for _, e := range joined.Unwrap() {
		var f *enginetest.Finding
		if !errors.As(e, &f) {
			t.Fatalf("finding %v is %T, want *enginetest.Finding", e, e)
		}
		if !strings.HasPrefix(f.Error(), "enginetest: "+f.Check+": ") {
			t.Errorf("finding text %q does not name its check", f.Error())
		}
		names = append(names, f.Check)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func TestConformingEnginePasses(t *testing.T) {
	enginetest.Run(t, config(&fake{}))
}

func TestBrokenEnginesFail(t *testing.T) {
	tests := []struct {
		broken string
		want   []string
	}{
		{"short", []string{"bench"}},
		{"backwards", []string{"concurrent", "trace"}},
		{"no chunks", []string{"bench", "concurrent", "trace"}},
		// Without stats an unstreamed response has no token count left to check.
		{"no stats", []string{"bench", "stats"}},
		{"deaf", []string{"cancel", "deadline"}},
		{"untyped cancel", []string{"cancel", "deadline"}},
		{"untyped", []string{"unknown_model"}},
		{"hook twice", []string{"send_hook"}},
	}
	for _, tc := range tests {
		t.Run(tc.broken, func(t *testing.T) {
			t.Parallel()
			err := enginetest.Check(t.Context(), config(&fake{broken: tc.broken}))
			if diff := cmp.Diff(tc.want, failed(t, err)); diff != "" {
				t.Errorf("checks that failed (-want +got):\n%s\nfindings:\n%v", diff, err)
			}
		})
	}
}

func TestClaimsOffSendNothing(t *testing.T) {
	// An engine that fails every request passes the checks whose claims
	// are off and fails the rest.
	var calls atomic.Int32
	e := engine.Func(func(ctx context.Context, req engine.Request) (engine.Result, error) {
		calls.Add(1)
		return engine.Result{}, &engine.Error{Kind: engine.KindStatus, Err: errors.New("down")}
	})
	err := enginetest.Check(t.Context(), enginetest.Config{Engine: e, Model: model, CancelAfter: time.Millisecond})
	want := []string{"cancel", "concurrent", "deadline", "trace"}
	if diff := cmp.Diff(want, failed(t, err)); diff != "" {
		t.Errorf("checks that failed (-want +got):\n%s\nfindings:\n%v", diff, err)
	}
	// trace 1 + cancel 1 + deadline 1 + unknown model 1 + concurrent 4.
	if n := calls.Load(); n != 8 {
		t.Errorf("the engine was called %d times, want 8", n)
	}
}

func TestFaultKindMismatch(t *testing.T) {
	c := config(&fake{})
	c.Faults = []enginetest.Fault{{Name: "cut", Header: http.Header{"X-Fake-Fault": {"cut"}}, Stream: true, Want: engine.KindMalformed}}
	err := enginetest.Check(t.Context(), c)
	if diff := cmp.Diff([]string{"faults"}, failed(t, err)); diff != "" {
		t.Errorf("checks that failed (-want +got):\n%s\nfindings:\n%v", diff, err)
	}
	if !strings.Contains(fmt.Sprint(err), `error kind "truncated", want "malformed"`) {
		t.Errorf("finding %v does not say what was expected and found", err)
	}
}

func TestConfigRequired(t *testing.T) {
	if err := enginetest.Check(t.Context(), enginetest.Config{Model: model}); err == nil || !strings.Contains(err.Error(), "Engine is nil") {
		t.Errorf("Check without Engine = %v, want an error naming Engine", err)
	}
	if err := enginetest.Check(t.Context(), enginetest.Config{Engine: &fake{}}); err == nil || !strings.Contains(err.Error(), "Model is empty") {
		t.Errorf("Check without Model = %v, want an error naming Model", err)
	}
}

func TestModeString(t *testing.T) {
	got := []string{enginetest.Mode(0).String(), enginetest.Unstreamed.String(), enginetest.Streamed.String(), enginetest.Both.String()}
	if diff := cmp.Diff([]string{"none", "unstreamed", "streamed", "both"}, got); diff != "" {
		t.Error(diff)
	}
	if !enginetest.Both.Has(enginetest.Streamed) || enginetest.Streamed.Has(enginetest.Both) {
		t.Error("Has is wrong")
	}
}
