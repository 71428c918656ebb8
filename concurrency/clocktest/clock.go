// Package clocktest provides a controlled clock for tests of code that
// takes a concurrency.Clock: time stands still until the test moves it, and
// sleepers wake exactly when the clock passes their deadlines.
//
// A typical test starts the code under test, waits with BlockUntil until
// the expected number of goroutines sleep on the clock, then calls Advance;
// every offset those goroutines record is then known in advance.
package clocktest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Clock is a manual clock. Its zero value is not usable; call New.
// All methods are safe for concurrent use.
type Clock struct {
	mu       sync.Mutex
	now      time.Time
	sleepers []*sleeper
	changed  chan struct{} // closed and replaced whenever sleepers change
}

type sleeper struct {
	until time.Time
	wake  chan struct{}
}

// New returns a clock that reads start until it is advanced.
func New(start time.Time) *Clock {
	return &Clock{now: start, changed: make(chan struct{})}
}

// Now returns the clock's current instant.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep blocks until Advance or Set moves the clock to Now()+d or later,
// or until ctx is done, when it returns ctx.Err(). A d ≤ 0 returns nil at
// once.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	c.mu.Lock()
	s := &sleeper{until: c.now.Add(d), wake: make(chan struct{})}
	c.sleepers = append(c.sleepers, s)
	c.notifyLocked()
	c.mu.Unlock()
	select {
	case <-s.wake:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		if i := slices.Index(c.sleepers, s); i >= 0 {
			c.sleepers = slices.Delete(c.sleepers, i, i+1)
			c.notifyLocked()
		}
		c.mu.Unlock()
		return ctx.Err()
	}
}

// Advance moves the clock forward by d (d ≥ 0) and wakes, before it
// returns, every sleeper whose deadline is now reached. It does not wait for
// the woken goroutines to run.
func (c *Clock) Advance(d time.Duration) {
	if d < 0 {
		panic(fmt.Sprintf("clocktest: Advance by a negative duration %v", d))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(c.now.Add(d))
}

// Set moves the clock to t, which must not be before Now, and wakes the
// sleepers whose deadlines are reached.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.Before(c.now) {
		panic(fmt.Sprintf("clocktest: Set to %v, before the clock's current %v", t, c.now))
	}
	c.setLocked(t)
}

func (c *Clock) setLocked(t time.Time) {
	c.now = t
	kept := c.sleepers[:0]
	woke := false
	for _, s := range c.sleepers {
		if s.until.After(t) {
			kept = append(kept, s)
			continue
		}
		close(s.wake)
		woke = true
	}
	clear(c.sleepers[len(kept):])
	c.sleepers = kept
	if woke {
		c.notifyLocked()
	}
}

func (c *Clock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Sleepers returns how many goroutines are sleeping on the clock now.
func (c *Clock) Sleepers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sleepers)
}

// BlockUntil waits until exactly n goroutines sleep on the clock, or until
// ctx is done, when it returns an error that wraps ctx.Err() and says how
// many sleepers there were.
func (c *Clock) BlockUntil(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		have, changed := len(c.sleepers), c.changed
		c.mu.Unlock()
		if have == n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("clocktest: waiting for %d sleepers, %d asleep: %w", n, have, ctx.Err())
		}
	}
}
