package ollama

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/httpconn"
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
	conn    *httpconn.Conn // root (without /api), credentials, clients, logger, clock
	maxBody int64
	maxLine int
	burst   int
	opts    Options // copy; Header, TLSConfig and Logger not used from here
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
	base, err := httpconn.ParseBase("ollama", baseURL, "/api")
	if err != nil {
		return nil, err
	}

	key, err := httpconn.ReadKey("ollama", o.APIKeyEnv, o.APIKeyFile)
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

	conn := httpconn.New(httpconn.Config{
		Pkg:                "ollama",
		Base:               base,
		Key:                key,
		Header:             o.Header,
		TLSConfig:          o.TLSConfig,
		InsecureSkipVerify: o.InsecureSkipVerify,
		Timeout:            o.Timeout,
		MaxBurst:           burst,
		MaxBody:            maxBody,
		Retries:            o.Retries,
		RetryWait:          o.RetryWait,
		ErrResent:          ErrResent,
		Logger:             o.Logger,
		Now:                o.Now,
	})
	o.Header, o.TLSConfig, o.Logger = nil, nil, nil
	return &Client{conn: conn, maxBody: maxBody, maxLine: maxLine, burst: burst, opts: o}, nil
}

// BaseURL returns the server root requests are made under (without /api).
func (c *Client) BaseURL() string { return c.conn.Base }

// CloseIdleConnections closes the client's idle keep-alive connections.
func (c *Client) CloseIdleConnections() { c.conn.CloseIdleConnections() }
