package concurrency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/concurrency/clocktest"
)

func TestSystemClockSleep(t *testing.T) {
	var c concurrency.SystemClock
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c.Sleep(ctx, 0); err != nil {
		t.Errorf("Sleep(done ctx, 0) = %v, expected nil", err)
	}
	if err := c.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(done ctx, 1h) = %v, expected Canceled", err)
	}
	before := c.Now()
	if err := c.Sleep(t.Context(), time.Millisecond); err != nil {
		t.Errorf("Sleep(1ms) = %v", err)
	}
	if d := c.Now().Sub(before); d < time.Millisecond {
		t.Errorf("Sleep(1ms) returned after %v", d)
	}
}

// TestMarkBeforeDispatchWarns: a mark earlier than the dispatch instant is
// kept (it is what the sender said) but flagged.
func TestMarkBeforeDispatchWarns(t *testing.T) {
	clk := clocktest.New(t0)
	send := func(_ context.Context, _ int, mark func(time.Time)) (int, error) {
		mark(t0.Add(-time.Millisecond))
		return 0, nil
	}
	res := concurrency.Burst(testCtx(t), 2, send, &concurrency.BurstOptions{Clock: clk})
	if r := res.Requests[1]; r.Sent != -time.Millisecond || !r.Marked {
		t.Errorf("Sent %v, Marked %v; expected -1ms, marked", r.Sent, r.Marked)
	}
	if len(res.Warnings) != 1 {
		t.Errorf("warnings %v; expected one about marks before dispatch", res.Warnings)
	}
}

// TestSpinClockSleep: a SpinClock's Sleep never ends before its
// duration, and ends early with ctx's error when ctx is done.
func TestSpinClockSleep(t *testing.T) {
	c := concurrency.SpinClock{Spin: time.Millisecond}
	for _, d := range []time.Duration{0, 200 * time.Microsecond, 3 * time.Millisecond} {
		start := time.Now()
		if err := c.Sleep(context.Background(), d); err != nil || time.Since(start) < d {
			t.Errorf("Sleep(%v) = %v after %v", d, err, time.Since(start))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(ctx, time.Hour); err != context.Canceled {
		t.Errorf("Sleep on a done context = %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if err := c.Sleep(ctx, 5500*time.Microsecond); err != context.DeadlineExceeded && err != nil {
		t.Errorf("Sleep past the deadline = %v", err)
	}
}
