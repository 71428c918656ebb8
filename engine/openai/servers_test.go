package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/adaptertest"
)

// TestModelMismatch: an answer for another model than the one asked (as
// llama.cpp gives under any name) carries a warning naming both and keeps
// the server's name in Result.Model; the same name gives none.
func TestModelMismatch(t *testing.T) {
	srv := adaptertest.NewCloser(t, "llama.cpp", false)
	c := newClient(t, srv.URL, nil)
	for _, stream := range []bool{false, true} {
		for _, model := range []string{"no-such-model", "closer"} {
			res, err := c.Complete(context.Background(), engine.Request{Model: model, MaxTokens: 3, Stream: stream,
				Messages: []engine.Message{{Role: "user", Content: "count"}}})
			if err != nil {
				t.Fatal(err)
			}
			var warned []error
			for _, w := range res.Warnings {
				if errors.Is(w, ErrModelMismatch) {
					warned = append(warned, w)
				}
			}
			switch {
			case res.Model != "closer":
				t.Errorf("stream %v, model %q: Result.Model %q, want the server's, closer", stream, model, res.Model)
			case model == "closer" && len(warned) != 0:
				t.Errorf("stream %v: the model asked for answered, warnings %v; want none", stream, warned)
			case model != "closer" && (len(warned) != 1 || !strings.Contains(warned[0].Error(), `"no-such-model"`) || !strings.Contains(warned[0].Error(), `"closer"`)):
				t.Errorf("stream %v, model %q: warnings %v, want one naming both models", stream, model, warned)
			}
		}
	}
}

// TestSGLangRID: to SGLang the request's id goes as the body's rid too
// (SGLang takes it instead of X-Request-Id); no other flavour sends rid.
func TestSGLangRID(t *testing.T) {
	for _, fl := range []Flavour{FlavourSGLang, FlavourGeneric, FlavourVLLM, FlavourLlamaCpp} {
		rs := &recorded{ctype: "application/json", body: readTestdata(t, "vllm_nonstream.json")}
		srv := serve(t, rs)
		c := newClient(t, srv.URL, &Options{Flavour: fl})
		res, err := c.Complete(context.Background(), engine.Request{Model: fixtureModel, MaxTokens: 8})
		if err != nil {
			t.Fatal(err)
		}
		rid, has := rs.bodies[0]["rid"]
		if sent := rs.headers[0].Get("X-Request-Id"); sent != res.RequestID || sent == "" {
			t.Errorf("flavour %q: X-Request-Id %q, Result.RequestID %q; want one id in both", fl, sent, res.RequestID)
		}
		if want := fl == FlavourSGLang; has != want || want && rid != res.RequestID {
			t.Errorf("flavour %q: body rid %v (present %v), want it %v with the request id %q", fl, rid, has, want, res.RequestID)
		}
	}
}

// TestTimedOutStreamCountsAfterDeadline: a stream cut by its request's
// deadline fails with kind timeout; its chunks are still counted (with a
// fresh context, not the expired one), and the failed result carries no
// note on how its counts were reached.
func TestTimedOutStreamCountsAfterDeadline(t *testing.T) {
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, text := range []string{"one two", " three"} {
			b, _ := json.Marshal(map[string]any{"id": "x", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": text}}}})
			_, _ = io.WriteString(w, "data: "+string(b)+"\n\n")
			http.NewResponseController(w).Flush()
		}
		<-r.Context().Done() // then nothing more, until the client gives up
	}))
	var expired int
	count := func(ctx context.Context, s string) (int, error) {
		if ctx.Err() != nil {
			expired++
			return 0, ctx.Err()
		}
		return len(strings.Fields(s)), nil
	}
	c := newClient(t, srv.URL, &Options{CountText: count})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := c.Complete(ctx, engine.Request{Model: "m", MaxTokens: 8, Stream: true})
	if engine.KindOf(err) != engine.KindTimeout {
		t.Fatalf("error %v, want one of kind timeout", err)
	}
	if expired != 0 {
		t.Errorf("the text was counted %d times with an expired context", expired)
	}
	var got []int
	for _, ch := range res.Trace.Chunks {
		got = append(got, ch.Tokens)
	}
	if len(got) != 2 || got[0] != 2 || got[1] != 1 {
		t.Errorf("chunk tokens %v, want [2 1] from counting the text", got)
	}
	for _, w := range res.Warnings {
		if errors.Is(w, ErrEstimatedTokens) || errors.Is(w, ErrUnknownTokens) {
			t.Errorf("failed request: warning %v, want none on its chunk counts", w)
		}
	}
}
