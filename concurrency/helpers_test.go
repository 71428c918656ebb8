package concurrency_test

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// t0 is the instant the controlled clocks of these tests start at.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// checkGoroutines fails t unless the goroutine count falls back to at most
// before within a second: every goroutine a run started has returned. The
// runtime may take a moment to retire exiting goroutines, hence the loop.
func checkGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("goroutines: %d after the run, expected ≤ %d as before it\n%s", n, before, buf)
		}
		time.Sleep(time.Millisecond)
	}
}

// testCtx returns a context that ends with the test or after 10 s, so a
// broken test fails instead of hanging.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
