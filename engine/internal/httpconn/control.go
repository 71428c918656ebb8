package httpconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/internal/httpsafe"
)

// ErrorBodyBytes bounds what is read of an error response's body.
const ErrorBodyBytes = 64 << 10

// errRetryAfterPastDeadline ends a control-plane call whose answer asks
// for a wait longer than the time the call has left.
var errRetryAfterPastDeadline = errors.New("Retry-After outlasts the call's deadline")

// Get makes a control-plane call: it GETs path (JSON) on the Control
// client and returns the body of a 2xx answer, at most Config.MaxBody
// bytes. Config.Timeout, when set, bounds the whole call, waits included.
// It retries connection errors and 5xx other than 501 (Config.Retries
// times, backoff from Config.RetryWait, a Retry-After capped at
// httpsafe.MaxRetryAfter), never a 4xx or a refused redirect, and gives up
// at once when a Retry-After would outlast the call's deadline. The error
// after the last attempt says how many were made and wraps the last
// cause: a redacted *engine.StatusError for an answer, else an
// *engine.Error.
func (c *Conn) Get(ctx context.Context, path string) ([]byte, error) {
	op := "GET " + c.Base + path
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req, err := c.NewRequest(ctx, http.MethodGet, path, nil, "application/json", nil)
	if err != nil {
		return nil, c.Redact(err)
	}
	rreq, err := retryablehttp.FromRequest(req)
	if err != nil {
		return nil, c.Redact(fmt.Errorf("%s: %s: %w", c.pkg, op, err))
	}
	resp, err := c.retrying(op).Do(rreq)
	if err != nil {
		var se *engine.StatusError
		if errors.As(err, &se) && ctx.Err() == nil {
			return nil, c.Redact(err)
		}
		return nil, c.Redact(engine.Wrap(ctx, engine.KindReset, op, err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return nil, c.Redact(engine.Wrap(ctx, engine.KindTruncated, op, err))
	}
	if resp.StatusCode >= 300 {
		// A redirect that was not followed (one without a Location), or
		// any status that is not success.
		return nil, c.StatusError(resp.StatusCode, b)
	}
	if int64(len(b)) > c.maxBody {
		return nil, &engine.Error{Kind: engine.KindMalformed, Op: op,
			Err: fmt.Errorf("%s: response body exceeds %d bytes (MaxResponseBytes)", c.pkg, c.maxBody)}
	}
	return b, nil
}

// retrying returns the retrying client of one Get of op. Its own logging
// stays off: the adapters' debug records say what a call did.
func (c *Conn) retrying(op string) *retryablehttp.Client {
	retries := c.retries
	switch {
	case retries == 0:
		retries = 3
	case retries < 0:
		retries = 0
	}
	wait := c.retryWait
	if wait <= 0 {
		wait = 100 * time.Millisecond
	}
	return &retryablehttp.Client{
		HTTPClient:   c.control,
		RetryWaitMin: wait,
		RetryWaitMax: 16 * wait,
		RetryMax:     retries,
		CheckRetry:   c.checkRetry,
		Backoff:      httpsafe.Backoff(httpsafe.MaxRetryAfter),
		ErrorHandler: func(resp *http.Response, err error, attempts int) (*http.Response, error) {
			var re *httpsafe.RedirectError
			if errors.As(err, &re) {
				if resp != nil {
					resp.Body.Close()
				}
				return nil, fmt.Errorf("%s: %s: %w", c.pkg, op, err)
			}
			if resp != nil {
				defer resp.Body.Close()
				b, _ := io.ReadAll(io.LimitReader(resp.Body, ErrorBodyBytes))
				why := ""
				if c.noteRetryAfter && errors.Is(err, errRetryAfterPastDeadline) {
					why = fmt.Sprintf(" (Retry-After %.40q, capped at %v, would outlast the call's deadline)", resp.Header.Get("Retry-After"), httpsafe.MaxRetryAfter)
				}
				return nil, fmt.Errorf("%s: %s: gave up after %d attempt(s)%s: %w", c.pkg, op, attempts, why, c.StatusError(resp.StatusCode, b))
			}
			return nil, fmt.Errorf("%s: gave up after %d attempt(s): %w", c.pkg, attempts, err)
		},
	}
}

// checkRetry retries connection errors and 5xx other than 501, never 4xx
// or a refused redirect, and stops when ctx is done or when the answer's
// Retry-After (capped) would outlast ctx's deadline.
func (c *Conn) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err != nil {
		var re *httpsafe.RedirectError
		if errors.As(err, &re) {
			return false, err
		}
		return true, err
	}
	if httpsafe.RetryAfterExceedsDeadline(ctx, resp, httpsafe.MaxRetryAfter) {
		return false, fmt.Errorf("%s: %w", c.pkg, errRetryAfterPastDeadline)
	}
	if resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented {
		return true, nil
	}
	return false, nil
}

// Prewarm opens n keep-alive connections on the Bench client and leaves
// them idle in its pool: it sends n GET path at once and holds every
// response unread until all n have answered, so that no two share a
// connection; then it drains (at most Config.MaxBody bytes) and closes
// them, which returns the connections to the pool. The status does not
// matter. It returns how many requests got an answer, how many of those
// on a connection opened for them, and the first error, unredacted. The
// caller keeps n within Config.MaxBurst.
func (c *Conn) Prewarm(ctx context.Context, n int, path string) (ok, fresh int, first error) {
	var (
		arrived sync.WaitGroup // every request has its response or its error
		done    sync.WaitGroup
		mu      sync.Mutex
	)
	arrived.Add(n)
	done.Add(n)
	for range n {
		go func() {
			defer done.Done()
			once := sync.OnceFunc(arrived.Done)
			defer once()
			reused := false
			tr := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused }}
			req, err := c.NewRequest(httptrace.WithClientTrace(ctx, tr), http.MethodGet, path, nil, "application/json", nil)
			var resp *http.Response
			if err == nil {
				resp, err = c.Bench.Do(req)
			}
			once()
			arrived.Wait() // hold the connection until all n have one
			if resp != nil {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, c.maxBody))
				resp.Body.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = err
				}
				return
			}
			ok++
			if !reused {
				fresh++
			}
		}()
	}
	done.Wait()
	return ok, fresh, first
}
