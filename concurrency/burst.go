package concurrency

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// BurstOptions configure a burst. A nil *BurstOptions, like the zero
// value, means the system clock, no prepare step and no logging.
type BurstOptions struct {
	// Clock reads every instant of the burst; nil means SystemClock.
	Clock Clock
	// Prepare, when set, runs in each worker before the barrier, with the
	// request's index: open the connection, encode the body, anything that
	// must not be part of the measurement. Per-request state lives with
	// the caller (a slice indexed by i is safe: each index is touched by
	// one worker only). A Prepare error makes that request a failed result
	// that is never sent; the others are still released.
	Prepare func(ctx context.Context, i int) error
	// Logger receives a Debug record when the burst ends; nil logs nothing.
	Logger *slog.Logger
	// OnStart, when set, receives the release instant (Summary.Start)
	// once, just before the release, so that a caller can place the
	// offsets of its results on another timeline (a start shared by
	// several processes) as they arrive. It is not called for a burst
	// cancelled before its release. It must return quickly.
	OnStart func(start time.Time)
}

// BurstResult is a finished burst: every request in index order and the
// burst's summary (Summary.Skew is the dispatch skew, Summary.Start the
// shared start instant).
type BurstResult[T any] struct {
	// Requests holds request i at index i.
	Requests []Result[T]
	Summary
}

// Burst sends n requests released at one instant and waits for all of
// them; see StartBurst. Requests[i] is request i.
func Burst[T any](ctx context.Context, n int, send SendFunc[T], opts *BurstOptions) BurstResult[T] {
	run := StartBurst(ctx, n, send, opts)
	reqs := make([]Result[T], n)
	for res := range run.Results() {
		reqs[res.Index] = res
	}
	return BurstResult[T]{Requests: reqs, Summary: run.Summary()}
}

// StartBurst starts n workers, one per request. Each runs the optional
// Prepare step and parks at a barrier. When all n are parked, one instant is
// read from the clock (Summary.Start) and a single signal (a closed
// channel) releases them together; each worker then reads its Dispatch
// offset and calls send, which marks the instant its bytes go out (Sent).
// Results stream on the run's channel as requests finish; its buffer holds
// all n, so nobody has to read while the burst runs.
//
// A failed request is a result with its error; it never stops the others.
// Cancelling ctx before the release releases nobody (every request fails
// with the context's error, undispatched); cancelling it after reaches the
// senders through their ctx. Either way the run ends once every worker has
// returned, with Summary.Err wrapping ctx.Err(). StartBurst panics if n is
// negative.
func StartBurst[T any](ctx context.Context, n int, send SendFunc[T], opts *BurstOptions) *Run[T] {
	if n < 0 {
		panic(fmt.Sprintf("concurrency: burst of %d requests; expected n ≥ 0", n))
	}
	var o BurstOptions
	if opts != nil {
		o = *opts
	}
	run, rec := newRun[T](o.Clock, o.Logger, n)
	release, allReady := make(chan struct{}), make(chan struct{})
	var ready atomic.Int64
	if n == 0 {
		close(allReady)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res := Result[T]{Index: i, User: i}
			if o.Prepare != nil {
				if err := o.Prepare(ctx, i); err != nil {
					res.Err = fmt.Errorf("concurrency: preparing request %d: %w", i, err)
				}
			}
			if ready.Add(1) == int64(n) {
				close(allReady)
			}
			if res.Err != nil {
				rec.deliver(res)
				return
			}
			select {
			case <-release:
			case <-ctx.Done():
				res.Err = ctxErr(ctx, fmt.Sprintf("request %d cancelled before the release", i))
				rec.deliver(res)
				return
			}
			res.Dispatch = rec.since()
			rec.deliver(rec.send(ctx, send, res))
		})
	}
	go func() {
		select {
		case <-allReady:
			if ctx.Err() == nil {
				rec.start = rec.clock.Now()
				if o.OnStart != nil {
					o.OnStart(rec.start)
				}
				close(release)
			}
		case <-ctx.Done():
		}
		wg.Wait()
		if ctx.Err() != nil {
			rec.setStop(StopContext, ctxErr(ctx, "burst cancelled"))
		} else {
			rec.setStop(StopFinished, nil)
		}
		rec.finish(run, "burst")
	}()
	return run
}
