package benchkit

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// prewarmEngine records its Prewarm calls and answers every request with
// one content chunk after a role chunk that marks the first token.
type prewarmEngine struct {
	mu     sync.Mutex
	warmed []int
}

func (e *prewarmEngine) Prewarm(_ context.Context, n int) error {
	e.mu.Lock()
	e.warmed = append(e.warmed, n)
	e.mu.Unlock()
	return nil
}

func (e *prewarmEngine) Complete(_ context.Context, req engine.Request) (engine.Result, error) {
	t0 := time.Now()
	res := engine.Result{Usage: &engine.Usage{CompletionTokens: 2}}
	res.Trace = timing.Trace{Start: t0, FirstChunk: t0.Add(10 * time.Millisecond),
		Chunks: []timing.Chunk{{At: t0.Add(30 * time.Millisecond), Tokens: 2}}, End: t0.Add(30 * time.Millisecond)}
	return res, nil
}

// TestLoadPrewarmsOpenLoop: an open loop opens min(n, max concurrency)
// connections before its schedule starts (all n when uncapped), as a
// burst opens n, so that no first request dials inside its measurement.
func TestLoadPrewarmsOpenLoop(t *testing.T) {
	for _, tc := range []struct {
		name    string
		traffic Traffic
		want    int
	}{
		{"burst", Traffic{Burst: 6}, 6},
		{"rate inf capped", Traffic{Rate: math.Inf(1), NumRequests: 6, MaxConcurrency: 4}, 4},
		{"rate capped above n", Traffic{Rate: 1000, NumRequests: 3, MaxConcurrency: 16}, 3},
		{"rate uncapped", Traffic{Rate: math.Inf(1), NumRequests: 5}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &prewarmEngine{}
			l := &Load{Engine: e, Model: "m", Builder: &promptsize.Builder{Counter: wordCounter}}
			run, err := l.Run(context.Background(), Lengths{Input: 20, Output: 2}, tc.traffic, timing.SLO{})
			if err != nil {
				t.Fatal(err)
			}
			if len(e.warmed) != 1 || e.warmed[0] != tc.want {
				t.Errorf("Prewarm calls %v, want one of %d", e.warmed, tc.want)
			}
			// The first-chunk anchor reaches the row beside TTFT.
			for _, r := range run.Requests {
				if r.TTFTFirstChunkS == nil || math.Abs(*r.TTFTFirstChunkS-0.010) > 1e-9 || r.TTFTS == nil || math.Abs(*r.TTFTS-0.030) > 1e-9 {
					t.Errorf("row %d: ttft_first_chunk_s %v, ttft_s %v; want 0.010 and 0.030", r.Index, r.TTFTFirstChunkS, r.TTFTS)
				}
			}
		})
	}
}
