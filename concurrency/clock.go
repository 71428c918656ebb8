package concurrency

import (
	"context"
	"runtime"
	"time"
)

// A Clock tells the time and waits. The runners of this package read every
// instant they record from their Clock and do every timed wait through it,
// so a test that hands in a controlled clock (package clocktest) decides
// exactly what each offset will be.
//
// Implementations must be safe for concurrent use: a burst reads Now from
// every worker at once.
type Clock interface {
	// Now returns the current instant.
	Now() time.Time
	// Sleep waits for d or until ctx is done, whichever comes first, and
	// returns ctx.Err() in the second case. A d ≤ 0 returns at once with
	// nil (even when ctx is already done).
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the machine's clock: time.Now (with its monotonic reading,
// so differences between instants are immune to wall-clock steps) and a
// time.Timer for waits. It is what a nil Clock in any option means.
type SystemClock struct{}

var _ Clock = SystemClock{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits on a timer for d, or until ctx is done.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func clockOr(c Clock) Clock {
	if c == nil {
		return SystemClock{}
	}
	return c
}

// A SpinClock is the machine's clock with waits that end on time: each
// Sleep waits on a timer until Spin before its end, then yields the
// processor (runtime.Gosched) until the end. A timer alone wakes late by
// the operating system's scheduling, about a millisecond at p99 on a busy
// two-core machine, and an open loop's requests leave that much behind
// their schedule; the spin costs up to Spin of CPU a wait, shared with
// every other goroutine. Spin 0 means DefaultSpin.
type SpinClock struct {
	Spin time.Duration
}

// DefaultSpin is a SpinClock's spin when it names none.
const DefaultSpin = 2 * time.Millisecond

var _ Clock = SpinClock{}

// Now returns time.Now().
func (SpinClock) Now() time.Time { return time.Now() }

// Sleep waits for d, or until ctx is done: on a timer, then spinning.
func (c SpinClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	end := time.Now().Add(d)
	spin := c.Spin
	if spin <= 0 {
		spin = DefaultSpin
	}
	if d > spin {
		if err := (SystemClock{}).Sleep(ctx, d-spin); err != nil {
			return err
		}
	}
	for time.Now().Before(end) {
		if err := ctx.Err(); err != nil {
			return err
		}
		runtime.Gosched()
	}
	return nil
}
