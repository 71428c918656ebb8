// Package clock holds the module's small waits on the wall clock that more
// than one package needs.
package clock

import (
	"context"
	"time"
)

// SleepUntil waits until t or until ctx ends, and reports whether it was
// t (true at once when t has passed and ctx has not ended).
func SleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}
