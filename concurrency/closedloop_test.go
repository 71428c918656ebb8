package concurrency_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inferbench/inferbench/concurrency"
	"github.com/inferbench/inferbench/concurrency/clocktest"
	"github.com/inferbench/inferbench/internal/testkit"
)

// TestClosedLoop: 2 users, each request takes 5 ms, think time 2 ms,
// 6 requests. Each user sends at 0, 7 and 14 ms, exactly.
func TestClosedLoop(t *testing.T) {
	ctx := testCtx(t)
	clk := clocktest.New(t0)
	send := func(ctx context.Context, i int, _ func(time.Time)) (int, error) {
		return i, clk.Sleep(ctx, 5*time.Millisecond)
	}
	run := concurrency.StartClosedLoop(ctx, concurrency.ClosedLoop{Users: 2, Think: 2 * time.Millisecond, Count: 6, Clock: clk}, send)
	for _, step := range []float64{5, 2, 5, 2, 5} { // then the users stop on the count
		if err := clk.BlockUntil(ctx, 2); err != nil {
			t.Fatal(err)
		}
		clk.Advance(ms(step))
	}
	all, sum := run.Collect()
	perUser := map[int][]time.Duration{}
	for _, r := range byIndex(all) {
		perUser[r.User] = append(perUser[r.User], r.Dispatch)
		if r.Lag() != 0 || r.Latency() != ms(5) || r.Err != nil {
			t.Errorf("request %d: lag %v, latency %v, err %v; expected 0, 5ms, nil", r.Index, r.Lag(), r.Latency(), r.Err)
		}
	}
	want := []time.Duration{0, ms(7), ms(14)}
	if diff := cmp.Diff(map[int][]time.Duration{0: want, 1: want}, perUser); diff != "" {
		t.Errorf("dispatch offsets per user (-want +got):\n%s", diff)
	}
	if sum.Requests != 6 || sum.Stopped != concurrency.StopCount || sum.PeakInFlight != 2 || sum.Wall != ms(19) {
		t.Errorf("summary %+v; expected 6 requests, stopped by count, peak 2, wall 19ms", sum)
	}
}

// TestClosedLoopDuration: 3 users, 5 ms requests, no think time, 12 ms
// bound: requests at 0, 5 and 10 ms per user, none at 15.
func TestClosedLoopDuration(t *testing.T) {
	ctx := testCtx(t)
	clk := clocktest.New(t0)
	send := func(ctx context.Context, i int, _ func(time.Time)) (int, error) {
		return i, clk.Sleep(ctx, 5*time.Millisecond)
	}
	run := concurrency.StartClosedLoop(ctx, concurrency.ClosedLoop{Users: 3, Duration: 12 * time.Millisecond, Clock: clk}, send)
	for range 3 {
		if err := clk.BlockUntil(ctx, 3); err != nil {
			t.Fatal(err)
		}
		clk.Advance(5 * time.Millisecond)
	}
	all, sum := run.Collect()
	if len(all) != 9 || sum.Stopped != concurrency.StopDuration || sum.Wall != ms(15) {
		t.Errorf("%d results, stopped by %v, wall %v; expected 9, duration, 15ms", len(all), sum.Stopped, sum.Wall)
	}
}

// TestClosedLoopCancel: cancel while one user is in flight and one thinks.
func TestClosedLoopCancel(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	clk := clocktest.New(t0)
	inFlight := make(chan struct{})
	send := func(ctx context.Context, i int, _ func(time.Time)) (int, error) {
		if i == 0 {
			return 0, nil // the user of request 0 goes to think for an hour
		}
		close(inFlight) // request 1; the other user never sends again
		<-ctx.Done()
		return 0, ctx.Err()
	}
	run := concurrency.StartClosedLoop(ctx, concurrency.ClosedLoop{Users: 2, Think: time.Hour, Clock: clk}, send)
	testkit.RecvWithin(t, inFlight, testkit.Patience)
	if err := clk.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	all, sum := run.Collect()
	if len(all) != 2 || sum.Failed != 1 || sum.Stopped != concurrency.StopContext || !errors.Is(sum.Err, context.Canceled) {
		t.Errorf("%d results, %d failed, stopped by %v, Err %v; expected 2, 1, context, Canceled", len(all), sum.Failed, sum.Stopped, sum.Err)
	}
	checkGoroutines(t, before)
}
