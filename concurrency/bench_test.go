package concurrency_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferbench/inferbench/concurrency"
)

// BenchmarkBurst measures the package's own cost per request: a burst of
// n no-op senders (goroutine start, barrier, bookkeeping, result channel).
// For n > 1 it also reports the median per-burst spread of the workers'
// Dispatch offsets (dispatch-spread-ns): the skew the barrier itself adds
// before any I/O.
func BenchmarkBurst(b *testing.B) {
	send := func(context.Context, int, func(time.Time)) (struct{}, error) { return struct{}{}, nil }
	for _, n := range []int{1, 64, 256} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			ctx := context.Background()
			var spreads []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				res := concurrency.Burst(ctx, n, send, nil)
				lo, hi := res.Requests[0].Dispatch, res.Requests[0].Dispatch
				for _, r := range res.Requests {
					lo, hi = min(lo, r.Dispatch), max(hi, r.Dispatch)
				}
				spreads = append(spreads, hi-lo)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/req")
			if n > 1 {
				b.ReportMetric(float64(concurrency.SummarizeDurations(spreads).P50), "dispatch-spread-ns")
			}
		})
	}
}

// BenchmarkSkew releases bursts of n HTTP requests against a loopback
// server that stamps each request's arrival on the process's monotonic
// clock, over n keep-alive connections opened before the timer starts.
// Reported, pooled over every request of every burst, with
// skew_i = arrival_i − min(arrivals of its burst):
//
//	p50-skew-ns, p99-skew-ns, max-skew-ns  server arrival skew
//	p50-spread-ns                           median per-burst max − min arrival
//	send-p99-skew-ns, send-max-skew-ns      the same from the client's marks
//	                                        (httptrace GotConn)
//	dials/op                                connections opened per burst
//	                                        during the measurement; reported
//	                                        only when not 0
//
// A burst of 1 has no skew: its line reports the round trip (ns/op) alone.
func BenchmarkSkew(b *testing.B) {
	for _, n := range []int{1, 8, 64, 256} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { benchSkew(b, n) })
	}
}

func benchSkew(b *testing.B, n int) {
	base := time.Now() // arrivals are stored as monotonic offsets from base
	var (
		arrivals = make([]atomic.Int64, n)
		warm     atomic.Bool
		held     atomic.Int64
		allIn    = make(chan struct{})
	)
	warm.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Since(base)
		if warm.Load() { // pre-dial: hold every request until n are in, forcing n connections
			if held.Add(1) == int64(n) {
				close(allIn)
			}
			select {
			case <-allIn:
			case <-r.Context().Done():
			}
		} else if i, err := strconv.Atoi(r.Header.Get("X-Index")); err == nil && i >= 0 && i < n {
			arrivals[i].Store(int64(at))
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()

	var dials atomic.Int64
	dialer := &net.Dialer{}
	tr := &http.Transport{
		MaxIdleConnsPerHost: n,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return dialer.DialContext(ctx, network, addr)
		},
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	reqs := make([]*http.Request, n)
	ctx := context.Background()
	prepare := func(ctx context.Context, i int) error {
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			return err
		}
		r.Header.Set("X-Index", strconv.Itoa(i))
		reqs[i] = r
		return nil
	}
	send := func(ctx context.Context, i int, mark func(time.Time)) (int, error) {
		r := reqs[i].WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			GotConn: func(httptrace.GotConnInfo) { mark(time.Now()) },
		}))
		resp, err := client.Do(r)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("status %d, expected 200", resp.StatusCode)
		}
		return resp.StatusCode, nil
	}
	opts := &concurrency.BurstOptions{Prepare: prepare}

	if res := concurrency.Burst(ctx, n, send, opts); res.Failed > 0 {
		b.Fatalf("pre-dial burst: %d of %d failed: %v", res.Failed, n, res.Requests)
	}
	if got := dials.Load(); got != int64(n) {
		b.Fatalf("pre-dial opened %d connections, expected %d", got, n)
	}
	warm.Store(false)
	dials.Store(0)

	var serverSkew, clientSkew, spreads []time.Duration
	for b.Loop() {
		res := concurrency.Burst(ctx, n, send, opts)
		if res.Failed > 0 {
			b.Fatalf("%d of %d requests failed, first: %v", res.Failed, n, firstErr(res.Requests))
		}
		at := make([]time.Duration, n)
		for i := range arrivals {
			at[i] = time.Duration(arrivals[i].Load())
		}
		first := slices.Min(at)
		for _, a := range at {
			serverSkew = append(serverSkew, a-first)
		}
		spreads = append(spreads, slices.Max(at)-first)
		sentFirst := res.Requests[0].Sent
		for _, r := range res.Requests {
			sentFirst = min(sentFirst, r.Sent)
		}
		for _, r := range res.Requests {
			clientSkew = append(clientSkew, r.Sent-sentFirst)
		}
	}
	if d := dials.Load(); d > 0 { // zero by design; a zero unit would break benchstat's geomean
		b.ReportMetric(float64(d)/float64(b.N), "dials/op")
	}
	if n == 1 {
		return // one request has no skew; the line reports its round trip alone
	}
	srvStats := concurrency.SummarizeDurations(serverSkew)
	cliStats := concurrency.SummarizeDurations(clientSkew)
	b.ReportMetric(float64(srvStats.P50), "p50-skew-ns")
	b.ReportMetric(float64(srvStats.P99), "p99-skew-ns")
	b.ReportMetric(float64(srvStats.Max), "max-skew-ns")
	b.ReportMetric(float64(concurrency.SummarizeDurations(spreads).P50), "p50-spread-ns")
	b.ReportMetric(float64(cliStats.P99), "send-p99-skew-ns")
	b.ReportMetric(float64(cliStats.Max), "send-max-skew-ns")
}

func firstErr[T any](rs []concurrency.Result[T]) error {
	for _, r := range rs {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}
