package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/inferbench/inferbench/internal/rowlock"
)

// exitWait bounds how long the second interrupt waits for a row being
// written to reach stable storage before it exits anyway.
const exitWait = 2 * time.Second

// NotifyContext returns a copy of parent that is cancelled at the first
// SIGINT or SIGTERM: the graceful stop, in which the program sends nothing
// more, gives the requests in flight their grace period, writes its
// results and cleans up. The first signal is said on stderr, with how to
// stop at once. At a second signal the program exits at once with status
// ExitInterrupted: a row being written is finished first (for at most
// 2 s), and every row written before is already synced, since the JSONL
// writers sync each line; the results JSON is not written and nothing is
// cleaned up. program names the program in those messages.
//
// stop stops listening for signals and releases the context's resources;
// call it when the run returns.
func NotifyContext(parent context.Context, program string, stderr io.Writer) (ctx context.Context, stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := notifyContext(parent, sigs, program, stderr, exitWait, os.Exit)
	return ctx, func() {
		signal.Stop(sigs)
		cancel()
	}
}

// notifyContext is NotifyContext reading signals from sigs, waiting at
// most wait for a row being written, and exiting through exit.
func notifyContext(parent context.Context, sigs <-chan os.Signal, program string, stderr io.Writer, wait time.Duration, exit func(int)) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	var once sync.Once
	go func() {
		select {
		case sig := <-sigs:
			fmt.Fprintf(stderr, "%s: %v: stopping; requests in flight get their grace period, then results are written (signal again to exit at once)\n", program, sig)
			cancel()
		case <-done:
			return
		}
		select {
		case sig := <-sigs:
			fmt.Fprintf(stderr, "%s: second %v: exiting now with status %d; rows written so far are synced, the results JSON is not written and nothing is cleaned up\n", program, sig, ExitInterrupted)
			release := rowlock.Hold(wait)
			exit(ExitInterrupted)
			release() // only reached when exit returns (tests)
		case <-done:
		}
	}()
	return ctx, func() {
		once.Do(func() { close(done) })
		cancel()
	}
}
