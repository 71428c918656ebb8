package progtest

import (
	"context"
	"time"

	"github.com/inferbench/inferbench/engine"
)

// SlowClient returns an engine wrapper (a program's test hook) that holds
// every request back by delay before it reaches the engine: a load
// generator that cannot keep up, whatever the machine. ctx ending during
// the delay ends the request with ctx's error.
func SlowClient(delay time.Duration) func(engine.Engine) engine.Engine {
	return func(e engine.Engine) engine.Engine {
		return engine.Func(func(ctx context.Context, req engine.Request) (engine.Result, error) {
			t := time.NewTimer(delay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return engine.Result{}, ctx.Err()
			}
			return e.Complete(ctx, req)
		})
	}
}

// Punctual drops the engine's own send instant, so that a request's send
// is its dispatch on the schedule's clock: with a clock that does not
// lag, every request goes out when it was meant to.
func Punctual(e engine.Engine) engine.Engine {
	return engine.Func(func(ctx context.Context, req engine.Request) (engine.Result, error) {
		return e.Complete(engine.WithSendHook(ctx, func(time.Time) {}), req)
	})
}
