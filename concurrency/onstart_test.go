package concurrency_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/concurrency/clocktest"
)

// TestOnStartBeforeAnyDispatch checks that both runners hand their start
// instant to OnStart once, equal to Summary.Start, and before any sender
// runs.
func TestOnStartBeforeAnyDispatch(t *testing.T) {
	for _, kind := range []string{"burst", "open loop"} {
		t.Run(kind, func(t *testing.T) {
			clk := clocktest.New(t0)
			var calls atomic.Int32
			var got atomic.Pointer[time.Time]
			onStart := func(s time.Time) {
				calls.Add(1)
				got.Store(&s)
			}
			send := func(_ context.Context, i int, _ func(time.Time)) (int, error) {
				if got.Load() == nil {
					t.Errorf("request %d sent before OnStart", i)
				}
				return i, nil
			}
			var run *concurrency.Run[int]
			if kind == "burst" {
				run = concurrency.StartBurst(testCtx(t), 3, send, &concurrency.BurstOptions{Clock: clk, OnStart: onStart})
			} else {
				run = concurrency.StartOpenLoop(testCtx(t), concurrency.OpenLoop{
					Arrivals: concurrency.Replay{Offsets: []time.Duration{0, 0, 0}}, Clock: clk, OnStart: onStart}, send)
			}
			res, sum := run.Collect()
			if len(res) != 3 {
				t.Fatalf("%d results, want 3", len(res))
			}
			if calls.Load() != 1 {
				t.Fatalf("OnStart called %d times, want once", calls.Load())
			}
			if p := got.Load(); !p.Equal(sum.Start) {
				t.Errorf("OnStart got %v, Summary.Start is %v", *p, sum.Start)
			}
		})
	}
}
