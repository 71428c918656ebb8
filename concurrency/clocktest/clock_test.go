package clocktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/concurrency/clocktest"
	"github.com/inferbench/inferbench/internal/testkit"
)

var _ concurrency.Clock = (*clocktest.Clock)(nil)

func TestSleepWakesAtDeadline(t *testing.T) {
	ctx := t.Context()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := clocktest.New(start)
	woke := make(chan time.Time, 2)
	for _, d := range []time.Duration{10 * time.Millisecond, 30 * time.Millisecond} {
		go func() {
			if err := c.Sleep(ctx, d); err != nil {
				t.Error(err)
			}
			woke <- c.Now()
		}()
	}
	if err := c.BlockUntil(ctx, 2); err != nil {
		t.Fatal(err)
	}
	c.Advance(20 * time.Millisecond)
	if got := testkit.RecvWithin(t, woke, testkit.Patience); !got.Equal(start.Add(20 * time.Millisecond)) {
		t.Errorf("first sleeper woke at %v, expected start+20ms", got)
	}
	if n := c.Sleepers(); n != 1 {
		t.Errorf("%d sleepers after the first woke, expected 1", n)
	}
	c.Set(start.Add(30 * time.Millisecond))
	if got := testkit.RecvWithin(t, woke, testkit.Patience); !got.Equal(start.Add(30 * time.Millisecond)) {
		t.Errorf("second sleeper woke at %v, expected start+30ms", got)
	}
	if err := c.Sleep(ctx, 0); err != nil {
		t.Errorf("Sleep(0) = %v, expected nil at once", err)
	}
}

func TestSleepCancel(t *testing.T) {
	c := clocktest.New(time.Time{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- c.Sleep(ctx, time.Hour) }()
	if err := c.BlockUntil(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := testkit.RecvWithin(t, done, testkit.Patience); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep = %v, expected Canceled", err)
	}
	if n := c.Sleepers(); n != 0 {
		t.Errorf("%d sleepers after cancellation, expected 0", n)
	}
}

func TestBlockUntilTimesOut(t *testing.T) {
	c := clocktest.New(time.Time{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	if err := c.BlockUntil(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("BlockUntil = %v, expected DeadlineExceeded", err)
	}
}
