package rowlock

import (
	"testing"
	"time"
)

// TestHold: Hold waits for the row being written, keeps the next from
// starting until release, and gives up after its bound on a stuck write.
func TestHold(t *testing.T) {
	done := Writing()
	held := make(chan func())
	go func() { held <- Hold(time.Minute) }()
	select {
	case <-held:
		t.Fatal("Hold returned while a row was being written")
	case <-time.After(20 * time.Millisecond):
	}
	done()
	var release func()
	select {
	case release = <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("Hold did not return after the write ended")
	}
	wrote := make(chan struct{})
	go func() { Writing()(); close(wrote) }()
	select {
	case <-wrote:
		t.Fatal("a row was written during the hold")
	case <-time.After(20 * time.Millisecond):
	}
	release()
	select {
	case <-wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("the write did not go on after release")
	}

	// A stuck write: Hold gives up after its bound, and its release,
	// once the write ends, leaves the lock free.
	stuck := Writing()
	t0 := time.Now()
	release = Hold(30 * time.Millisecond)
	if d := time.Since(t0); d < 30*time.Millisecond || d > 10*time.Second {
		t.Errorf("Hold on a stuck write returned after %v; want its 30ms bound", d)
	}
	release()
	stuck()
	free := make(chan func())
	go func() { free <- Hold(time.Minute) }()
	select {
	case r := <-free:
		r()
	case <-time.After(10 * time.Second):
		t.Fatal("the lock stayed held after a timed-out Hold was released")
	}
}
