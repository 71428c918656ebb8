package ollama

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/enginetest"
	"github.com/inferbench/inferbench/engine/internal/adaptertest"
	"github.com/inferbench/inferbench/engine/sim"
)

func newSim(t *testing.T, o sim.Options) *sim.Server { return adaptertest.NewSim(t, o) }

func newClient(t *testing.T, base string, o *Options) *Client {
	return adaptertest.NewClient(t, New, base, o)
}

// simModel is the sim's model as Ollama names it in /api/tags.
func simModel(s *sim.Server) string { return s.Model() + ":latest" }

// TestConformance runs the engine conformance kit against the sim's
// Ollama dialect. The claims are what the adapter makes of Ollama: it
// streams, every chunk carries its tokens, usage and server stats come
// with every answer; no bench claim, since Ollama has no ignore_eos.
func TestConformance(t *testing.T) {
	// A natural length far beyond the cancellation request's bound, so
	// that the request the kit cancels is still running then.
	s := newSim(t, sim.Options{NaturalLength: 1 << 16})
	c := newClient(t, s.OllamaURL(), nil)
	// A stream of no lines has no final object: truncated.
	faults := adaptertest.SimFaults(adaptertest.Fault("empty-body", engine.KindMalformed, engine.KindTruncated))
	enginetest.Run(t, enginetest.Config{
		Engine:      c,
		Model:       simModel(s),
		Stream:      true,
		ChunkTokens: true,
		Stats:       enginetest.Both,
		Usage:       enginetest.Both,
		SendHook:    true,
		NewAt:       adaptertest.NewAt(t, New, nil),
		Faults:      faults,
	})
}

// TestCancelMidStream cancels a streaming request after its first
// content lines: Complete returns promptly, with kind canceled, and keeps
// the chunks read until then.
func TestCancelMidStream(t *testing.T) {
	s := newSim(t, sim.Options{NaturalLength: 1 << 16})
	c := newClient(t, s.OllamaURL(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(100*time.Millisecond, cancel)
	begin := time.Now()
	res, err := c.Complete(ctx, engine.Request{Model: s.Model(), Stream: true, MaxTokens: 1 << 14,
		Messages: []engine.Message{{Role: "user", Content: "Tell me a long story."}}})
	took := time.Since(begin)
	if engine.KindOf(err) != engine.KindCanceled || !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v (kind %q), want kind canceled wrapping context.Canceled", err, engine.KindOf(err))
	}
	if took > 2*time.Second {
		t.Errorf("Complete returned %v after it began, want promptly after the cancel at 100ms", took)
	}
	if len(res.Trace.Chunks) == 0 {
		t.Errorf("no chunks kept from before the cancel")
	}
	if err := res.Trace.Validate(); err != nil {
		t.Errorf("trace: %v", err)
	}
}
