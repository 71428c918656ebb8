package benchkit

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize"
	"github.com/inferbench/inferbench/timing"
)

// preparingEngine is fakeEngine with the Preparer capability. It records
// the instant of every Prepare, the send instant each Send marked, and how
// many Prepare calls had returned when each Send began; the failAt-th
// Prepare call (from 1) fails.
type preparingEngine struct {
	fakeEngine
	failAt int

	mu       sync.Mutex
	prepares []time.Time
	sends    []time.Time
	seen     []int // Prepare calls returned when each Send began
}

func (p *preparingEngine) Prepare(_ context.Context, req engine.Request) (engine.Prepared, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prepares = append(p.prepares, time.Now())
	if len(p.prepares) == p.failAt {
		return nil, &engine.Error{Kind: engine.KindOther, Op: "prepare", Err: errors.New("refused to encode")}
	}
	return engine.PreparedFunc(func(ctx context.Context) (engine.Result, error) {
		p.mu.Lock()
		p.seen = append(p.seen, len(p.prepares))
		p.mu.Unlock()
		res, err := p.fakeEngine.Complete(ctx, req)
		p.mu.Lock()
		p.sends = append(p.sends, res.Trace.Start) // the instant it marked
		p.mu.Unlock()
		return res, err
	}), nil
}

func (p *preparingEngine) Complete(context.Context, engine.Request) (engine.Result, error) {
	return engine.Result{}, errors.New("Complete called on an engine whose requests are all prepared")
}

// TestRunnerPreparesBeforeTheRelease checks that every request of a burst
// is prepared before the burst's start instant and before any is sent, and
// that a request whose preparation fails is a failed row among the others.
func TestRunnerPreparesBeforeTheRelease(t *testing.T) {
	pe := &preparingEngine{failAt: 2}
	r := &Runner{Engine: pe, Model: "m", Builder: &promptsize.Builder{Counter: wordCounter}}
	const n = 4
	rep, err := r.Run(context.Background(), Plan{PP: []int{20}, TG: []int{3}, Concurrency: []int{n}, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Requests) != n || rep.Failed() != 1 {
		t.Fatalf("rows %d, failed %d; want %d and 1", len(rep.Requests), rep.Failed(), n)
	}
	pe.mu.Lock()
	defer pe.mu.Unlock()
	if len(pe.prepares) != n || len(pe.sends) != n-1 {
		t.Fatalf("%d Prepare and %d Send calls, want %d and %d", len(pe.prepares), len(pe.sends), n, n-1)
	}
	for i, k := range pe.seen {
		if k != n {
			t.Errorf("send %d began after %d Prepare calls, want all %d", i, k, n)
		}
	}
	// The burst's start instant, from the first send: the fake marks its
	// send at the instant it recorded, and the row keeps the mark's offset
	// from the start, so start = send instant − offset exactly.
	var start time.Time
	first := time.Duration(math.MaxInt64)
	for _, row := range rep.Requests {
		if row.Failed() {
			if row.ErrorKind != string(engine.KindOther) || !strings.Contains(row.Error, "refused to encode") || row.Tokens() != 0 {
				t.Errorf("failed row: kind %q, error %q, %d tokens; want kind %q, the Prepare error, 0 tokens", row.ErrorKind, row.Error, row.Tokens(), engine.KindOther)
			}
			continue
		}
		if row.Tokens() != 3 {
			t.Errorf("row %d generated %d tokens, want 3", row.Index, row.Tokens())
		}
		first = min(first, time.Duration(math.Round(row.SendOffsetS*1e9)))
	}
	earliest := pe.sends[0]
	for _, s := range pe.sends {
		if s.Before(earliest) {
			earliest = s
		}
	}
	start = earliest.Add(-first)
	for i, at := range pe.prepares {
		if at.After(start) {
			t.Errorf("Prepare %d at %v after the burst's start, want before", i, at.Sub(start))
		}
	}
}

func TestLoadPreparesBeforeSending(t *testing.T) {
	for _, tc := range []struct {
		name    string
		traffic Traffic
	}{
		{"burst", Traffic{Burst: 4}},
		{"open loop", Traffic{Rate: math.Inf(1), NumRequests: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pe := &preparingEngine{failAt: 3}
			l := &Load{Engine: pe, Model: "m", Builder: &promptsize.Builder{Counter: wordCounter}}
			run, err := l.Run(context.Background(), Lengths{Input: 20, Output: 3}, tc.traffic, timing.SLO{})
			if err != nil {
				t.Fatal(err)
			}
			failed := 0
			for _, row := range run.Requests {
				if !row.Failed() {
					if row.Tokens() != 3 {
						t.Errorf("request %d: %d tokens, want 3", row.Index, row.Tokens())
					}
					continue
				}
				failed++
				if row.ErrorKind != string(engine.KindOther) || !strings.Contains(row.Error, "refused to encode") {
					t.Errorf("failed row: kind %q, error %q; want kind %q and the Prepare error", row.ErrorKind, row.Error, engine.KindOther)
				}
			}
			if len(run.Requests) != 4 || failed != 1 {
				t.Fatalf("%d rows, %d failed; want 4 and 1", len(run.Requests), failed)
			}
			pe.mu.Lock()
			defer pe.mu.Unlock()
			if len(pe.prepares) != 4 || len(pe.sends) != 3 {
				t.Fatalf("%d Prepare and %d Send calls, want 4 and 3", len(pe.prepares), len(pe.sends))
			}
			for i, k := range pe.seen {
				if k != 4 {
					t.Errorf("send %d began after %d Prepare calls, want all 4", i, k)
				}
			}
		})
	}
}
