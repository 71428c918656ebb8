package benchkit

import (
	"sync"
	"time"
)

// rowWrites is held for reading while a row is written and synced (by a
// JSONLSink) and for writing by HoldRowWrites, so that a
// program exiting at once never ends in the middle of a line.
var rowWrites sync.RWMutex

// HoldRowWrites waits, for at most d, until no row is being written by a
// JSONLSink, and keeps rows from being written until
// release is called: a program that must exit at once (a second
// interrupt) calls it first, so that it never ends in the middle of a
// line.
func HoldRowWrites(d time.Duration) (release func()) {
	got := make(chan struct{})
	go func() {
		rowWrites.Lock()
		close(got)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-got:
		return rowWrites.Unlock
	case <-t.C:
		// A write is stuck (a dead disk): exit without it. Should the
		// lock come later, release it at once.
		return func() {
			go func() { <-got; rowWrites.Unlock() }()
		}
	}
}
