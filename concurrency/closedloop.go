package concurrency

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// ClosedLoop configures a closed-loop run: Users virtual users, each
// sending its next request only after its previous one returned and Think
// elapsed. The load adapts to the server, so a closed loop measures
// capacity at a concurrency, not latency at an offered rate (use an open
// loop for that). With no Count and no Duration the run lasts until its
// context ends.
type ClosedLoop struct {
	// Users is the number of virtual users; 0 means 1.
	Users int
	// Think is each user's pause between a response and its next request.
	Think time.Duration
	// Count stops the run after this many requests across all users; 0
	// means no bound.
	Count int
	// Duration stops each user from sending once this much time has passed
	// since the start; 0 means no bound. Requests in flight finish.
	Duration time.Duration
	// Clock reads every instant and does every wait; nil means SystemClock.
	Clock Clock
	// Logger receives a Debug record when the run ends; nil logs nothing.
	Logger *slog.Logger
}

// StartClosedLoop starts a closed-loop run: cfg.Users goroutines send back
// to back, each result arriving on the run's channel as it finishes. A
// user's request Intended offset is the instant it meant to send (the
// start for its first request, its previous request's Done + Think after),
// so Lag shows how late its think-time wait woke. Index numbers requests in
// the order users claim them, under one lock with the dispatch offset.
//
// A failed request is a result; the user goes on. Cancelling ctx stops the
// users (those thinking wake at once) and reaches the senders in flight;
// Summary.Err then wraps ctx.Err().
func StartClosedLoop[T any](ctx context.Context, cfg ClosedLoop, send SendFunc[T]) *Run[T] {
	users := max(cfg.Users, 1)
	run, rec := newRun[T](cfg.Clock, cfg.Logger, resultBuffer)
	rec.start = rec.clock.Now()
	var (
		mu   sync.Mutex
		next int
	)
	// exhausted reports whether the count is reached.
	exhausted := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return cfg.Count > 0 && next >= cfg.Count
	}
	// claim returns the next index and the dispatch offset, or stop.
	claim := func() (idx int, at time.Duration, stop bool) {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			rec.setStop(StopContext, ctxErr(ctx, "closed loop cancelled"))
			return 0, 0, true
		}
		if cfg.Count > 0 && next >= cfg.Count {
			rec.setStop(StopCount, nil)
			return 0, 0, true
		}
		at = rec.since()
		if cfg.Duration > 0 && at >= cfg.Duration {
			rec.setStop(StopDuration, nil)
			return 0, 0, true
		}
		idx = next
		next++
		return idx, at, false
	}
	go func() {
		var wg sync.WaitGroup
		for u := range users {
			wg.Go(func() {
				var intended time.Duration
				for {
					idx, at, stop := claim()
					if stop {
						return
					}
					res := rec.send(ctx, send, Result[T]{Index: idx, User: u, Intended: intended, Dispatch: at})
					rec.deliver(res)
					intended = res.Done + cfg.Think
					if cfg.Think > 0 && !exhausted() {
						wait := cfg.Think
						if cfg.Duration > 0 {
							wait = min(wait, cfg.Duration-rec.since())
						}
						if err := rec.clock.Sleep(ctx, wait); err != nil {
							rec.setStop(StopContext, ctxErr(ctx, "closed loop cancelled"))
							return
						}
					}
				}
			})
		}
		wg.Wait()
		if ctx.Err() != nil {
			rec.setStop(StopContext, ctxErr(ctx, "closed loop cancelled"))
		}
		rec.finish(run, "closed loop")
	}()
	return run
}
