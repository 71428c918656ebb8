package exo

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// PrewarmPath is what Prewarm requests on each connection: exo's cheapest
// endpoint, a bare JSON string.
const PrewarmPath = "/node_id"

// Prewarm opens n connections to the cluster on the benchmark transport
// and leaves them idle, so that the next n concurrent Complete calls write
// their requests at once instead of dialing first. It sends n GET
// /node_id requests at the same time, holds every answer unread until all
// n have arrived (so that no two requests share a connection), then
// drains and closes them, which returns each connection to the idle pool.
// Connections already idle count towards n. The answers' status does not
// matter; only a transport failure is an error.
//
// n must not exceed MaxBurst, the number of idle connections the transport
// keeps.
func (c *Client) Prewarm(ctx context.Context, n int) error {
	if n <= 0 {
		return nil
	}
	if n > c.maxBurst {
		return fmt.Errorf("exo: prewarm %d connections: expected at most Options.MaxBurst = %d, the idle connections the transport keeps", n, c.maxBurst)
	}
	target := c.url(PrewarmPath, nil)
	var (
		arrived sync.WaitGroup
		done    sync.WaitGroup
		release = make(chan struct{})
		errs    = make([]error, n)
	)
	arrived.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
			var resp *http.Response
			if err == nil {
				resp, err = c.bench.Do(req)
			}
			arrived.Done()
			<-release
			if err != nil {
				errs[i] = err
				return
			}
			_, errs[i] = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	arrived.Wait()
	close(release)
	done.Wait()
	failed := 0
	var first error
	for _, err := range errs {
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("exo: prewarm: opened %d of %d connections: %w", n-failed, n, first)
	}
	return nil
}
