package openai

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/httpconn"
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
	// NoThinkTags reads a <think> … </think> block at the start of the
	// content (or content up to a </think> the prompt opened) as answer
	// text. By default, on a stream whose server sent no reasoning field
	// (its reasoning parser off), such a block is the model's reasoning:
	// its chunks are timing.Reasoning (see the package doc).
	NoThinkTags bool

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
	conn    *httpconn.Conn // root (without /v1), credentials, clients, logger, clock
	maxBody int64
	burst   int
	opts    Options // copy; Header, TLSConfig and Logger not used from here
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
	base, err := httpconn.ParseBase("openai", baseURL, "/v1")
	if err != nil {
		return nil, err
	}

	key, err := httpconn.ReadKey("openai", o.APIKeyEnv, o.APIKeyFile)
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

	conn := httpconn.New(httpconn.Config{
		Pkg:                "openai",
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
		NoteRetryAfter:     true,
		ErrResent:          ErrResent,
		Logger:             o.Logger,
		Now:                o.Now,
	})
	o.Header, o.TLSConfig, o.Logger = nil, nil, nil
	return &Client{conn: conn, maxBody: maxBody, burst: burst, opts: o}, nil
}

// BaseURL returns the server root requests are made under (without /v1).
func (c *Client) BaseURL() string { return c.conn.Base }

// CloseIdleConnections closes the client's idle keep-alive connections.
func (c *Client) CloseIdleConnections() { c.conn.CloseIdleConnections() }
