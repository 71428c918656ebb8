package benchkit

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// sharedEngine answers with three one-token chunks; every other answer's
// first two chunks carry one instant, as when one read returned both.
type sharedEngine struct{ n atomic.Int64 }

func (e *sharedEngine) Complete(_ context.Context, req engine.Request) (engine.Result, error) {
	t0 := time.Now()
	second := 20 * time.Millisecond
	if e.n.Add(1)%2 == 0 {
		second = 10 * time.Millisecond
	}
	tr := timing.Trace{Start: t0, Chunks: []timing.Chunk{
		{At: t0.Add(10 * time.Millisecond), Tokens: 1}, {At: t0.Add(second), Tokens: 1}, {At: t0.Add(30 * time.Millisecond), Tokens: 1}},
		End: t0.Add(30 * time.Millisecond)}
	return engine.Result{Trace: tr, Usage: &engine.Usage{CompletionTokens: 3}}, nil
}

// TestLoadFirstShared: rows whose first chunk shares its read with the
// second say so, and the summary counts them and warns that their TTFT is
// an upper bound.
func TestLoadFirstShared(t *testing.T) {
	l := &Load{Engine: &sharedEngine{}, Model: "m", Builder: &promptsize.Builder{Counter: wordCounter}}
	run, err := l.Run(context.Background(), Lengths{Input: 20, Output: 3}, Traffic{Burst: 4}, timing.SLO{})
	if err != nil {
		t.Fatal(err)
	}
	shared := 0
	for _, r := range run.Requests {
		if r.FirstShared {
			shared++
			if r.SharedInstants != 1 {
				t.Errorf("row %d: shared_instants %d, want 1", r.Index, r.SharedInstants)
			}
		} else if r.SharedInstants != 0 {
			t.Errorf("row %d: shared_instants %d without a shared first chunk", r.Index, r.SharedInstants)
		}
	}
	if shared != 2 || run.Summary.FirstShared != 2 {
		t.Fatalf("%d rows and a summary of %d with a shared first chunk, want 2 and 2", shared, run.Summary.FirstShared)
	}
	if !strings.Contains(strings.Join(run.Summary.Warnings, "\n"), "first chunks shared a read: 2 of 4 requests") {
		t.Errorf("no warning of the shared first chunks in %q", run.Summary.Warnings)
	}
	// The summary of rows read back is the same.
	if again := summarize(run.Requests, ByRun, timing.SLO{}); again.FirstShared != 2 {
		t.Errorf("SummarizeLoad of the rows: first_chunk_shared %d, want 2", again.FirstShared)
	}
}
