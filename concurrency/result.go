package concurrency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// SendFunc sends request i and returns its result. It receives the run's
// context: when that context ends, the request must stop and return (an
// error is then expected). mark reports the instant the request's bytes
// began to go out (for an HTTP request, the moment the connection was in
// hand and writing started: httptrace's GotConn or WroteHeaders); the first
// call counts, later calls and calls after send has returned are ignored,
// and mark is safe to call from any goroutine. A sender that learns the
// instant only from its response (an engine result whose trace records when
// the request was written) may call mark with it just before returning. A
// sender that never calls mark gets its dispatch instant recorded instead,
// with a warning.
type SendFunc[T any] func(ctx context.Context, i int, mark func(time.Time)) (T, error)

// Result is one request of a burst, an open loop or a closed loop. Its
// offsets are durations from the run's start instant (Summary.Start), read
// from the run's Clock (monotonic with the system clock), never differences
// of wall-clock readings.
type Result[T any] struct {
	// Index numbers the request: 0 … n−1 in a burst; the order of dispatch
	// in open and closed loops. It is the i passed to the sender.
	Index int
	// User is the virtual user that sent the request in a closed loop
	// (0 … Users−1), the worker in a burst (equal to Index) and −1 in an
	// open loop, where every request gets a goroutine of its own.
	User int
	// Value is what the sender returned (its zero value when the request
	// was never sent).
	Value T
	// Err is the sender's error, or why the request was never sent
	// (cancellation, a failed Prepare). A failed request is a result like
	// any other; it never stops the run.
	Err error

	// Dispatched reports whether the sender was called. When it is false
	// the offsets below are 0 and mean nothing.
	Dispatched bool
	// Intended is when the schedule meant the request to go: 0 for every
	// request of a burst, the arrival's offset in an open loop, the instant
	// the user was ready (after its think time) in a closed loop.
	Intended time.Duration
	// Dispatch is when the runner handed the request to its sender: in a
	// burst, when the worker woke from the release; in an open loop, when
	// the scheduler let it go (after any wait for an in-flight slot); in a
	// closed loop, when the user claimed its index. It is read together
	// with Index, so the two agree on order within each worker.
	Dispatch time.Duration
	// Sent is when the request's bytes began to go out, as the sender
	// marked it; Dispatch when the sender did not mark (Marked false).
	Sent time.Duration
	// Marked reports whether Sent came from the sender's mark.
	Marked bool
	// Done is when the sender returned: in a burst, the request's elapsed
	// time from the shared start.
	Done time.Duration
}

// Lag returns Sent − Intended: how late the request left compared with its
// schedule. In an open loop a growing lag is the evidence of coordinated
// omission (the system under test, or the in-flight cap, held the load
// back); in a burst it is the request's send offset from the release.
func (r Result[T]) Lag() time.Duration { return r.Sent - r.Intended }

// Latency returns Done − Sent: the request's time from its first byte out
// to the sender's return.
func (r Result[T]) Latency() time.Duration { return r.Done - r.Sent }

// StopReason says why a run stopped dispatching.
type StopReason int

// The reasons a run stops dispatching.
const (
	// StopFinished: every request of a burst was sent.
	StopFinished StopReason = iota
	// StopArrivals: the Arrivals ended the schedule.
	StopArrivals
	// StopCount: the request count was reached.
	StopCount
	// StopDuration: the next request would have gone at or after the
	// duration bound.
	StopDuration
	// StopContext: the context ended the run.
	StopContext
)

// String returns the reason's name: "finished", "arrivals", "count",
// "duration" or "context".
func (s StopReason) String() string {
	switch s {
	case StopFinished:
		return "finished"
	case StopArrivals:
		return "arrivals"
	case StopCount:
		return "count"
	case StopDuration:
		return "duration"
	case StopContext:
		return "context"
	}
	return fmt.Sprintf("StopReason(%d)", int(s))
}

// Summary describes a whole run. Lag and Skew cover the dispatched
// requests only.
type Summary struct {
	// Start is the run's start instant: the release of a burst (zero when
	// the burst was cancelled before its release), the first instant of an
	// open or closed loop. Every offset is from it.
	Start time.Time
	// Wall is the offset of the last request's return (0 when none was
	// dispatched).
	Wall time.Duration
	// Requests counts the results delivered, Dispatched those whose
	// sender was called, Failed those with an error (dispatched or not).
	Requests, Dispatched, Failed int
	// PeakInFlight is the most senders running at once.
	PeakInFlight int
	// Lag describes Sent − Intended over the dispatched requests. In a
	// burst, where Intended is 0, these are the send offsets from the
	// release.
	Lag DurationStats
	// Skew describes Sent − min(Sent) over the dispatched requests: the
	// dispatch skew. Skew.Max is the spread, max(Sent) − min(Sent).
	Skew DurationStats
	// Stopped says why dispatching stopped.
	Stopped StopReason
	// Err is non-nil when the context ended the run; it wraps ctx.Err().
	Err error
	// Warnings note what makes the offsets less exact than they look:
	// senders that never marked, marks before dispatch, negative gaps.
	Warnings []error
}

// Run is a burst, open loop or closed loop under way. Its results arrive on
// Results as the requests finish; the channel is closed when the run has
// ended and every result was delivered.
type Run[T any] struct {
	results chan Result[T]
	done    chan struct{}
	summary Summary
}

// Results returns the channel of results, in the order the requests
// finish. It must be drained: a run whose results nobody reads stalls once
// the channel's buffer is full (its timing is not affected; Done is taken
// before a result is queued).
func (r *Run[T]) Results() <-chan Result[T] { return r.results }

// Summary waits until the run has ended and returns its summary. Drain
// Results first (or from another goroutine), or it waits for ever.
func (r *Run[T]) Summary() Summary {
	<-r.done
	return r.summary
}

// Collect drains Results and returns every result, in the order they
// finished, with the summary.
func (r *Run[T]) Collect() ([]Result[T], Summary) {
	var all []Result[T]
	for res := range r.results {
		all = append(all, res)
	}
	return all, r.Summary()
}

// recorder holds what a run measures, shared by its goroutines.
type recorder[T any] struct {
	clock Clock
	log   *slog.Logger
	start time.Time
	out   chan Result[T]

	mu                           sync.Mutex
	inFlight, peak               int
	requests, dispatched, failed int
	unmarked, early              int
	lastDone                     time.Duration
	lags, sents                  []time.Duration
	warnings                     []error
	stopped                      StopReason
	stopSet                      bool
	err                          error
}

func newRun[T any](clock Clock, log *slog.Logger, buffer int) (*Run[T], *recorder[T]) {
	r := &Run[T]{results: make(chan Result[T], buffer), done: make(chan struct{})}
	return r, &recorder[T]{clock: clockOr(clock), log: log, out: r.results}
}

// since returns the clock's offset from the run's start.
func (rec *recorder[T]) since() time.Duration { return rec.clock.Now().Sub(rec.start) }

// send calls the sender for res (Index, User, Intended and Dispatch set)
// and records the outcome. It does not deliver the result.
func (rec *recorder[T]) send(ctx context.Context, send SendFunc[T], res Result[T]) Result[T] {
	rec.mu.Lock()
	rec.inFlight++
	rec.peak = max(rec.peak, rec.inFlight)
	rec.mu.Unlock()

	var m marker
	res.Dispatched = true
	res.Value, res.Err = send(ctx, res.Index, m.mark)
	res.Done = rec.since()
	if t, ok := m.close(); ok {
		res.Sent, res.Marked = t.Sub(rec.start), true
	} else {
		res.Sent = res.Dispatch
	}

	rec.mu.Lock()
	rec.inFlight--
	rec.dispatched++
	rec.lags = append(rec.lags, res.Lag())
	rec.sents = append(rec.sents, res.Sent)
	rec.lastDone = max(rec.lastDone, res.Done)
	if !res.Marked {
		rec.unmarked++
	} else if res.Sent < res.Dispatch {
		rec.early++
	}
	rec.mu.Unlock()
	return res
}

// deliver counts res and queues it on the results channel.
func (rec *recorder[T]) deliver(res Result[T]) {
	rec.mu.Lock()
	rec.requests++
	if res.Err != nil {
		rec.failed++
	}
	rec.mu.Unlock()
	rec.out <- res
}

func (rec *recorder[T]) warn(err error) {
	rec.mu.Lock()
	rec.warnings = append(rec.warnings, err)
	rec.mu.Unlock()
}

// finish computes the summary, then closes the results channel. It must be
// called once every result has been delivered.
func (rec *recorder[T]) finish(r *Run[T], kind string) {
	rec.mu.Lock()
	s := Summary{
		Start:        rec.start,
		Wall:         rec.lastDone,
		Requests:     rec.requests,
		Dispatched:   rec.dispatched,
		Failed:       rec.failed,
		PeakInFlight: rec.peak,
		Lag:          SummarizeDurations(rec.lags),
		Stopped:      rec.stopped,
		Err:          rec.err,
		Warnings:     rec.warnings,
	}
	if rec.unmarked > 0 {
		s.Warnings = append(s.Warnings, fmt.Errorf("concurrency: %d of %d dispatched requests did not mark their send instant; their Sent is the dispatch instant", rec.unmarked, rec.dispatched))
	}
	if rec.early > 0 {
		s.Warnings = append(s.Warnings, fmt.Errorf("concurrency: %d requests marked a send instant before their dispatch; expected marks at or after the sender was called", rec.early))
	}
	if len(rec.sents) > 0 {
		first := slices.Min(rec.sents)
		rel := make([]time.Duration, len(rec.sents))
		for i, v := range rec.sents {
			rel[i] = v - first
		}
		s.Skew = SummarizeDurations(rel)
	}
	rec.mu.Unlock()
	if rec.log != nil {
		rec.log.Debug("concurrency: run ended", "kind", kind, "stopped", s.Stopped.String(),
			"requests", s.Requests, "failed", s.Failed, "wall", s.Wall, "lag", s.Lag.String(), "skew", s.Skew.String())
	}
	r.summary = s
	close(r.done)
	close(r.results)
}

// setStop records why dispatching stopped; the first reason wins, except
// that the context, when it ended the run, always wins.
func (rec *recorder[T]) setStop(why StopReason, err error) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !rec.stopSet || why == StopContext {
		rec.stopped = why
		rec.stopSet = true
	}
	if err != nil && rec.err == nil {
		rec.err = err
	}
}

// marker records the first instant a sender marks, until it is closed.
type marker struct {
	mu     sync.Mutex
	t      time.Time
	set    bool
	closed bool
}

func (m *marker) mark(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.set || m.closed || t.IsZero() {
		return
	}
	m.t, m.set = t, true
}

func (m *marker) close() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return m.t, m.set
}

// ctxErr wraps the context's error for a Summary or a request that never
// went out.
func ctxErr(ctx context.Context, what string) error {
	err := context.Cause(ctx)
	if err == nil {
		err = ctx.Err()
	}
	if errors.Is(err, ctx.Err()) {
		return fmt.Errorf("concurrency: %s: %w", what, err)
	}
	return fmt.Errorf("concurrency: %s: %w (%w)", what, ctx.Err(), err)
}
