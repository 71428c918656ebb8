package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/internal/httpsafe"
)

// The control-plane endpoints under the server root.
const (
	tagsPath    = "/api/tags"
	versionPath = "/api/version"
)

// tagsWire is the body of GET /api/tags (api.ListResponse).
type tagsWire struct {
	Models []struct {
		Name    string `json:"name"`
		Model   string `json:"model"`
		Details struct {
			Family            string `json:"family"`
			ParameterSize     string `json:"parameter_size"`
			QuantizationLevel string `json:"quantization_level"`
		} `json:"details"`
	} `json:"models"`
}

// Models lists the models the server has pulled (GET /api/tags). It
// implements engine.ModelLister. ID is the model's name with its tag
// ("llama3.2:latest"), which /api/chat takes as it is (it also takes the
// name without ":latest"); Name is the same name; ContextLength is 0,
// since /api/tags does not say (the context Ollama runs a model with is
// its num_ctx option, 2048 by default in v0.6.5, not the model's).
//
// As a control-plane call it is retried after connection errors and 5xx
// responses (Options.Retries times, backoff from Options.RetryWait); a 4xx
// is returned at once as an *engine.StatusError. It follows redirects
// within the server's origin only.
func (c *Client) Models(ctx context.Context) ([]engine.Model, error) {
	b, err := c.control(ctx, tagsPath)
	if err != nil {
		return nil, err
	}
	var w tagsWire
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, &engine.Error{Kind: engine.KindMalformed, Op: "GET " + c.base + tagsPath,
			Err: fmt.Errorf("ollama: want {\"models\": [...]}, found %q: %w", excerpt(c.redactBytes(b)), err)}
	}
	out := make([]engine.Model, 0, len(w.Models))
	for _, m := range w.Models {
		id := m.Name
		if id == "" {
			id = m.Model
		}
		out = append(out, engine.Model{ID: id, Name: m.Name})
	}
	return out, nil
}

// Version returns the server's version (GET /api/version), for a result
// file's provenance.
func (c *Client) Version(ctx context.Context) (string, error) {
	b, err := c.control(ctx, versionPath)
	if err != nil {
		return "", err
	}
	var w struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &w); err != nil || w.Version == "" {
		return "", &engine.Error{Kind: engine.KindMalformed, Op: "GET " + c.base + versionPath,
			Err: fmt.Errorf("ollama: want {\"version\": \"...\"}, found %q", excerpt(c.redactBytes(b)))}
	}
	return w.Version, nil
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
				return nil, fmt.Errorf("ollama: %s: %w", op, err)
			}
			if resp != nil {
				defer resp.Body.Close()
				b, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyBytes))
				return nil, fmt.Errorf("ollama: %s: gave up after %d attempt(s): %w", op, attempts, c.statusError(resp.StatusCode, b))
			}
			return nil, fmt.Errorf("ollama: gave up after %d attempt(s): %w", attempts, err)
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
		return nil, c.redact(fmt.Errorf("ollama: %s: %w", op, err))
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
		return nil, c.statusError(resp.StatusCode, b)
	}
	if int64(len(b)) > c.maxBody {
		return nil, &engine.Error{Kind: engine.KindMalformed, Op: op,
			Err: fmt.Errorf("ollama: response body exceeds %d bytes (MaxResponseBytes)", c.maxBody)}
	}
	return b, nil
}

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
		return false, errors.New("ollama: Retry-After outlasts the call's deadline")
	}
	if resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented {
		return true, nil
	}
	return false, nil
}

// Prewarm opens n keep-alive connections to the server and leaves them
// idle in the client's pool, so that the next n concurrent Complete calls
// write their requests at once. It implements engine.Prewarmer.
//
// It sends n GET /api/version at once (the cheapest answer Ollama has:
// no model is touched) and holds every response unread until all n have
// answered, so that no two share a connection; then it drains and closes
// them, which returns the connections to the pool. n must not exceed
// Options.MaxBurst. It does not load the model: a first request to a model
// Ollama has not loaded spends the load in load_duration.
func (c *Client) Prewarm(ctx context.Context, n int) error {
	if n <= 0 {
		return nil
	}
	if n > c.burst {
		return fmt.Errorf("ollama: Prewarm(%d): the client keeps at most %d idle connections (Options.MaxBurst)", n, c.burst)
	}
	var (
		arrived sync.WaitGroup
		done    sync.WaitGroup
		mu      sync.Mutex
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
			req, err := c.newRequest(ctx, http.MethodGet, versionPath, nil, "application/json", nil)
			var resp *http.Response
			if err == nil {
				resp, err = c.http.Do(req)
			}
			once()
			arrived.Wait()
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
		}()
	}
	done.Wait()
	c.log.DebugContext(ctx, "ollama: prewarm", "want", n, "open", okN)
	if first != nil {
		return c.redact(engine.Wrap(ctx, engine.KindConnect, "prewarm "+c.base+versionPath,
			fmt.Errorf("ollama: opened %d of %d connections: %w", okN, n, first)))
	}
	return nil
}
