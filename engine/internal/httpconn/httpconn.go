// Package httpconn is the HTTP plumbing the engine adapters that talk to
// one server over HTTP (package openai, package ollama) share: the base URL
// and the bearer token from their Options, the transport and the two
// clients built on it, request building, redaction of the credentials, the
// traced send of a benchmark request, the retried control-plane GET and
// the prewarming of connections.
//
// Every message it writes starts with the adapter's name (Config.Pkg, as
// in "openai: …"), so that an adapter's errors read as they would had it
// written them itself.
package httpconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/inferbench/inferbench/engine/internal/rxstamp"
	"github.com/inferbench/inferbench/internal/httpsafe"
)

// ParseBase checks the server URL raw (http or https, a host, no user
// information) and returns its root: without query, fragment, trailing
// slashes or the API prefix suffix ("/v1", "/api"), which requests add to
// their paths. Its errors start with pkg.
func ParseBase(pkg, raw, suffix string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("%s: base URL %q: %w", pkg, raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%s: base URL %q: want scheme http or https, found %q", pkg, raw, u.Scheme)
	}
	if u.Host == "" {
		return "", fmt.Errorf("%s: base URL %q: want a host, found none", pkg, raw)
	}
	if u.User != nil {
		return "", fmt.Errorf("%s: base URL %s: want no user information in the URL (use Options.APIKeyEnv)", pkg, u.Redacted())
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), suffix)
	u.RawPath = ""
	return u.String(), nil
}

// ReadKey reads the bearer token from the environment variable env, else
// from the file at path; with neither named there is none (""). White
// space around the token is removed, and an empty one is an error. Its
// errors start with pkg and name where it looked, never the value.
func ReadKey(pkg, env, path string) (string, error) {
	switch {
	case env != "":
		v, ok := os.LookupEnv(env)
		if !ok {
			return "", fmt.Errorf("%s: APIKeyEnv names %s, which is not set", pkg, env)
		}
		v = strings.TrimSpace(v)
		if v == "" {
			return "", fmt.Errorf("%s: APIKeyEnv names %s, which is empty", pkg, env)
		}
		return v, nil
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the path is in our message; the cause alone suffices
			}
			return "", fmt.Errorf("%s: APIKeyFile %s: %w", pkg, path, err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return "", fmt.Errorf("%s: APIKeyFile %s is empty, want a token", pkg, path)
		}
		return v, nil
	}
	return "", nil
}

// Config is what a Conn is built from: the adapter's Options, checked and
// with their defaults applied by the adapter.
type Config struct {
	// Pkg names the adapter ("openai"): the prefix of every message.
	Pkg string
	// Base is the server root, as ParseBase returns it.
	Base string
	// Key is the bearer token ("" for none), as ReadKey returns it.
	Key string
	// Header holds headers sent with every request after the client's
	// own. It is copied.
	Header http.Header
	// TLSConfig configures HTTPS; it is cloned. InsecureSkipVerify turns
	// certificate verification off.
	TLSConfig          *tls.Config
	InsecureSkipVerify bool
	// Timeout bounds each HTTP exchange, and a control-plane call as a
	// whole (Get). Zero means no bound beyond the context's.
	Timeout time.Duration
	// MaxBurst is the number of idle keep-alive connections kept, > 0.
	MaxBurst int
	// MaxBody bounds a control-plane answer's body, > 0.
	MaxBody int64
	// Retries is how many times Get retries: zero means 3, negative none.
	// RetryWait is its first backoff, doubling up to 16× itself: zero
	// means 100ms.
	Retries   int
	RetryWait time.Duration
	// NoteRetryAfter makes Get's error, when an answer's Retry-After
	// would outlast the call's deadline, say so and quote the header.
	NoteRetryAfter bool
	// ErrResent is the adapter's sentinel that the warning of a request
	// written again on a new connection (Send) wraps.
	ErrResent error
	// Logger receives debug records. Nil means silent.
	Logger *slog.Logger
	// Now is the clock of the trace. Nil means time.Now, with reads
	// stamped with their bytes' arrival where the platform reports it.
	Now func() time.Time
}

// A Conn is an adapter's connection to its server: the root, the
// credentials and the clients that carry its requests. It is safe for
// concurrent use.
//
// Benchmark requests (Bench, Send, Prewarm) never follow a redirect;
// control-plane calls (Get) follow one to the same origin only.
type Conn struct {
	Base  string           // scheme://host[:port][/prefix], without the API prefix
	Bench *http.Client     // benchmark path: no redirects
	Log   *slog.Logger     // never nil
	Now   func() time.Time // the trace's clock, never nil

	pkg     string       // the adapter's name, the prefix of messages
	key     string       // the bearer token, "" for none
	secrets []string     // key and the credentials of header, for redaction
	header  http.Header  // sent with every request (a copy of Config.Header)
	control *http.Client // control plane: same-origin redirects
	// arrivals: the clock is the real one, so reads are stamped with
	// their kernel receive instants.
	arrivals       bool
	timeout        time.Duration
	maxBody        int64
	retries        int
	retryWait      time.Duration
	noteRetryAfter bool
	errResent      error
	// closeStreams: the server closes the connection after a stream
	// (see Send).
	closeStreams atomic.Bool
}

// New returns the Conn of cfg.
func New(cfg Config) *Conn {
	h := http.Header{}
	for k, vs := range cfg.Header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	var secrets []string
	if cfg.Key != "" {
		secrets = append(secrets, cfg.Key)
	}
	secrets = append(secrets, httpsafe.HeaderSecrets(h)...)
	tr := transport(cfg.TLSConfig, cfg.InsecureSkipVerify, cfg.MaxBurst)
	return &Conn{
		pkg:            cfg.Pkg,
		Base:           cfg.Base,
		key:            cfg.Key,
		secrets:        secrets,
		header:         h,
		Bench:          &http.Client{Transport: tr, Timeout: cfg.Timeout, CheckRedirect: httpsafe.NoRedirects(secrets...)},
		control:        &http.Client{Transport: tr, Timeout: cfg.Timeout, CheckRedirect: httpsafe.SameOrigin(secrets...)},
		Log:            log,
		Now:            now,
		arrivals:       cfg.Now == nil,
		timeout:        cfg.Timeout,
		maxBody:        cfg.MaxBody,
		retries:        cfg.Retries,
		retryWait:      cfg.RetryWait,
		noteRetryAfter: cfg.NoteRetryAfter,
		errResent:      cfg.ErrResent,
	}
}

// transport returns the transport of a benchmark client keeping burst idle
// connections: reads stamped with their arrival (rxstamp), one connection
// per request in flight, no compression. tlsConf is cloned; insecure
// turns certificate verification off.
func transport(tlsConf *tls.Config, insecure bool, burst int) *http.Transport {
	if tlsConf != nil {
		tlsConf = tlsConf.Clone()
	}
	if insecure {
		if tlsConf == nil {
			tlsConf = &tls.Config{}
		}
		tlsConf.InsecureSkipVerify = true
	}
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         Dialer(),
		TLSClientConfig:     tlsConf,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConns:        burst,
		MaxIdleConnsPerHost: burst,
		IdleConnTimeout:     90 * time.Second,
		// One connection per request in flight, as a burst needs: no
		// HTTP/2 multiplexing (an empty TLSNextProto disables it).
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
		// A compressed stream would be buffered by the decoder, moving
		// chunk arrival instants.
		DisableCompression: true,
	}
}

// Dialer returns the dial function of a benchmark transport: 30 s to
// connect, TCP keep-alive every 30 s, and every read of the connection
// carrying the kernel's receive instant where the platform gives one
// (rxstamp), so that chunk instants do not wait for this process's
// scheduler.
func Dialer() rxstamp.DialFunc {
	return rxstamp.Dialer((&net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
	}).DialContext)
}

// CloseIdleConnections closes the idle keep-alive connections.
func (c *Conn) CloseIdleConnections() { c.Bench.CloseIdleConnections() }
