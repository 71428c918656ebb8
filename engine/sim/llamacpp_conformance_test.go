package sim_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine/enginetest"
	"github.com/inferbench/inferbench/engine/internal/adaptertest"
	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
)

// TestLlamaCppConformance runs the engine conformance kit through
// engine/openai against the embedded engine's llama.cpp profile. One kind
// of finding is not the adapter's: unknown_model, since llama-server
// serves its one model under any name, so a request for a model it does
// not have succeeds (the kit's claim that such a request fails does not
// hold for this server; engine/openai warns ErrModelMismatch instead).
// A request failing with kind reset is an error: llama-server closes the
// connection after every stream although its headers offer keep-alive
// (TestLlamaCppClosesAfterStream), and engine/openai must send a request
// that found its pooled connection dead again on a fresh one.
func TestLlamaCppConformance(t *testing.T) {
	s := adaptertest.NewSim(t, sim.Options{Profile: sim.LlamaCpp})
	o := &openai.Options{Flavour: openai.FlavourLlamaCpp, Counter: s.Counter()}
	c := adaptertest.NewClient(t, openai.New, s.OpenAIURL()+"/v1", o)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := enginetest.Check(ctx, enginetest.Config{
		Engine: c, Model: s.Model(), Stream: true, ChunkTokens: true, Bench: true, SendHook: true,
		Stats: enginetest.Both, Usage: enginetest.Both,
		NewAt:  adaptertest.NewAt(t, openai.New, o),
		Faults: adaptertest.SimFaults(),
	})
	var findings []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		findings = j.Unwrap()
	} else if err != nil {
		findings = []error{err}
	}
	anyModel := 0
	for _, f := range findings {
		var fd *enginetest.Finding
		switch {
		case errors.As(f, &fd) && fd.Check == "unknown_model" && strings.Contains(fd.Err.Error(), "want an error, got success"):
			anyModel++
		default:
			t.Error(f)
		}
	}
	if anyModel != 2 {
		t.Errorf("unknown_model: %d requests for an unknown model succeeded, want both (llama-server serves any name)", anyModel)
	}
}
