package concurrency

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// OpenLoop configures an open-loop run: requests leave on a schedule that
// does not wait for earlier responses. The zero value is not runnable:
// Arrivals is required. With no Count, no Duration and arrivals that never
// stop, the run lasts until its context ends.
type OpenLoop struct {
	// Arrivals is the schedule (Poisson, Gamma, Constant, Replay, or any
	// Arrivals). Required.
	Arrivals Arrivals
	// MaxInFlight caps the requests in flight; 0 means no cap. When the
	// cap is reached the next request waits for a slot, leaves late, and
	// its Lag shows by how much. Its schedule (and every later request's)
	// does not move.
	MaxInFlight int
	// Count stops the run after this many requests; 0 means no bound.
	Count int
	// Duration stops dispatch before the first request scheduled at or
	// beyond it; 0 means no bound. Requests in flight then finish (the
	// run's context cancels them if the caller wants a hard stop).
	Duration time.Duration
	// Clock reads every instant and does every wait; nil means SystemClock.
	Clock Clock
	// Logger receives a Debug record when the run ends; nil logs nothing.
	Logger *slog.Logger
	// OnStart, when set, receives the run's start instant (Summary.Start)
	// once, before any request is dispatched, so that a caller can place
	// the offsets of its results on another timeline (a start shared by
	// several processes) as they arrive. It must return quickly.
	OnStart func(start time.Time)
}

// resultBuffer is the results channel's buffer for open and closed loops:
// enough that a reader handling each result promptly never holds a worker.
const resultBuffer = 256

// StartOpenLoop starts an open-loop run. One scheduler goroutine walks the
// Arrivals (exactly as Schedule does), sleeps on the clock until each
// request's intended instant, takes an in-flight slot when there is a cap,
// reads the dispatch offset and hands the request to a goroutine of its
// own that calls send. Every result, failed or not, arrives on the run's
// channel as it finishes; the channel is closed once dispatch has stopped
// and every request in flight has returned.
//
// Cancelling ctx stops dispatch at once (requests not yet sent are not
// sent and give no result) and reaches the senders in flight through their
// ctx; Summary.Err then wraps ctx.Err(). StartOpenLoop panics if
// cfg.Arrivals is nil.
func StartOpenLoop[T any](ctx context.Context, cfg OpenLoop, send SendFunc[T]) *Run[T] {
	if cfg.Arrivals == nil {
		panic("concurrency: OpenLoop without Arrivals")
	}
	run, rec := newRun[T](cfg.Clock, cfg.Logger, resultBuffer)
	var slots chan struct{}
	if cfg.MaxInFlight > 0 {
		slots = make(chan struct{}, cfg.MaxInFlight)
	}
	rec.start = rec.clock.Now()
	if cfg.OnStart != nil {
		cfg.OnStart(rec.start)
	}
	go func() {
		var wg sync.WaitGroup
		s := scheduler{a: cfg.Arrivals, count: cfg.Count, within: cfg.Duration}
		for {
			at, stop, why, warn := s.next()
			if warn != nil {
				rec.warn(warn)
			}
			if stop {
				rec.setStop(why, nil)
				break
			}
			if err := rec.clock.Sleep(ctx, at-rec.since()); err != nil || ctx.Err() != nil {
				rec.setStop(StopContext, ctxErr(ctx, "open loop cancelled"))
				break
			}
			if slots != nil {
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					rec.setStop(StopContext, ctxErr(ctx, "open loop cancelled"))
				}
				if ctx.Err() != nil {
					break
				}
			}
			res := Result[T]{Index: s.n - 1, User: -1, Intended: at, Dispatch: rec.since()}
			wg.Go(func() {
				res := rec.send(ctx, send, res)
				if slots != nil {
					<-slots
				}
				rec.deliver(res)
			})
		}
		wg.Wait()
		if ctx.Err() != nil {
			rec.setStop(StopContext, ctxErr(ctx, "open loop cancelled"))
		}
		rec.finish(run, "open loop")
	}()
	return run
}
