package concurrency_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/concurrency/clocktest"
	"github.com/inferbench/inferbench/internal/testkit"
)

// byIndex returns the results ordered by Index.
func byIndex[T any](rs []concurrency.Result[T]) []concurrency.Result[T] {
	out := make([]concurrency.Result[T], len(rs))
	for _, r := range rs {
		out[r.Index] = r
	}
	return out
}

// TestOpenLoopOnSchedule: at 100/s on a controlled clock, with instant
// senders, request n leaves at exactly n·10 ms and the lag is 0.
func TestOpenLoopOnSchedule(t *testing.T) {
	ctx := testCtx(t)
	clk := clocktest.New(t0)
	send := func(context.Context, int, func(time.Time)) (int, error) { return 0, nil }
	run := concurrency.StartOpenLoop(ctx, concurrency.OpenLoop{
		Arrivals: concurrency.Constant{Rate: 100}, Count: 5, Clock: clk,
	}, send)
	for range 4 { // the scheduler sleeps before arrivals 1 … 4
		if err := clk.BlockUntil(ctx, 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(10 * time.Millisecond)
	}
	all, sum := run.Collect()
	all = byIndex(all)
	var intended, sent []time.Duration
	for _, r := range all {
		intended = append(intended, r.Intended)
		sent = append(sent, r.Sent)
		if r.User != -1 || r.Marked {
			t.Errorf("request %d: User %d, Marked %v; expected -1, false", r.Index, r.User, r.Marked)
		}
	}
	want := []time.Duration{0, ms(10), ms(20), ms(30), ms(40)}
	if diff := cmp.Diff(want, intended); diff != "" {
		t.Errorf("intended (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, sent); diff != "" {
		t.Errorf("sent (-want +got):\n%s", diff)
	}
	if sum.Stopped != concurrency.StopCount || sum.Requests != 5 || sum.Lag.Max != 0 || sum.Wall != ms(40) || !sum.Start.Equal(t0) {
		t.Errorf("summary %+v; expected stopped by count, 5 requests, no lag, wall 40ms, start t0", sum)
	}
}

// TestOpenLoopCap: six arrivals all due at the start, a cap of 2, senders
// that take 10 ms each. Requests 2 and 3 can only leave when 0 and 1 return
// at 10 ms, requests 4 and 5 at 20 ms: lags {0, 0, 10, 10, 20, 20} ms,
// exactly, and never more than 2 in flight.
func TestOpenLoopCap(t *testing.T) {
	ctx := testCtx(t)
	clk := clocktest.New(t0)
	var (
		mu             sync.Mutex
		inFlight, peak int
	)
	send := func(ctx context.Context, i int, mark func(time.Time)) (int, error) {
		mark(clk.Now())
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		defer func() {
			mu.Lock()
			inFlight--
			mu.Unlock()
		}()
		return i, clk.Sleep(ctx, 10*time.Millisecond)
	}
	run := concurrency.StartOpenLoop(ctx, concurrency.OpenLoop{
		Arrivals: concurrency.Replay{Offsets: make([]time.Duration, 6)}, MaxInFlight: 2, Clock: clk,
	}, send)
	for range 3 {
		if err := clk.BlockUntil(ctx, 2); err != nil {
			t.Fatal(err)
		}
		clk.Advance(10 * time.Millisecond)
	}
	all, sum := run.Collect()
	var lags []time.Duration
	for _, r := range byIndex(all) {
		lags = append(lags, r.Lag())
		if r.Err != nil {
			t.Errorf("request %d: %v", r.Index, r.Err)
		}
	}
	if diff := cmp.Diff([]time.Duration{0, 0, ms(10), ms(10), ms(20), ms(20)}, lags); diff != "" {
		t.Errorf("lags (-want +got):\n%s", diff)
	}
	// Lags {0, 0, 10, 10, 20, 20} ms: p50 = 10 ms, p90 (h = 4.5) = 20 ms.
	wantLag := concurrency.DurationStats{N: 6, Min: 0, Mean: ms(10), Max: ms(20), P50: ms(10), P90: ms(20), P95: ms(20), P99: ms(20)}
	if diff := cmp.Diff(wantLag, sum.Lag); diff != "" {
		t.Errorf("lag stats (-want +got):\n%s", diff)
	}
	if peak != 2 || sum.PeakInFlight != 2 {
		t.Errorf("peak in flight: observed %d, summary %d; expected 2 (the cap)", peak, sum.PeakInFlight)
	}
	if sum.Stopped != concurrency.StopArrivals || sum.Wall != ms(30) {
		t.Errorf("stopped by %v, wall %v; expected arrivals, 30ms", sum.Stopped, sum.Wall)
	}
}

// TestOpenLoopCapRealClock: 40 requests due at once through a cap of 3 on
// the system clock; the senders observe the concurrency themselves.
func TestOpenLoopCapRealClock(t *testing.T) {
	var (
		mu             sync.Mutex
		inFlight, peak int
	)
	send := func(ctx context.Context, i int, _ func(time.Time)) (int, error) {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		runtime.Gosched()
		mu.Lock()
		inFlight--
		mu.Unlock()
		return i, nil
	}
	all, sum := concurrency.StartOpenLoop(testCtx(t), concurrency.OpenLoop{
		Arrivals: concurrency.Constant{Rate: 1e9}, Count: 40, MaxInFlight: 3,
	}, send).Collect()
	if len(all) != 40 || peak > 3 || sum.PeakInFlight > 3 || sum.Lag.N != 40 {
		t.Errorf("%d results, peak observed %d, summary peak %d, lag N %d; expected 40, ≤ 3, ≤ 3, 40", len(all), peak, sum.PeakInFlight, sum.Lag.N)
	}
}

// TestOpenLoopCancel cancels mid-schedule: the first request is in flight,
// the scheduler waits for the second. Both return; no goroutine is left.
func TestOpenLoopCancel(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	clk := clocktest.New(t0)
	started := make(chan struct{})
	send := func(ctx context.Context, i int, _ func(time.Time)) (int, error) {
		close(started) // only request 0 is ever sent
		<-ctx.Done()
		return 0, ctx.Err()
	}
	run := concurrency.StartOpenLoop(ctx, concurrency.OpenLoop{Arrivals: concurrency.Constant{Rate: 10}, Clock: clk}, send)
	testkit.RecvWithin(t, started, testkit.Patience)
	if err := clk.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	all, sum := run.Collect()
	if len(all) != 1 || !errors.Is(all[0].Err, context.Canceled) {
		t.Fatalf("results %+v; expected request 0 cancelled", all)
	}
	if sum.Stopped != concurrency.StopContext || !errors.Is(sum.Err, context.Canceled) || clk.Sleepers() != 0 {
		t.Errorf("stopped by %v, Err %v, %d sleepers; expected context, Canceled, 0", sum.Stopped, sum.Err, clk.Sleepers())
	}
	checkGoroutines(t, before)
}

// TestOpenLoopDuration: a duration bound stops dispatch; a request still
// in flight finishes after it.
func TestOpenLoopDuration(t *testing.T) {
	ctx := testCtx(t)
	clk := clocktest.New(t0)
	send := func(ctx context.Context, i int, _ func(time.Time)) (int, error) {
		return i, clk.Sleep(ctx, 25*time.Millisecond)
	}
	run := concurrency.StartOpenLoop(ctx, concurrency.OpenLoop{
		Arrivals: concurrency.Constant{Rate: 100}, Duration: 25 * time.Millisecond, Clock: clk,
	}, send)
	// Arrivals at 0, 10, 20 ms; 30 ms is beyond the bound. Sleepers are
	// the scheduler (until it stops at 20 ms) and the senders in flight,
	// which return at 25, 35 and 45 ms.
	for _, step := range []struct {
		sleepers int
		advance  float64
	}{{2, 10}, {3, 10}, {3, 10}, {2, 5}, {1, 10}} {
		if err := clk.BlockUntil(ctx, step.sleepers); err != nil {
			t.Fatal(err)
		}
		clk.Advance(ms(step.advance))
	}
	all, sum := run.Collect()
	if len(all) != 3 || sum.Stopped != concurrency.StopDuration || sum.Wall != ms(45) || sum.Failed != 0 {
		t.Errorf("%d results, stopped by %v, wall %v, %d failed; expected 3, duration, 45ms, 0", len(all), sum.Stopped, sum.Wall, sum.Failed)
	}
}

func TestOpenLoopNegativeGapWarns(t *testing.T) {
	send := func(context.Context, int, func(time.Time)) (int, error) { return 0, nil }
	_, sum := concurrency.StartOpenLoop(testCtx(t), concurrency.OpenLoop{
		Arrivals: concurrency.Replay{Offsets: []time.Duration{0, -time.Millisecond}},
		Clock:    clocktest.New(t0),
	}, send).Collect()
	if sum.Requests != 2 || len(sum.Warnings) != 2 { // the negative gap, and the unmarked sends
		t.Errorf("%d requests, warnings %v; expected 2 requests and 2 warnings", sum.Requests, sum.Warnings)
	}
}
