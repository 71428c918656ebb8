package testkit

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// Patience bounds a test's wait for something that takes milliseconds
// when all goes well: long enough for a loaded two-core machine under the
// race detector, short enough that a hang fails the test well before go
// test's own timeout.
const Patience = 2 * time.Minute

// Client is an HTTP client for tests that gives up after Patience, where
// http.DefaultClient would wait for a server that stops answering for
// ever. It opens a connection of its own for every request, without asking
// the server to close it: the embedded engine's llama.cpp profile closes
// the connection after every stream while its headers offer keep-alive, as
// llama-server does, and a pooled connection it closed would fail a test's
// next request before any byte (the SDK's adapters send such a request
// again; a plain client does not). Tests share it; none may change it.
var Client = &http.Client{Timeout: Patience, Transport: &http.Transport{MaxIdleConnsPerHost: -1}}

// RecvWithin returns the next value received from ch, or the zero value
// when ch is closed, and fails t when neither happens within d.
func RecvWithin[T any](t testing.TB, ch <-chan T, d time.Duration) T {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("nothing received in %v", d)
		panic("unreachable")
	}
}

// RecvOKWithin is RecvWithin with the receive's second result: false
// when ch is closed.
func RecvOKWithin[T any](t testing.TB, ch <-chan T, d time.Duration) (T, bool) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v, ok := <-ch:
		return v, ok
	case <-timer.C:
		t.Fatalf("nothing received in %v, and the channel is not closed", d)
		panic("unreachable")
	}
}

// SendWithin sends v on ch, and fails t when no receiver has taken it
// (or the buffer has no room) within d.
func SendWithin[T any](t testing.TB, ch chan<- T, v T, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case ch <- v:
	case <-timer.C:
		t.Fatalf("nobody received in %v", d)
	}
}

// WaitWithin calls w.Wait (a *sync.WaitGroup's, say) and fails t when it
// has not returned within d. The Wait call is left running then: the test
// has failed, and its goroutines are the test binary's to end.
func WaitWithin(t testing.TB, w interface{ Wait() }, d time.Duration) {
	t.Helper()
	DoneWithin(t, d, "Wait", w.Wait)
}

// DoneWithin calls f on another goroutine and fails t, naming what, when
// f has not returned within d. f must not call t.FailNow (or t.Fatal):
// only the test's own goroutine may.
func DoneWithin(t testing.TB, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.Fatalf("%s has not returned in %v", what, d)
	}
}

// WaitContext calls w.Wait and returns nil when it returns, or ctx's
// error when ctx ends first. It is the bounded wait for a goroutine other
// than the test's, which must not fail the test itself.
func WaitContext(ctx context.Context, w interface{ Wait() }) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Wait()
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
