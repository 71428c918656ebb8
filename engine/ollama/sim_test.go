package ollama

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/enginetest"
	"github.com/inferbench/inferbench/engine/sim"
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

func newClient(t *testing.T, base string, o *Options) *Client {
	t.Helper()
	c, err := New(base, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func faultHeader(f string) http.Header { return http.Header{sim.FaultHeader: {f}} }

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
		{"cut-without-done; after=2", engine.KindMalformed, engine.KindTruncated}, // JSON: half an object
		{"malformed-chunk; after=2", engine.KindMalformed, engine.KindMalformed},
		{"error-event; after=2", engine.KindStatus, engine.KindStreamError}, // JSON: a 500
		{"wrong-content-type", engine.KindMalformed, engine.KindMalformed},
		{"oversized-line; after=1", "", engine.KindMalformed},
		{"empty-body", engine.KindMalformed, engine.KindTruncated}, // a stream of no lines has no final object
	} {
		if f.unstreamed != "" {
			faults = append(faults, enginetest.Fault{Name: f.header, Header: faultHeader(f.header), Want: f.unstreamed})
		}
		faults = append(faults, enginetest.Fault{Name: f.header + " (streamed)", Header: faultHeader(f.header), Stream: true, Want: f.want})
	}
	enginetest.Run(t, enginetest.Config{
		Engine:      c,
		Model:       simModel(s),
		Stream:      true,
		ChunkTokens: true,
		Stats:       enginetest.Both,
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
