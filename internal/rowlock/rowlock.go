// Package rowlock keeps a program that must exit at once (a second
// interrupt) from ending in the middle of a row: the JSONL writers hold it
// while a row is written and synced (Writing), and the exit path takes it
// (Hold) before it exits.
package rowlock

import (
	"sync"
	"time"
)

// rows is held for reading while a row is written and synced, and for
// writing by Hold.
var rows sync.RWMutex

// Writing marks a row being written until done is called; it waits while
// a Hold is in force.
func Writing() (done func()) {
	rows.RLock()
	return rows.RUnlock
}

// Hold waits, for at most d, until no row is being written, and keeps
// rows from being written until release is called: a program that must
// exit at once calls it first, so that it never ends in the middle of a
// line.
func Hold(d time.Duration) (release func()) {
	got := make(chan struct{})
	go func() {
		rows.Lock()
		close(got)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-got:
		return rows.Unlock
	case <-t.C:
		// A write is stuck (a dead disk): exit without it. Should the
		// lock come later, release it at once.
		return func() {
			go func() { <-got; rows.Unlock() }()
		}
	}
}
