package openai

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/enginetest"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
)

func newSim(t *testing.T, o sim.Options) *sim.Server {
	t.Helper()
	if o.Preset.Name == "" {
		o.Preset = sim.Fast()
	}
	s := sim.NewServer(o)
	t.Cleanup(s.Close)
	return s
}

func faultHeader(f string) http.Header { return http.Header{sim.FaultHeader: {f}} }

// TestConformance runs the engine conformance kit against the simulated
// vLLM API over loopback HTTP.
func TestConformance(t *testing.T) {
	s := newSim(t, sim.Options{})
	c := newClient(t, s.VLLMURL, nil)
	// The sim's reset-before-headers flushes a 200 status line before it
	// resets, so the reset is seen while reading the body (truncated);
	// TestResetBeforeHeaders covers a real reset with a raw listener.
	type fault struct {
		header           string
		unstreamed, want engine.Kind // want: streamed
	}
	var faults []enginetest.Fault
	for _, f := range []fault{
		{"500", engine.KindStatus, engine.KindStatus},
		{"503", engine.KindStatus, engine.KindStatus},
		{"unknown-model", engine.KindStatus, engine.KindStatus},
		{"reset-mid-stream; after=2", engine.KindTruncated, engine.KindTruncated},
		{"cut-without-done; after=2", engine.KindMalformed, engine.KindTruncated}, // JSON: half a body
		{"malformed-chunk; after=2", engine.KindMalformed, engine.KindMalformed},
		{"error-event; after=2", engine.KindStatus, engine.KindStreamError}, // JSON: a 500
		{"wrong-content-type", engine.KindMalformed, engine.KindMalformed},
		{"oversized-line; after=1", "", engine.KindMalformed}, // JSON: a large field, within MaxResponseBytes
		{"empty-body", engine.KindMalformed, engine.KindMalformed},
	} {
		if f.unstreamed != "" {
			faults = append(faults, enginetest.Fault{Name: f.header, Header: faultHeader(f.header), Want: f.unstreamed})
		}
		faults = append(faults, enginetest.Fault{Name: f.header + " (streamed)", Header: faultHeader(f.header), Stream: true, Want: f.want})
	}
	enginetest.Run(t, enginetest.Config{
		Engine:      c,
		Model:       s.Model(),
		Stream:      true,
		ChunkTokens: true,
		Bench:       true,
		Usage:       enginetest.Both,
		SendHook:    true,
		NewAt: func(base string) engine.Engine {
			c, err := New(base, nil)
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		Faults: faults,
	})
}

// TestSimBench checks bench semantics end to end: ignore_eos gives exactly
// max_tokens tokens, one per chunk, with usage on every chunk.
func TestSimBench(t *testing.T) {
	s := newSim(t, sim.Options{})
	c := newClient(t, s.VLLMURL+"/v1", nil)
	ctx := context.Background()
	models, err := c.Models(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(models) == 0 || models[0].ID != s.Model() {
		t.Fatalf("Models = %+v, want %s first", models, s.Model())
	}
	if err := c.Prewarm(ctx, 4); err != nil {
		t.Fatal(err)
	}
	msgs := []engine.Message{{Role: "user", Content: "Count to ten."}}
	res, err := c.Complete(ctx, engine.Request{Model: s.Model(), Messages: msgs, MaxTokens: 24, IgnoreEOS: true, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("Warnings = %v", res.Warnings)
	}
	if res.Usage == nil || res.Usage.CompletionTokens != 24 || res.Trace.Tokens() != 24 {
		t.Fatalf("usage %+v, trace tokens %d: want 24", res.Usage, res.Trace.Tokens())
	}
	want, err := s.Counter().Count(ctx, []promptsize.Message{{Role: "user", Content: "Count to ten."}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage.PromptTokens != want {
		t.Errorf("prompt_tokens %d, the sim's counter says %d", res.Usage.PromptTokens, want)
	}
	// The sim's text is one built-in token per word: counting it gives
	// the same per-chunk counts as the usage deltas.
	var fromUsage []int
	for _, ch := range res.Trace.Chunks {
		fromUsage = append(fromUsage, ch.Tokens)
	}
	counted := newClient(t, s.VLLMURL, &Options{NoStreamUsage: true,
		CountText: func(_ context.Context, s string) (int, error) { return sim.CountText(s), nil }})
	res2, err := counted.Complete(ctx, engine.Request{Model: s.Model(), Messages: msgs, MaxTokens: 24, IgnoreEOS: true, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	var fromText []int
	for _, ch := range res2.Trace.Chunks {
		fromText = append(fromText, ch.Tokens)
	}
	if diff := cmp.Diff(fromUsage, fromText); diff != "" {
		t.Errorf("counted chunk tokens differ from usage deltas (-usage +counted):\n%s", diff)
	}
	if len(res2.Warnings) != 1 || !errors.Is(res2.Warnings[0], ErrEstimatedTokens) {
		t.Errorf("Warnings = %v, want one ErrEstimatedTokens", res2.Warnings)
	}
}
