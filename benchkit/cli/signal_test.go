package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/internal/rowlock"
	"github.com/inferbench/inferbench/internal/testkit"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once;
// each write is also sent to writes, when that is not nil.
type syncBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes chan string
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.writes != nil {
		b.writes <- string(p)
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// blockingWriter signals entered on its first Write and then waits for
// unblock, as a row write stuck on a slow disk would.
type blockingWriter struct {
	entered, unblock chan struct{}
	log              func(string)
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	close(w.entered)
	<-w.unblock // bounded: the test closes unblock; one that fails first leaves only this writer's goroutine behind
	w.log("row written")
	return len(p), nil
}

// TestNotifyContextSecondSignalExits sends two signals: the first cancels
// the context and says so on stderr (and how to stop at once), without
// exiting; the second exits with status 130, but only once the row being
// written is whole.
func TestNotifyContextSecondSignalExits(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	stderr := syncBuffer{writes: make(chan string, 2)}
	var mu sync.Mutex
	var events []string
	logEvent := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }
	exited := make(chan int, 1)
	ctx, stop := notifyContext(context.Background(), sigs, "prog", &stderr, time.Hour, func(code int) {
		logEvent("exit")
		exited <- code
	})
	defer stop()

	sigs <- os.Interrupt
	<-ctx.Done()
	if msg := testkit.RecvWithin(t, stderr.writes, testkit.Patience); !strings.Contains(msg, "prog: interrupt: stopping") || !strings.Contains(msg, "signal again to exit at once") {
		t.Errorf("first signal said %q", msg)
	}

	w := &blockingWriter{entered: make(chan struct{}), unblock: make(chan struct{}), log: logEvent}
	sink := benchkit.NewJSONLSink(w)
	wrote := make(chan error, 1)
	go func() { wrote <- sink.Add(benchkit.Request{}) }()
	testkit.RecvWithin(t, w.entered, testkit.Patience)
	sigs <- syscall.SIGTERM
	if msg := testkit.RecvWithin(t, stderr.writes, testkit.Patience); !strings.Contains(msg, "prog: second terminated: exiting now with status 130") {
		t.Errorf("second signal said %q", msg)
	}
	close(w.unblock)
	if code := testkit.RecvWithin(t, exited, testkit.Patience); code != ExitInterrupted {
		t.Errorf("exit status %d, want %d", code, ExitInterrupted)
	}
	if err := testkit.RecvWithin(t, wrote, testkit.Patience); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(events, ",") != "row written,exit" {
		t.Errorf("events %v: the exit did not wait for the row being written", events)
	}
}

// TestNotifyContextStuckWriteDoesNotHoldExit: a row write that never
// ends delays the second signal's exit by the bound only.
func TestNotifyContextStuckWriteDoesNotHoldExit(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	exited := make(chan int, 1)
	_, stop := notifyContext(context.Background(), sigs, "prog", &syncBuffer{}, time.Millisecond, func(code int) { exited <- code })
	defer stop()
	w := &blockingWriter{entered: make(chan struct{}), unblock: make(chan struct{}), log: func(string) {}}
	wrote := make(chan error, 1)
	go func() { wrote <- benchkit.NewJSONLSink(w).Add(benchkit.Request{}) }()
	testkit.RecvWithin(t, w.entered, testkit.Patience)
	sigs <- os.Interrupt
	sigs <- os.Interrupt
	if code := testkit.RecvWithin(t, exited, testkit.Patience); code != ExitInterrupted {
		t.Errorf("exit status %d, want %d", code, ExitInterrupted)
	}
	close(w.unblock)
	if err := testkit.RecvWithin(t, wrote, testkit.Patience); err != nil {
		t.Fatal(err)
	}
	// The hold is released for the tests that follow.
	done := make(chan struct{})
	go func() { rowlock.Hold(time.Hour)(); close(done) }()
	testkit.RecvWithin(t, done, testkit.Patience)
}

// TestNotifyContextStop: after stop, a signal neither cancels nor exits.
func TestNotifyContextStop(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	ctx, stop := notifyContext(context.Background(), sigs, "prog", &syncBuffer{}, time.Hour, func(int) { t.Error("exit after stop") })
	stop()
	sigs <- os.Interrupt
	if ctx.Err() == nil {
		t.Error("stop did not cancel the context")
	}
}
