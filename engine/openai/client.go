package openai

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/rxstamp"
	"github.com/inferbench/inferbench/internal/httpsafe"
	"github.com/inferbench/inferbench/promptsize"
)

// DefaultMaxBurst is the number of idle keep-alive connections a Client
// keeps to its server unless Options.MaxBurst says otherwise: the largest
// burst it can serve from prewarmed connections.
const DefaultMaxBurst = 256

// DefaultMaxResponseBytes bounds a non-streaming response body (and an
// error body) unless Options.MaxResponseBytes says otherwise: 64 MiB.
const DefaultMaxResponseBytes = 64 << 20

// A Flavour names a server family, for the fields it takes beyond the
// OpenAI API. The zero value, FlavourGeneric, sends everything the request
// asks for and lets the server ignore what it does not know, which vLLM,
// SGLang, llama.cpp, mlx_lm.server and Ollama all do.
type Flavour string

// The server flavours.
const (
	// FlavourGeneric sends ignore_eos, min_tokens and
	// stream_options.continuous_usage_stats whenever the request asks.
	FlavourGeneric Flavour = ""
	// FlavourVLLM: vLLM reads ignore_eos, min_tokens and
	// continuous_usage_stats. The same as generic.
	FlavourVLLM Flavour = "vllm"
	// FlavourSGLang: SGLang reads ignore_eos, min_tokens and (since late
	// 2025) continuous_usage_stats. The same as generic.
	FlavourSGLang Flavour = "sglang"
	// FlavourLlamaCpp: llama-server reads ignore_eos and reports usage on
	// its last chunk only; continuous_usage_stats is not sent.
	FlavourLlamaCpp Flavour = "llamacpp"
	// FlavourOllama: Ollama's OpenAI endpoint has no ignore_eos and no
	// min_tokens; they are not sent, and a request that asks for them gets
	// a Warning wrapping ErrUnsupported. continuous_usage_stats is not
	// sent.
	FlavourOllama Flavour = "ollama"
	// FlavourOpenAI: a strict server (the OpenAI API itself) that rejects
	// unknown fields: ignore_eos, min_tokens, top_k and
	// continuous_usage_stats are not sent, with a Warning wrapping
	// ErrUnsupported for each one the request asked for.
	FlavourOpenAI Flavour = "openai"
)

// Options configure a Client. A nil *Options, or the zero value, talks
// plain HTTP without credentials, asks for continuous usage, keeps
// DefaultMaxBurst idle connections and logs nothing.
type Options struct {
	// APIKeyEnv names the environment variable that holds the bearer
	// token (e.g. "VLLM_API_KEY"). New fails if it is named but unset or
	// empty. The token is never logged and never appears in errors.
	APIKeyEnv string
	// APIKeyFile names a file whose content (surrounding white space
	// removed) is the bearer token, used when APIKeyEnv is empty.
	APIKeyFile string

	// Header holds headers sent with every request, after the client's
	// own (Content-Type, Accept, Authorization) so that they may replace
	// them.
	Header http.Header

	// TLSConfig configures HTTPS (for example RootCAs holding a private
	// CA). It is cloned. Nil means the system's roots, with verification.
	TLSConfig *tls.Config
	// InsecureSkipVerify turns certificate verification off. It is
	// explicit so that a test server's self-signed certificate is accepted
	// only when the caller says so.
	InsecureSkipVerify bool

	// Timeout bounds each HTTP exchange, from dialing to the end of the
	// body (http.Client.Timeout), and a control-plane call (Models) as a
	// whole, its retries and their waits included. Zero means no bound
	// beyond the context's, which suits long benchmark streams.
	Timeout time.Duration
	// MaxBurst is the number of idle keep-alive connections kept, and so
	// the largest n Prewarm accepts. Zero means DefaultMaxBurst.
	MaxBurst int
	// MaxResponseBytes bounds a non-streaming body or an error body. Zero
	// means DefaultMaxResponseBytes.
	MaxResponseBytes int64

	// Flavour adapts the request body to a server family.
	Flavour Flavour
	// NoContinuousUsage leaves stream_options.continuous_usage_stats out
	// of streaming requests, for servers that reject unknown fields.
	NoContinuousUsage bool
	// NoStreamUsage leaves stream_options out altogether, for servers that
	// reject it; chunk token counts then come from the counters below.
	NoStreamUsage bool
	// DoneOptional accepts a stream that ends without "data: [DONE]". By
	// default such a stream is an error of kind engine.KindTruncated:
	// vLLM, SGLang, llama.cpp, mlx_lm.server and Ollama all send [DONE].
	DoneOptional bool

	// CountText counts the tokens of generated text (no chat template, no
	// special tokens). It estimates per-chunk token counts when the server
	// sends no per-chunk usage. It must be safe for concurrent use.
	CountText func(ctx context.Context, text string) (int, error)
	// Counter is used like CountText when CountText is nil, counting text
	// s as Count([{assistant, s}]) − Count([{assistant, ""}]) so that the
	// chat template's fixed overhead cancels.
	Counter promptsize.Counter

	// Retries is how many times a control-plane call (Models) is retried
	// after a connection error or a 5xx. Zero means 3; negative means
	// none. Complete and Prewarm are never retried.
	Retries int
	// RetryWait is the first backoff between control-plane attempts,
	// doubling up to 16× itself. Zero means 100ms. A 429 or 503 with a
	// Retry-After header waits what it asks, at most
	// httpsafe.MaxRetryAfter (30 s); the call gives up at once when that
	// wait would outlast its context's deadline (or Timeout).
	RetryWait time.Duration

	// Logger receives debug records of requests (method, URL, status,
	// duration; never the token). Nil means silent.
	Logger *slog.Logger
	// Now is the clock of the trace. Nil means time.Now, whose readings
	// carry the monotonic clock, with each streamed chunk stamped with
	// its bytes' arrival where the platform reports it (see Trace in the
	// package doc); tests inject a controlled one, which stamps chunks
	// when their reads return.
	Now func() time.Time
}

// A Client talks to one OpenAI-compatible server. It is safe for
// concurrent use: a burst calls Complete from many goroutines at once.
//
// Benchmark requests (Complete, Prewarm) never follow a redirect: a 3xx
// is an error of kind engine.KindStatus that names the status and the
// Location, and nothing is sent there. Control-plane calls (Models) follow
// a redirect to the same origin (scheme, host and port) only, so the
// token never reaches another. The token, and the credentials among
// Options.Header, are redacted from every text the server sends back
// before it is kept in an error, in whatever escapes the server wrote
// them (see httpsafe.Redact).
type Client struct {
	base    string // scheme://host[:port][/prefix], without a trailing /v1
	key     string
	secrets []string // key and the credentials of header, for redaction
	header  http.Header
	http    *http.Client // benchmark path: no redirects
	ctl     *http.Client // control plane: same-origin redirects
	maxBody int64
	burst   int
	opts    Options // copy; Header, TLSConfig and Logger not used from here
	log     *slog.Logger
	now     func() time.Time
}

var (
	_ engine.Engine      = (*Client)(nil)
	_ engine.Prewarmer   = (*Client)(nil)
	_ engine.Preparer    = (*Client)(nil)
	_ engine.ModelLister = (*Client)(nil)
)

// New returns a client of the server at baseURL, which is the server's
// root ("http://127.0.0.1:8000") or its OpenAI prefix
// ("http://127.0.0.1:8000/v1"); requests go to baseURL's root + "/v1/…".
// opts may be nil.
func New(baseURL string, opts *Options) (*Client, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil {
		return nil, fmt.Errorf("openai: base URL %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("openai: base URL %q: want scheme http or https, found %q", baseURL, u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("openai: base URL %q: want a host, found none", baseURL)
	}
	if u.User != nil {
		return nil, fmt.Errorf("openai: base URL %s: want no user information in the URL (use Options.APIKeyEnv)", u.Redacted())
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1")
	u.RawPath = ""

	key, err := readKey(o.APIKeyEnv, o.APIKeyFile)
	if err != nil {
		return nil, err
	}
	switch o.Flavour {
	case FlavourGeneric, FlavourVLLM, FlavourSGLang, FlavourLlamaCpp, FlavourOllama, FlavourOpenAI:
	default:
		return nil, fmt.Errorf("openai: unknown Flavour %q, want one of vllm, sglang, llamacpp, ollama, openai or empty", o.Flavour)
	}
	if o.MaxBurst < 0 {
		return nil, fmt.Errorf("openai: MaxBurst=%d, want ≥ 0", o.MaxBurst)
	}
	burst := o.MaxBurst
	if burst == 0 {
		burst = DefaultMaxBurst
	}
	maxBody := o.MaxResponseBytes
	if maxBody <= 0 {
		maxBody = DefaultMaxResponseBytes
	}

	var tlsConf *tls.Config
	if o.TLSConfig != nil {
		tlsConf = o.TLSConfig.Clone()
	}
	if o.InsecureSkipVerify {
		if tlsConf == nil {
			tlsConf = &tls.Config{}
		}
		tlsConf.InsecureSkipVerify = true
	}
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		// Every read carries the kernel's receive instant where the
		// platform gives one (rxstamp), so chunk instants do not wait
		// for this process's scheduler.
		DialContext: rxstamp.Dialer((&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext),
		TLSClientConfig:     tlsConf,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConns:        burst,
		MaxIdleConnsPerHost: burst,
		IdleConnTimeout:     90 * time.Second,
		// One connection per request in flight, as a burst needs: no
		// HTTP/2 multiplexing (an empty TLSNextProto disables it).
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
		// A gzip-encoded event stream would be buffered by the decoder,
		// moving chunk arrival instants.
		DisableCompression: true,
	}

	h := http.Header{}
	for k, vs := range o.Header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	o.Header, o.TLSConfig, o.Logger = nil, nil, nil
	var secrets []string
	if key != "" {
		secrets = append(secrets, key)
	}
	secrets = append(secrets, httpsafe.HeaderSecrets(h)...)
	return &Client{
		base:    u.String(),
		key:     key,
		secrets: secrets,
		header:  h,
		http:    &http.Client{Transport: tr, Timeout: o.Timeout, CheckRedirect: httpsafe.NoRedirects(secrets...)},
		ctl:     &http.Client{Transport: tr, Timeout: o.Timeout, CheckRedirect: httpsafe.SameOrigin(secrets...)},
		maxBody: maxBody,
		burst:   burst,
		opts:    o,
		log:     log,
		now:     now,
	}, nil
}

// readKey reads the bearer token from the environment variable env, else
// from the file at path. Its errors name where it looked, never the value.
func readKey(env, path string) (string, error) {
	switch {
	case env != "":
		v, ok := os.LookupEnv(env)
		if !ok {
			return "", fmt.Errorf("openai: APIKeyEnv names %s, which is not set", env)
		}
		v = strings.TrimSpace(v)
		if v == "" {
			return "", fmt.Errorf("openai: APIKeyEnv names %s, which is empty", env)
		}
		return v, nil
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the path is in our message; the cause alone suffices
			}
			return "", fmt.Errorf("openai: APIKeyFile %s: %w", path, err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return "", fmt.Errorf("openai: APIKeyFile %s is empty, want a token", path)
		}
		return v, nil
	}
	return "", nil
}

// BaseURL returns the server root requests are made under (without /v1).
func (c *Client) BaseURL() string { return c.base }

// CloseIdleConnections closes the client's idle keep-alive connections.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// newRequest builds a request to path with the client's headers, then
// extra's (which may replace them).
func (c *Client) newRequest(ctx context.Context, method, path string, body []byte, accept string, extra http.Header) (*http.Request, error) {
	var req *http.Request
	var err error
	if body != nil {
		req, err = http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	} else {
		req, err = http.NewRequestWithContext(ctx, method, c.base+path, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("openai: %s %s: %w", method, c.base+path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	for k, vs := range c.header {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	for k, vs := range extra {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	return req, nil
}

// redactedText is what replaces a credential in error text.
const redactedText = httpsafe.Redacted

// redactBytes returns b with every credential the client sends replaced
// by httpsafe.Redacted, as sent or escaped.
func (c *Client) redactBytes(b []byte) []byte {
	return httpsafe.RedactBytes(b, c.secrets...)
}

// statusError is the *engine.StatusError of an answer with status code and
// body b, redacted before its message is decoded and again after, so that
// a credential escaped in the JSON (\/, \uXXXX) is not decoded back into
// plain text.
func (c *Client) statusError(code int, b []byte) *engine.StatusError {
	se := engine.NewStatusError(code, c.redactBytes(b))
	se.Message = httpsafe.Redact(se.Message, c.secrets...)
	se.Body = httpsafe.Redact(se.Body, c.secrets...)
	return se
}

// redact returns err with the credentials removed from its text, keeping
// its type where callers branch on it (*engine.Error, *engine.StatusError)
// and its chain for errors.Is and errors.As.
func (c *Client) redact(err error) error {
	if err == nil || !httpsafe.Contains(err.Error(), c.secrets...) {
		return err
	}
	var se *engine.StatusError
	if errors.As(err, &se) && err == error(se) {
		cp := *se
		cp.Message = httpsafe.Redact(cp.Message, c.secrets...)
		cp.Body = httpsafe.Redact(cp.Body, c.secrets...)
		return &cp
	}
	var ee *engine.Error
	if errors.As(err, &ee) && err == error(ee) {
		return &engine.Error{
			Kind: ee.Kind,
			Op:   httpsafe.Redact(ee.Op, c.secrets...),
			Err:  httpsafe.RedactError(ee.Err, c.secrets...),
		}
	}
	return httpsafe.RedactError(err, c.secrets...)
}
