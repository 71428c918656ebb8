package openai

import (
	"context"
	"encoding/json"
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

// modelsPath is the model list endpoint under the server root.
const modelsPath = "/v1/models"

// modelListWire is the body of GET /v1/models.
type modelListWire struct {
	Data []modelWire `json:"data"`
}

// modelWire is one model as the servers describe it: max_model_len is
// vLLM's and SGLang's context window, meta.n_ctx_train llama.cpp's
// training context.
type modelWire struct {
	ID          string `json:"id"`
	OwnedBy     string `json:"owned_by"`
	MaxModelLen int    `json:"max_model_len"`
	Meta        *struct {
		NCtxTrain int `json:"n_ctx_train"`
	} `json:"meta"`
}

// Models lists the models the server serves (GET /v1/models). It
// implements engine.ModelLister. ContextLength is vLLM's and SGLang's
// max_model_len, else llama.cpp's meta.n_ctx_train, else 0.
//
// As a control-plane call it is retried after connection errors and 5xx
// responses (Options.Retries times, backoff from Options.RetryWait, a
// Retry-After capped at httpsafe.MaxRetryAfter); a 4xx is returned at once
// as an *engine.StatusError. Options.Timeout, when set, bounds the whole
// call, waits included; a Retry-After that would outlast the call's
// deadline ends it at once. It follows redirects within the server's
// origin only. The error after the last attempt says how many were made
// and wraps the last cause.
func (c *Client) Models(ctx context.Context) ([]engine.Model, error) {
	b, err := c.control(ctx, modelsPath)
	if err != nil {
		return nil, err
	}
	var w modelListWire
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, &engine.Error{Kind: engine.KindMalformed, Op: "GET " + c.base + modelsPath,
			Err: c.redact(fmt.Errorf("openai: want {\"data\": [models]}, found %q: %w", excerpt(c.redactBytes(b)), err))}
	}
	out := make([]engine.Model, 0, len(w.Data))
	for _, m := range w.Data {
		em := engine.Model{ID: m.ID, OwnedBy: m.OwnedBy, ContextLength: m.MaxModelLen}
		if em.ContextLength == 0 && m.Meta != nil {
			em.ContextLength = m.Meta.NCtxTrain
		}
		out = append(out, em)
	}
	return out, nil
}

// control GETs path with retries and returns the body of a 2xx response.
func (c *Client) control(ctx context.Context, path string) ([]byte, error) {
	op := "GET " + c.base + path
	if c.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
	}
	retries := c.opts.Retries
	switch {
	case retries == 0:
		retries = 3
	case retries < 0:
		retries = 0
	}
	wait := c.opts.RetryWait
	if wait <= 0 {
		wait = 100 * time.Millisecond
	}
	rc := &retryablehttp.Client{
		HTTPClient:   c.ctl,
		RetryWaitMin: wait,
		RetryWaitMax: 16 * wait,
		RetryMax:     retries,
		CheckRetry:   checkRetry,
		Backoff:      httpsafe.Backoff(httpsafe.MaxRetryAfter),
		ErrorHandler: func(resp *http.Response, err error, attempts int) (*http.Response, error) {
			var re *httpsafe.RedirectError
			if errors.As(err, &re) {
				if resp != nil {
					resp.Body.Close()
				}
				return nil, fmt.Errorf("openai: %s: %w", op, err)
			}
			if resp != nil {
				defer resp.Body.Close()
				b, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyBytes))
				why := ""
				if errors.Is(err, errRetryAfterPastDeadline) {
					why = fmt.Sprintf(" (Retry-After %.40q, capped at %v, would outlast the call's deadline)", resp.Header.Get("Retry-After"), httpsafe.MaxRetryAfter)
				}
				return nil, fmt.Errorf("openai: %s: gave up after %d attempt(s)%s: %w", op, attempts, why, c.statusError(resp.StatusCode, b))
			}
			return nil, fmt.Errorf("openai: gave up after %d attempt(s): %w", attempts, err)
		},
	}
	if c.opts.Logger != nil {
		rc.Logger = c.opts.Logger
	}
	req, err := c.newRequest(ctx, http.MethodGet, path, nil, "application/json", nil)
	if err != nil {
		return nil, c.redact(err)
	}
	rreq, err := retryablehttp.FromRequest(req)
	if err != nil {
		return nil, c.redact(fmt.Errorf("openai: %s: %w", op, err))
	}
	resp, err := rc.Do(rreq)
	if err != nil {
		var se *engine.StatusError
		if errors.As(err, &se) && ctx.Err() == nil {
			return nil, c.redact(err)
		}
		return nil, c.redact(engine.Wrap(ctx, engine.KindReset, op, err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return nil, c.redact(engine.Wrap(ctx, engine.KindTruncated, op, err))
	}
	if resp.StatusCode >= 300 {
		// A redirect that was not followed (one without a Location), or
		// any status that is not success.
		return nil, c.statusError(resp.StatusCode, b)
	}
	if int64(len(b)) > c.maxBody {
		return nil, &engine.Error{Kind: engine.KindMalformed, Op: op,
			Err: fmt.Errorf("openai: response body exceeds %d bytes (MaxResponseBytes)", c.maxBody)}
	}
	return b, nil
}

// errRetryAfterPastDeadline ends a control-plane call whose answer asks
// for a wait longer than the time the call has left.
var errRetryAfterPastDeadline = errors.New("openai: Retry-After outlasts the call's deadline")

// checkRetry retries connection errors and 5xx other than 501, never 4xx
// or a refused redirect, and stops when ctx is done or when the answer's
// Retry-After (capped) would outlast ctx's deadline.
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
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
		return false, errRetryAfterPastDeadline
	}
	if resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented {
		return true, nil
	}
	return false, nil
}

// Prewarm opens n keep-alive connections to the server and leaves them idle
// in the client's pool, so that the next n concurrent Complete calls write
// their requests at once instead of dialing. It implements
// engine.Prewarmer.
//
// It sends n GET /v1/models at once and holds every response unread until
// all n have answered, so that no two share a connection; then it drains
// and closes the bodies, which returns the connections to the pool. The
// status does not matter (a server without /v1/models still keeps the
// connection). n must not exceed Options.MaxBurst, or the pool would close
// the surplus. Prewarm is not retried; its error says how many of the n
// connections it managed.
func (c *Client) Prewarm(ctx context.Context, n int) error {
	if n <= 0 {
		return nil
	}
	if n > c.burst {
		return fmt.Errorf("openai: Prewarm(%d): the client keeps at most %d idle connections (Options.MaxBurst)", n, c.burst)
	}
	var (
		arrived sync.WaitGroup // every request has its response or its error
		done    sync.WaitGroup
		mu      sync.Mutex
		fresh   int
		okN     int
		first   error
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
			req, err := c.newRequest(httptrace.WithClientTrace(ctx, tr), http.MethodGet, modelsPath, nil, "application/json", nil)
			var resp *http.Response
			if err == nil {
				resp, err = c.http.Do(req)
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
			okN++
			if !reused {
				fresh++
			}
		}()
	}
	done.Wait()
	c.log.DebugContext(ctx, "openai: prewarm", "want", n, "open", okN, "new", fresh)
	if first != nil {
		return c.redact(engine.Wrap(ctx, engine.KindConnect, "prewarm "+c.base+modelsPath,
			fmt.Errorf("openai: opened %d of %d connections: %w", okN, n, first)))
	}
	return nil
}
