package benchkit

import (
	"context"
	"testing"

	"github.com/inferbench/inferbench/engine/openai"
	"github.com/inferbench/inferbench/engine/sim"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// TestLoadStreamsByDefault: a Load with only Engine, Model and Builder
// set (the zero value of everything else) streams, as every online
// benchmark does, so every completed request has its TTFT, TPOT and ITL;
// NoStream is the explicit choice of E2E alone. Sessions likewise.
func TestLoadStreamsByDefault(t *testing.T) {
	srv := sim.NewServer(sim.Options{Preset: sim.Fast()})
	defer srv.Close()
	c, err := openai.New(srv.VLLMURL, &openai.Options{Counter: srv.Counter()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	ctx := context.Background()
	w, traffic := Lengths{Input: 128, Output: 16}, Traffic{Rate: 20, NumRequests: 40}

	l := Load{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}}
	run, err := l.Run(ctx, w, traffic, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	if run.Summary.Completed != 40 {
		t.Fatalf("%d of 40 requests completed", run.Summary.Completed)
	}
	for _, r := range run.Requests {
		if r.Failed() {
			continue
		}
		if !r.Stream || r.TTFTS == nil || r.TPOTS == nil || len(r.ITLS) == 0 || r.E2ES == nil {
			t.Errorf("request %d of a zero-value Load: stream %t, TTFT %v, TPOT %v, %d ITLs; want a streamed request with every figure",
				r.Index, r.Stream, r.TTFTS, r.TPOTS, len(r.ITLS))
		}
	}
	if s := run.Summary; s.TTFT.N != s.Completed || s.TTFT.Mean == nil || s.TPOT.Mean == nil || s.ITL.Mean == nil {
		t.Errorf("summary TTFT over %d of %d completed, means TTFT %v TPOT %v ITL %v", s.TTFT.N, s.Completed, s.TTFT.Mean, s.TPOT.Mean, s.ITL.Mean)
	}

	l.NoStream = true
	run, err = l.Run(ctx, w, Traffic{Rate: 100, NumRequests: 5}, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range run.Requests {
		if r.Stream || r.TTFTS != nil || r.E2ES == nil || r.Failed() {
			t.Errorf("request %d with NoStream: stream %t, TTFT %v, E2E %v, error %q; want E2E alone", r.Index, r.Stream, r.TTFTS, r.E2ES, r.Error)
		}
	}

	s := Sessions{Engine: c, Model: srv.Model(), Builder: &promptsize.Builder{Counter: srv.Counter()}, Count: 2, Turns: 2, UserTokens: 32, Output: 4}
	rows, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d session rows; want 4", len(rows))
	}
	for _, r := range rows {
		if r.Failed() || !r.Stream || r.TTFTS == nil {
			t.Errorf("session %s turn %d of zero-value Sessions: stream %t, TTFT %v, error %q; want a streamed turn with its TTFT", r.Session, r.Turn, r.Stream, r.TTFTS, r.Error)
		}
	}
}
