package concurrency_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"slices"
	"time"

	"github.com/inferbench/inferbench/concurrency"
)

// A burst of three requests released together; request 1 fails without
// stopping the others.
func ExampleBurst() {
	send := func(ctx context.Context, i int, mark func(time.Time)) (int, error) {
		mark(time.Now()) // a real sender marks when its bytes start to go out
		if i == 1 {
			return 0, errors.New("503 overloaded")
		}
		return i * i, nil
	}
	res := concurrency.Burst(context.Background(), 3, send, nil)
	for _, r := range res.Requests {
		fmt.Println(r.Index, r.Value, r.Err)
	}
	fmt.Println("failed:", res.Failed, "skew measured over", res.Skew.N, "sends")
	// Output:
	// 0 0 <nil>
	// 1 0 503 overloaded
	// 2 4 <nil>
	// failed: 1 skew measured over 3 sends
}

// A burst of HTTP requests on pre-opened keep-alive connections. The
// sender marks the instant the transport hands it a connection, just before
// the request's bytes are written.
func ExampleBurst_http() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	const n = 4
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	reqs := make([]*http.Request, n)
	prepare := func(ctx context.Context, i int) error { // encode before the barrier
		var err error
		reqs[i], err = http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		return err
	}
	send := func(ctx context.Context, i int, mark func(time.Time)) (int, error) {
		trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { mark(time.Now()) }}
		resp, err := client.Do(reqs[i].WithContext(httptrace.WithClientTrace(ctx, trace)))
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	res := concurrency.Burst(context.Background(), n, send, &concurrency.BurstOptions{Prepare: prepare})
	for _, r := range res.Requests {
		fmt.Println(r.Index, r.Value, r.Err, r.Marked)
	}
	fmt.Println("warnings:", len(res.Warnings))
	// Output:
	// 0 200 <nil> true
	// 1 200 <nil> true
	// 2 200 <nil> true
	// 3 200 <nil> true
	// warnings: 0
}

// The intended send offsets of constant arrivals at 4 per second during one
// second.
func ExampleSchedule() {
	offs, why, _ := concurrency.Schedule(concurrency.Constant{Rate: 4}, 0, time.Second)
	fmt.Println(offs, why)
	// Output:
	// [0s 250ms 500ms 750ms] duration
}

// A seeded Poisson process reproduces its schedule exactly.
func ExamplePoisson() {
	sched := func(seed uint64) []time.Duration {
		offs, _, _ := concurrency.Schedule(concurrency.Poisson{Rate: 50, Src: rand.NewPCG(seed, 0)}, 100, 0)
		return offs
	}
	fmt.Println(concurrency.Poisson{Rate: 50})
	fmt.Println("same seed, same schedule:", slices.Equal(sched(1), sched(1)))
	fmt.Println("other seed, same schedule:", slices.Equal(sched(1), sched(2)))
	// Output:
	// poisson(rate=50/s)
	// same seed, same schedule: true
	// other seed, same schedule: false
}

// An open loop of 5 requests at 1000 per second, streaming results as they
// finish.
func ExampleStartOpenLoop() {
	send := func(ctx context.Context, i int, mark func(time.Time)) (string, error) {
		mark(time.Now())
		return fmt.Sprint("reply ", i), nil
	}
	run := concurrency.StartOpenLoop(context.Background(), concurrency.OpenLoop{
		Arrivals:    concurrency.Constant{Rate: 1000},
		Count:       5,
		MaxInFlight: 2,
	}, send)
	var n int
	for r := range run.Results() { // a sink would write each row here
		if r.Err == nil {
			n++
		}
	}
	sum := run.Summary()
	fmt.Println(n, "replies; stopped by", sum.Stopped, "; lag measured over", sum.Lag.N, "requests")
	// Output:
	// 5 replies; stopped by count ; lag measured over 5 requests
}

// Two virtual users sending back to back, six requests in all.
func ExampleStartClosedLoop() {
	send := func(ctx context.Context, i int, mark func(time.Time)) (int, error) { return i, nil }
	all, sum := concurrency.StartClosedLoop(context.Background(), concurrency.ClosedLoop{Users: 2, Count: 6}, send).Collect()
	fmt.Println(len(all), "requests; stopped by", sum.Stopped)
	// Output:
	// 6 requests; stopped by count
}

// The highest rate a synthetic system serves within a p99 latency SLO of
// 100 ms; it saturates at 37 requests per second.
func ExampleSearchRate() {
	measure := func(ctx context.Context, rate float64) (time.Duration, error) {
		if rate <= 37 {
			return 60 * time.Millisecond, nil // a real measure runs an open loop at rate
		}
		return 2 * time.Second, nil
	}
	slo := func(p99 time.Duration) bool { return p99 <= 100*time.Millisecond }
	res, err := concurrency.SearchRate(context.Background(), measure, slo, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range res.Probes {
		fmt.Printf("%.2f/s pass=%v\n", p.Rate, p.Pass)
	}
	fmt.Printf("highest passing rate: %.2f/s\n", res.Rate)
	// Output:
	// 1.00/s pass=true
	// 2.00/s pass=true
	// 4.00/s pass=true
	// 8.00/s pass=true
	// 16.00/s pass=true
	// 32.00/s pass=true
	// 64.00/s pass=false
	// 45.25/s pass=false
	// 38.05/s pass=false
	// 34.90/s pass=true
	// 36.44/s pass=true
	// highest passing rate: 36.44/s
}
