package ollama

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
)

// DefaultMaxBurst is the number of idle keep-alive connections a Client
// keeps to its server unless Options.MaxBurst says otherwise: the largest
// burst it can serve from prewarmed connections.
const DefaultMaxBurst = 256

// DefaultMaxResponseBytes bounds a non-streaming response body (and an
// error body) unless Options.MaxResponseBytes says otherwise: 64 MiB.
const DefaultMaxResponseBytes = 64 << 20

// DefaultMaxLineBytes bounds one line of a streamed answer unless
// Options.MaxLineBytes says otherwise: 512 KiB, the buffer Ollama's own
// client gives its line scanner (maxBufferSize in api/client.go), so a
// line this client refuses is one Ollama's client refuses too.
const DefaultMaxLineBytes = 512 << 10

// Options configure a Client. A nil *Options, or the zero value, talks
// plain HTTP without credentials, keeps DefaultMaxBurst idle connections
// and logs nothing.
type Options struct {
	// APIKeyEnv names the environment variable that holds a bearer token,
	// for an Ollama behind a proxy that asks for one (Ollama itself takes
	// none). New fails if it is named but unset or empty. The token is
	// never logged and never appears in errors.
	APIKeyEnv string
	// APIKeyFile names a file whose content (surrounding white space
	// removed) is the bearer token, used when APIKeyEnv is empty.
	APIKeyFile string

	// Header holds headers sent with every request, after the client's
	// own (Content-Type, Accept, Authorization) so that they may replace
	// them.
	Header http.Header

	// TLSConfig configures HTTPS. It is cloned. Nil means the system's
	// roots, with verification.
	TLSConfig *tls.Config
	// InsecureSkipVerify turns certificate verification off.
	InsecureSkipVerify bool

	// Timeout bounds each HTTP exchange, from dialing to the end of the
	// body, and a control-plane call (Models) as a whole, its retries
	// included. Zero means no bound beyond the context's.
	Timeout time.Duration
	// MaxBurst is the number of idle keep-alive connections kept, and so
	// the largest n Prewarm accepts. Zero means DefaultMaxBurst.
	MaxBurst int
	// MaxResponseBytes bounds a non-streaming body or an error body. Zero
	// means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// MaxLineBytes bounds one line of a stream. Zero means
	// DefaultMaxLineBytes.
	MaxLineBytes int

	// Retries is how many times a control-plane call (Models) is retried
	// after a connection error or a 5xx. Zero means 3; negative means
	// none. Complete and Prewarm are never retried.
	Retries int
	// RetryWait is the first backoff between control-plane attempts,
	// doubling up to 16× itself. Zero means 100ms.
	RetryWait time.Duration

	// Logger receives debug records of requests (never the token). Nil
	// means silent.
	Logger *slog.Logger
	// Now is the clock of the trace. Nil means time.Now, with each
	// streamed line stamped with its bytes' arrival where the platform
	// reports it; tests inject a controlled one, which stamps lines when
	// their reads return.
	Now func() time.Time
}

// A Client talks to one Ollama server through its native API. It is safe
// for concurrent use.
//
// Benchmark requests (Complete, Prewarm) never follow a redirect;
// control-plane calls (Models) follow one to the same origin only. The
// token, and the credentials among Options.Header, are redacted from every
// text the server sends back before it is kept in an error.
type Client struct {
	base    string // scheme://host[:port][/prefix], without a trailing /api
	key     string
	secrets []string
	header  http.Header
	http    *http.Client // benchmark path: no redirects
	ctl     *http.Client // control plane: same-origin redirects
	maxBody int64
	maxLine int
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

// New returns a client of the Ollama server at baseURL, its root
// ("http://127.0.0.1:11434") or its API prefix ("http://127.0.0.1:11434/api");
// requests go to the root + "/api/…". opts may be nil.
func New(baseURL string, opts *Options) (*Client, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil {
		return nil, fmt.Errorf("ollama: base URL %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("ollama: base URL %q: want scheme http or https, found %q", baseURL, u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("ollama: base URL %q: want a host, found none", baseURL)
	}
	if u.User != nil {
		return nil, fmt.Errorf("ollama: base URL %s: want no user information in the URL (use Options.APIKeyEnv)", u.Redacted())
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/api")
	u.RawPath = ""

	key, err := readKey(o.APIKeyEnv, o.APIKeyFile)
	if err != nil {
		return nil, err
	}
	if o.MaxBurst < 0 || o.MaxLineBytes < 0 {
		return nil, fmt.Errorf("ollama: MaxBurst=%d and MaxLineBytes=%d, want both ≥ 0", o.MaxBurst, o.MaxLineBytes)
	}
	burst := o.MaxBurst
	if burst == 0 {
		burst = DefaultMaxBurst
	}
	maxBody := o.MaxResponseBytes
	if maxBody <= 0 {
		maxBody = DefaultMaxResponseBytes
	}
	maxLine := o.MaxLineBytes
	if maxLine == 0 {
		maxLine = DefaultMaxLineBytes
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
		// platform gives one, so line instants do not wait for this
		// process's scheduler.
		DialContext: rxstamp.Dialer((&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext),
		TLSClientConfig:     tlsConf,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConns:        burst,
		MaxIdleConnsPerHost: burst,
		IdleConnTimeout:     90 * time.Second,
		// One connection per request in flight: no HTTP/2 multiplexing.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
		// A compressed stream would be buffered by the decoder, moving
		// line arrival instants.
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
		maxLine: maxLine,
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
			return "", fmt.Errorf("ollama: APIKeyEnv names %s, which is not set", env)
		}
		v = strings.TrimSpace(v)
		if v == "" {
			return "", fmt.Errorf("ollama: APIKeyEnv names %s, which is empty", env)
		}
		return v, nil
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return "", fmt.Errorf("ollama: APIKeyFile %s: %w", path, err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return "", fmt.Errorf("ollama: APIKeyFile %s is empty, want a token", path)
		}
		return v, nil
	}
	return "", nil
}

// BaseURL returns the server root requests are made under (without /api).
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
		return nil, fmt.Errorf("ollama: %s %s: %w", method, c.base+path, err)
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
	for _, h := range []http.Header{c.header, extra} {
		for k, vs := range h {
			req.Header.Del(k)
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
	}
	return req, nil
}

// redactBytes returns b with every credential the client sends replaced.
func (c *Client) redactBytes(b []byte) []byte {
	return httpsafe.RedactBytes(b, c.secrets...)
}

// redactString is redactBytes of a string.
func (c *Client) redactString(s string) string {
	return httpsafe.Redact(s, c.secrets...)
}

// statusError is the *engine.StatusError of an answer with status code and
// body b, redacted before its message is decoded and again after.
func (c *Client) statusError(code int, b []byte) *engine.StatusError {
	se := engine.NewStatusError(code, c.redactBytes(b))
	se.Message = httpsafe.Redact(se.Message, c.secrets...)
	se.Body = httpsafe.Redact(se.Body, c.secrets...)
	return se
}

// redact returns err with the credentials removed from its text, keeping
// its type (*engine.Error, *engine.StatusError) and its chain.
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

// excerpt returns the start of b for an error message.
func excerpt(b []byte) string {
	const max = 200
	if len(b) <= max {
		return string(b)
	}
	return string(b[:max]) + "…"
}
