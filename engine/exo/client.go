package exo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/httpconn"
	"github.com/inferbench/inferbench/internal/httpsafe"
)

// Defaults of Options fields left zero.
const (
	// DefaultPort is exo's API port.
	DefaultPort = 52415
	// DefaultTimeout bounds one control-plane attempt.
	DefaultTimeout = 30 * time.Second
	// DefaultRetryMax is how many times a control-plane call is retried
	// after its first attempt.
	DefaultRetryMax = 4
	// DefaultRetryWaitMin and DefaultRetryWaitMax bound the backoff between
	// control-plane attempts: min × 2^attempt, capped at max.
	DefaultRetryWaitMin = 100 * time.Millisecond
	DefaultRetryWaitMax = 2 * time.Second
	// DefaultMaxBurst is how many idle connections the benchmark transport
	// keeps to the cluster: the largest burst Prewarm can prepare.
	DefaultMaxBurst = 64
	// DefaultPollInterval is the period of readiness and removal polls
	// (exo's wait_for_instance_ready polls every 0.1 s).
	DefaultPollInterval = 100 * time.Millisecond
	// DefaultSettleBackoff is the first pause of the placement settle loop;
	// it doubles after every fetch up to MaxSettleBackoff (exo's
	// _SETTLE_INITIAL_BACKOFF_S, _SETTLE_BACKOFF_MULTIPLIER and
	// _SETTLE_MAX_BACKOFF_S).
	DefaultSettleBackoff = time.Second
	MaxSettleBackoff     = 60 * time.Second
	// maxBodyBytes bounds a control-plane response read into memory.
	maxBodyBytes = 64 << 20
)

// Options configure a Client. A nil *Options, and every zero field, means
// the default.
type Options struct {
	// Timeout bounds each control-plane attempt. Zero means DefaultTimeout.
	Timeout time.Duration
	// RequestTimeout bounds a whole benchmark request, body included. Zero
	// means no bound beyond the context's (exo's own client waits up to
	// 7200 s).
	RequestTimeout time.Duration
	// Logger receives debug records of control-plane retries. Nil means
	// no logging.
	Logger *slog.Logger
	// RetryMax is how many times a control-plane call is retried after its
	// first attempt. Zero means DefaultRetryMax; a negative value means
	// never retry.
	RetryMax int
	// RetryWaitMin and RetryWaitMax bound the exponential backoff between
	// control-plane attempts. Zero means DefaultRetryWaitMin and
	// DefaultRetryWaitMax.
	RetryWaitMin, RetryWaitMax time.Duration
	// MaxBurst is how many idle connections the benchmark transport keeps
	// (its MaxIdleConnsPerHost): set it to at least the largest
	// concurrency of a run. Zero means DefaultMaxBurst.
	MaxBurst int
	// PollInterval is the period of WaitReady and WaitGone polls. Zero
	// means DefaultPollInterval.
	PollInterval time.Duration
	// SettleBackoff is the first pause of the placement settle loop. Zero
	// means DefaultSettleBackoff.
	SettleBackoff time.Duration
	// Now is the clock that stamps traces. Nil means time.Now, whose
	// readings carry the monotonic clock, with each streamed chunk
	// stamped with its bytes' arrival where the platform reports it (see
	// the package doc); a clock of the caller's stamps chunks when their
	// reads return.
	Now func() time.Time
	// NoThinkTags reads a <think> … </think> block at the start of a
	// stream's content as answer text. By default, on a stream that
	// carried no delta.reasoning_content (the bench path, which runs no
	// output parser), the block's chunks are timing.Reasoning (see
	// Thinking and tool calls in the package doc).
	NoThinkTags bool
}

// A Client talks to one exo cluster through its API node. It is safe for
// concurrent use.
//
// Benchmark requests (Complete, Prewarm) never follow a redirect: a 3xx
// is an error of kind engine.KindStatus naming the status and the
// Location, and nothing is sent there. Control-plane calls follow a
// redirect within the API node's origin (scheme, host and port) only.
// A control-plane retry after a 429 or 503 waits its Retry-After, at most
// httpsafe.MaxRetryAfter (30 s), and the call gives up at once when that
// wait would outlast its context's deadline.
type Client struct {
	base    *url.URL
	bench   *http.Client
	control *retryablehttp.Client
	log     *slog.Logger
	now     func() time.Time
	// arrivals: the clock is the real one, so a stream's reads are
	// stamped with the kernel's receive instants (rxstamp).
	arrivals bool

	maxBurst      int
	poll          time.Duration
	settleBackoff time.Duration
	noThinkTags   bool
}

var (
	_ engine.Engine      = (*Client)(nil)
	_ engine.Prewarmer   = (*Client)(nil)
	_ engine.Preparer    = (*Client)(nil)
	_ engine.ModelLister = (*Client)(nil)
)

// New returns a Client of the exo API at baseURL ("http://host:52415"; a
// URL without a port gets DefaultPort). opts may be nil.
func New(baseURL string, opts *Options) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("exo: base URL %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("exo: base URL %q: expected http://host[:port], found scheme %q and host %q", baseURL, u.Scheme, u.Host)
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), fmt.Sprint(DefaultPort))
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	switch {
	case o.RetryMax == 0:
		o.RetryMax = DefaultRetryMax
	case o.RetryMax < 0:
		o.RetryMax = 0
	}
	if o.RetryWaitMin <= 0 {
		o.RetryWaitMin = DefaultRetryWaitMin
	}
	if o.RetryWaitMax <= 0 {
		o.RetryWaitMax = DefaultRetryWaitMax
	}
	if o.RetryWaitMax < o.RetryWaitMin {
		o.RetryWaitMax = o.RetryWaitMin
	}
	if o.MaxBurst <= 0 {
		o.MaxBurst = DefaultMaxBurst
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.SettleBackoff <= 0 {
		o.SettleBackoff = DefaultSettleBackoff
	}
	arrivals := o.Now == nil
	if arrivals {
		o.Now = time.Now
	}

	benchTransport := newTransport(o.MaxBurst)
	controlTransport := newTransport(4)
	c := &Client{
		base: u,
		bench: &http.Client{
			Transport:     benchTransport,
			Timeout:       o.RequestTimeout,
			CheckRedirect: httpsafe.NoRedirects(),
		},
		control: &retryablehttp.Client{
			HTTPClient:     &http.Client{Transport: controlTransport, Timeout: o.Timeout, CheckRedirect: httpsafe.SameOrigin()},
			RetryWaitMin:   o.RetryWaitMin,
			RetryWaitMax:   o.RetryWaitMax,
			RetryMax:       o.RetryMax,
			CheckRetry:     retryPolicy,
			Backoff:        httpsafe.Backoff(httpsafe.MaxRetryAfter),
			ErrorHandler:   retryablehttp.PassthroughErrorHandler,
			RequestLogHook: countAttempt,
		},
		log:           o.Logger,
		now:           o.Now,
		arrivals:      arrivals,
		maxBurst:      o.MaxBurst,
		poll:          o.PollInterval,
		settleBackoff: o.SettleBackoff,
		noThinkTags:   o.NoThinkTags,
	}
	if o.Logger != nil {
		// Typed nil would make retryablehttp log through a nil pointer,
		// so the field is set only with a real logger.
		c.control.Logger = debugLogger{o.Logger}
	}
	return c, nil
}

// newTransport returns a Transport for plain HTTP to one host that keeps
// up to idle idle connections. Compression is off: a gzip layer would
// buffer a stream and blur chunk arrival times.
func newTransport(idle int) *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		// Reads carry the kernel's receive instants where the platform
		// gives them, so chunk instants do not wait for the scheduler.
		DialContext:           httpconn.Dialer(),
		MaxIdleConns:          0,
		MaxIdleConnsPerHost:   idle,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
}

// BaseURL returns the API's base URL.
func (c *Client) BaseURL() string { return c.base.String() }

// MaxBurst returns the number of idle connections the benchmark transport
// keeps, the largest n Prewarm accepts.
func (c *Client) MaxBurst() int { return c.maxBurst }

// CloseIdleConnections closes the idle connections of both transports.
func (c *Client) CloseIdleConnections() {
	c.bench.CloseIdleConnections()
	c.control.HTTPClient.CloseIdleConnections()
}

// url returns the absolute URL of path (escaped, starting with "/"), with
// the query q when it is not empty.
func (c *Client) url(path string, q url.Values) string {
	s := c.base.String() + path
	if len(q) > 0 {
		s += "?" + q.Encode()
	}
	return s
}

// debugLogger adapts a slog.Logger to retryablehttp.LeveledLogger. Every
// record goes out at debug level: a failed attempt that will be retried is
// no error of the caller's, and the final failure is returned to them.
type debugLogger struct{ l *slog.Logger }

func (d debugLogger) Error(msg string, kv ...any) { d.l.Debug("exo control plane: "+msg, kv...) }
func (d debugLogger) Info(msg string, kv ...any)  { d.l.Debug("exo control plane: "+msg, kv...) }
func (d debugLogger) Debug(msg string, kv ...any) { d.l.Debug("exo control plane: "+msg, kv...) }
func (d debugLogger) Warn(msg string, kv ...any)  { d.l.Debug("exo control plane: "+msg, kv...) }

var _ retryablehttp.LeveledLogger = debugLogger{}

// noRetryKey marks a context whose control-plane calls make one attempt.
type noRetryKey struct{}

// withNoRetry returns a copy of ctx whose control-plane calls are not
// retried.
func withNoRetry(ctx context.Context) context.Context {
	return context.WithValue(ctx, noRetryKey{}, true)
}

// errRetryAfterPastDeadline ends a control-plane call whose answer asks,
// with Retry-After, for a wait longer than the call has left.
var errRetryAfterPastDeadline = errors.New("its Retry-After, capped at " + httpsafe.MaxRetryAfter.String() + ", would outlast the call's deadline")

// retryPolicy retries connection errors and 5xx answers, never 4xx or a
// refused redirect, and stops when the request's context has ended, asks
// for one attempt, or has less time left than the answer's Retry-After
// asks for.
func retryPolicy(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if no, _ := ctx.Value(noRetryKey{}).(bool); no {
		return false, nil
	}
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) && strings.Contains(ue.Err.Error(), "unsupported protocol scheme") {
			return false, nil
		}
		var re *httpsafe.RedirectError
		if errors.As(err, &re) {
			return false, nil
		}
		return true, nil
	}
	if httpsafe.RetryAfterExceedsDeadline(ctx, resp, httpsafe.MaxRetryAfter) {
		return false, errRetryAfterPastDeadline
	}
	return resp.StatusCode >= 500, nil
}

// attemptsKey carries a per-call attempt counter in a request's context.
type attemptsKey struct{}

// countAttempt is retryablehttp's RequestLogHook, called before every
// attempt: it increments the counter the call put in the context.
func countAttempt(_ retryablehttp.Logger, req *http.Request, _ int) {
	if n, ok := req.Context().Value(attemptsKey{}).(*int); ok {
		*n++
	}
}

// call makes one control-plane call: method on path with the JSON
// encoding of body (nil for none), retried as retryPolicy says. It returns
// the answer's body when the status is below 400, and an *APIError
// otherwise.
func (c *Client) call(ctx context.Context, method, path string, q url.Values, body any) ([]byte, error) {
	target := c.url(path, q)
	op := method + " " + target
	var raw any
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("exo: %s: encoding the request body: %w", op, err)
		}
		raw = b
	}
	attempts := new(int)
	req, err := retryablehttp.NewRequestWithContext(context.WithValue(ctx, attemptsKey{}, attempts), method, target, raw)
	if err != nil {
		return nil, fmt.Errorf("exo: %s: %w", op, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.control.Do(req)
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
			if errors.Is(err, errRetryAfterPastDeadline) {
				data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
				err = fmt.Errorf("%w (Retry-After %.40q: %w)", engine.NewStatusError(code, data), resp.Header.Get("Retry-After"), err)
			}
			resp.Body.Close()
		}
		return nil, &APIError{Op: op, Attempts: max(*attempts, 1), StatusCode: code, Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes))
	if err != nil {
		return nil, &APIError{Op: op, Attempts: *attempts, StatusCode: resp.StatusCode,
			Err: fmt.Errorf("reading the response body: %w", err)}
	}
	if resp.StatusCode >= 300 {
		se := engine.NewStatusError(resp.StatusCode, data)
		var cause error = se
		if resp.StatusCode == http.StatusNotFound && strings.Contains(se.Message, "disaggregation is disabled") {
			cause = fmt.Errorf("%w: %w", ErrDisaggregationDisabled, se)
		}
		return nil, &APIError{Op: op, Attempts: *attempts, StatusCode: resp.StatusCode, Err: cause}
	}
	return data, nil
}

// getJSON GETs path and decodes the answer into v.
func (c *Client) getJSON(ctx context.Context, path string, q url.Values, v any) error {
	data, err := c.call(ctx, http.MethodGet, path, q, nil)
	if err != nil {
		return err
	}
	return decode(path, data, v)
}

// decode unmarshals data into v, naming what was being decoded on error.
func decode(what string, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("exo: decoding %s: expected %s, found %s: %w", what, typeName(v), excerpt(data), err)
	}
	return nil
}

func typeName(v any) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", v), "*")
}

// excerpt returns the start of data for an error message.
func excerpt(data []byte) string {
	const n = 120
	data = bytes.TrimSpace(data)
	if len(data) <= n {
		return fmt.Sprintf("%q", data)
	}
	return fmt.Sprintf("%q…", data[:n])
}

// statePath escapes the segments of a /state path.
func statePath(segments ...string) string {
	var b strings.Builder
	b.WriteString("/state")
	for _, s := range segments {
		b.WriteString("/")
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// A Receipt is exo's answer to a command: its message ("Command
// received.") and the command's id.
type Receipt struct {
	Message   string `json:"message"`
	CommandID string `json:"command_id"`
}

// receipt decodes a command answer, accepting command_id and commandId.
func receipt(what string, data []byte) (Receipt, error) {
	var w struct {
		Message    string `json:"message"`
		CommandID  string `json:"command_id"`
		CommandID2 string `json:"commandId"`
	}
	if err := decode(what, data, &w); err != nil {
		return Receipt{}, err
	}
	r := Receipt{Message: w.Message, CommandID: w.CommandID}
	if r.CommandID == "" {
		r.CommandID = w.CommandID2
	}
	return r, nil
}

// NodeID returns the id of the API node (GET /node_id, a bare JSON string).
func (c *Client) NodeID(ctx context.Context) (string, error) {
	var id string
	if err := c.getJSON(ctx, "/node_id", nil, &id); err != nil {
		return "", err
	}
	return id, nil
}

// Cancel cancels the running command id (a bench response's id) with POST
// /v1/cancel/{id}. A command that is not active gives an error matching
// ErrNotFound.
func (c *Client) Cancel(ctx context.Context, commandID string) error {
	_, err := c.call(ctx, http.MethodPost, "/v1/cancel/"+url.PathEscape(commandID), nil, nil)
	return err
}

// Disaggregation reports whether the API node has prefill/decode
// disaggregation enabled (GET /v1/feature-flags).
func (c *Client) Disaggregation(ctx context.Context) (bool, error) {
	var f struct {
		Disaggregation bool `json:"disaggregation"`
	}
	if err := c.getJSON(ctx, "/v1/feature-flags", nil, &f); err != nil {
		return false, err
	}
	return f.Disaggregation, nil
}
