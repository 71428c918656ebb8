package concurrency_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/concurrency/clocktest"
	"github.com/inferbench/inferbench/internal/testkit"
)

var errBoom = errors.New("boom")

// TestBurstExactOffsets drives a burst of 4 on a controlled clock. Sender i
// marks its send i ms after the release and sleeps (i+1)·10 ms; request 2
// fails. Every offset is then known by hand.
func TestBurstExactOffsets(t *testing.T) {
	ctx := testCtx(t)
	clk := clocktest.New(t0)
	send := func(ctx context.Context, i int, mark func(time.Time)) (int, error) {
		mark(clk.Now().Add(ms(float64(i))))
		if err := clk.Sleep(ctx, ms(float64(10*(i+1)))); err != nil {
			return 0, err
		}
		if i == 2 {
			return 0, errBoom
		}
		return i * i, nil
	}
	run := concurrency.StartBurst(ctx, 4, send, &concurrency.BurstOptions{Clock: clk})
	if err := clk.BlockUntil(ctx, 4); err != nil {
		t.Fatal(err)
	}
	var got []concurrency.Result[int]
	for range 4 {
		clk.Advance(10 * time.Millisecond)
		got = append(got, testkit.RecvWithin(t, run.Results(), testkit.Patience))
	}
	if _, open := testkit.RecvOKWithin(t, run.Results(), testkit.Patience); open {
		t.Fatal("results channel still open after 4 results")
	}
	sum := run.Summary()

	want := []concurrency.Result[int]{
		{Index: 0, User: 0, Value: 0, Dispatched: true, Dispatch: 0, Sent: 0, Marked: true, Done: ms(10)},
		{Index: 1, User: 1, Value: 1, Dispatched: true, Dispatch: 0, Sent: ms(1), Marked: true, Done: ms(20)},
		{Index: 2, User: 2, Err: errBoom, Dispatched: true, Dispatch: 0, Sent: ms(2), Marked: true, Done: ms(30)},
		{Index: 3, User: 3, Value: 9, Dispatched: true, Dispatch: 0, Sent: ms(3), Marked: true, Done: ms(40)},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateErrors()); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	// Send offsets {0, 1, 2, 3} ms: type-7 p50 = 1.5 ms, p90 = 2.7 ms,
	// p95 = 2.85 ms, p99 = 2.97 ms, mean 1.5 ms. Lag equals Skew here since
	// every Intended is 0 and the first send is at the release.
	offs := concurrency.DurationStats{N: 4, Min: 0, Mean: ms(1.5), Max: ms(3),
		P50: ms(1.5), P90: ms(2.7), P95: ms(2.85), P99: ms(2.97)}
	wantSum := concurrency.Summary{
		Start: t0, Wall: ms(40), Requests: 4, Dispatched: 4, Failed: 1, PeakInFlight: 4,
		Lag: offs, Skew: offs, Stopped: concurrency.StopFinished,
	}
	if diff := cmp.Diff(wantSum, sum, cmpopts.EquateErrors()); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
}

// TestBurstCollect checks Burst's index order, an unmarking sender's
// fallback (Sent = Dispatch, with a warning) and a failed Prepare.
func TestBurstCollect(t *testing.T) {
	ctx := testCtx(t)
	clk := clocktest.New(t0)
	prepared := make([]string, 5)
	prepare := func(_ context.Context, i int) error {
		if i == 3 {
			return errBoom
		}
		prepared[i] = fmt.Sprintf("body-%d", i)
		return nil
	}
	send := func(_ context.Context, i int, _ func(time.Time)) (string, error) {
		return prepared[i], nil
	}
	res := concurrency.Burst(ctx, 5, send, &concurrency.BurstOptions{Clock: clk, Prepare: prepare})
	var values []string
	for i, r := range res.Requests {
		if r.Index != i {
			t.Errorf("Requests[%d].Index = %d", i, r.Index)
		}
		values = append(values, r.Value)
		if i == 3 {
			if !errors.Is(r.Err, errBoom) || r.Dispatched {
				t.Errorf("request 3: Err %v, Dispatched %v; expected the prepare error, not dispatched", r.Err, r.Dispatched)
			}
			continue
		}
		if r.Err != nil || r.Marked || r.Sent != r.Dispatch {
			t.Errorf("request %d: Err %v, Marked %v, Sent %v, Dispatch %v; expected no error, Sent = Dispatch unmarked", i, r.Err, r.Marked, r.Sent, r.Dispatch)
		}
	}
	if diff := cmp.Diff([]string{"body-0", "body-1", "body-2", "", "body-4"}, values); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	if res.Dispatched != 4 || res.Failed != 1 || len(res.Warnings) != 1 {
		t.Errorf("summary: Dispatched %d, Failed %d, Warnings %v; expected 4, 1 and one warning about unmarked sends", res.Dispatched, res.Failed, res.Warnings)
	}
}

// TestBurstFailuresDoNotAbort: every other request fails at once while the
// rest wait for the failures to have happened; all complete.
func TestBurstFailuresDoNotAbort(t *testing.T) {
	ctx := testCtx(t)
	const n = 16
	var failed sync.WaitGroup
	failed.Add(n / 2)
	send := func(ctx context.Context, i int, _ func(time.Time)) (int, error) {
		if i%2 == 1 {
			failed.Done()
			return 0, fmt.Errorf("request %d: %w", i, errBoom)
		}
		_ = testkit.WaitContext(ctx, &failed)
		return i, ctx.Err()
	}
	res := concurrency.Burst(ctx, n, send, nil)
	for i, r := range res.Requests {
		if i%2 == 1 {
			if !errors.Is(r.Err, errBoom) {
				t.Errorf("request %d: Err %v, expected errBoom", i, r.Err)
			}
		} else if r.Err != nil || r.Value != i {
			t.Errorf("request %d: %v, %v; expected %d, nil", i, r.Value, r.Err, i)
		}
	}
	if res.Failed != n/2 || res.Err != nil || res.Stopped != concurrency.StopFinished {
		t.Errorf("summary: Failed %d, Err %v, Stopped %v; expected %d, nil, finished", res.Failed, res.Err, res.Stopped, n/2)
	}
}

// TestBurstCancelInFlight cancels a burst while 6 of 8 requests block in
// flight: they return with the context's error, no goroutine is left.
func TestBurstCancelInFlight(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	var blocked sync.WaitGroup
	blocked.Add(6)
	send := func(ctx context.Context, i int, _ func(time.Time)) (int, error) {
		if i < 2 {
			return i, nil
		}
		blocked.Done()
		<-ctx.Done()
		return 0, ctx.Err()
	}
	run := concurrency.StartBurst(ctx, 8, send, nil)
	testkit.WaitWithin(t, &blocked, testkit.Patience)
	cancel()
	all, sum := run.Collect()
	if len(all) != 8 {
		t.Fatalf("%d results, expected 8", len(all))
	}
	var canceled int
	for _, r := range all {
		if errors.Is(r.Err, context.Canceled) {
			canceled++
		}
	}
	if canceled != 6 || !errors.Is(sum.Err, context.Canceled) || sum.Stopped != concurrency.StopContext || sum.Dispatched != 8 {
		t.Errorf("%d cancelled, summary Err %v, Stopped %v, Dispatched %d; expected 6, Canceled, context, 8", canceled, sum.Err, sum.Stopped, sum.Dispatched)
	}
	checkGoroutines(t, before)
}

// TestBurstCancelBeforeRelease cancels while one worker is still preparing:
// nobody is released, every request fails undispatched, the sender is never
// called.
func TestBurstCancelBeforeRelease(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	var ready sync.WaitGroup
	ready.Add(4)
	prepare := func(ctx context.Context, i int) error {
		if i == 4 {
			<-ctx.Done()
			return ctx.Err()
		}
		ready.Done()
		return nil
	}
	var calls atomic.Int32
	send := func(context.Context, int, func(time.Time)) (int, error) {
		calls.Add(1)
		return 0, nil
	}
	run := concurrency.StartBurst(ctx, 5, send, &concurrency.BurstOptions{Prepare: prepare})
	testkit.WaitWithin(t, &ready, testkit.Patience)
	cancel()
	all, sum := run.Collect()
	for _, r := range all {
		if r.Dispatched || !errors.Is(r.Err, context.Canceled) {
			t.Errorf("request %d: Dispatched %v, Err %v; expected undispatched with Canceled", r.Index, r.Dispatched, r.Err)
		}
	}
	if len(all) != 5 || calls.Load() != 0 || sum.Dispatched != 0 || !sum.Start.IsZero() || !errors.Is(sum.Err, context.Canceled) {
		t.Errorf("%d results, %d sends, summary %+v; expected 5 results, no send, no start, Canceled", len(all), calls.Load(), sum)
	}
	checkGoroutines(t, before)
}

// TestBurstMarkAfterReturn: a mark after the sender returned (a late
// callback) is ignored, and the first of several marks counts.
func TestBurstMarkAfterReturn(t *testing.T) {
	clk := clocktest.New(t0)
	var late func(time.Time)
	send := func(_ context.Context, i int, mark func(time.Time)) (int, error) {
		mark(t0.Add(ms(2)))
		mark(t0.Add(ms(1)))
		late = mark
		return 0, nil
	}
	res := concurrency.Burst(testCtx(t), 1, send, &concurrency.BurstOptions{Clock: clk})
	late(t0.Add(ms(5)))
	if r := res.Requests[0]; r.Sent != ms(2) || !r.Marked {
		t.Errorf("Sent %v, Marked %v; expected the first mark, 2ms", r.Sent, r.Marked)
	}
}

func TestBurstZero(t *testing.T) {
	res := concurrency.Burst(testCtx(t), 0, func(context.Context, int, func(time.Time)) (int, error) {
		t.Error("sender called in a burst of 0")
		return 0, nil
	}, nil)
	if len(res.Requests) != 0 || res.Requests == nil || res.Dispatched != 0 || res.Err != nil || res.Stopped != concurrency.StopFinished {
		t.Errorf("burst of 0: %+v", res)
	}
}
