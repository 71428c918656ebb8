package httpconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/rxstamp"
)

// Send writes the benchmark request hreq (built without a context: it is
// given ctx) on the Bench client, once, and records in res what the
// exchange told before the body: Trace.Start, the instant the transport
// handed over the connection the request was written on (which
// engine.NotifySend receives); Connect, that connection's dial when it
// was opened for this request; a warning wrapping Config.ErrResent when
// the transport found a pooled connection closed and wrote the request
// again on a new one (Start stays the first attempt's); then Trace.End
// when the request failed, else Trace.Headers, the headers' arrival.
//
// On success it returns the response, whose body the caller closes, and
// the clock that stamps the body's reads (see ReadClock). On failure its
// error is the redacted *engine.Error of op: of kind KindConnect when the
// TLS handshake failed, else KindReset, or ctx's kind.
func (c *Conn) Send(ctx context.Context, op string, hreq *http.Request, res *engine.Result) (*http.Response, func() time.Time, error) {
	// The send instant: httptrace reports the connection obtained just
	// before the request is written, after any dial. GotConn fires again
	// only when the transport resends on a new connection (a pooled one
	// was found closed before anything was written); the first instant
	// stays, and NotifySend is called once. A first connection that had
	// never carried a request was opened for this one: GetConn to GotConn
	// is then its dial (Result.Connect).
	var (
		mu      sync.Mutex
		getConn time.Time
		start   time.Time
		conns   int
		connect *time.Duration
		conn    net.Conn // the connection the request went out on
	)
	trace := &httptrace.ClientTrace{
		GetConn: func(string) {
			t := c.Now()
			mu.Lock()
			if getConn.IsZero() {
				getConn = t
			}
			mu.Unlock()
		},
		GotConn: func(info httptrace.GotConnInfo) {
			t := c.Now()
			mu.Lock()
			conns++
			conn = info.Conn
			first := conns == 1
			if first {
				start = t
				if !info.Reused && !info.WasIdle && !getConn.IsZero() {
					d := t.Sub(getConn)
					connect = &d
				}
			}
			mu.Unlock()
			if first {
				engine.NotifySend(ctx, t)
			}
		},
	}
	resp, err := c.Bench.Do(hreq.WithContext(httptrace.WithClientTrace(ctx, trace)))
	mu.Lock()
	res.Trace.Start = start
	res.Connect = connect
	sent := conn
	resent := conns > 1
	mu.Unlock()
	if resent {
		res.Warnings = append(res.Warnings, fmt.Errorf("%w: the transport found a pooled connection closed and wrote the request on a new one; Start is the first attempt", c.errResent))
	}
	if err != nil {
		res.Trace.End = c.Now()
		err = c.Redact(engine.Wrap(ctx, DialKind(err), op, err))
		c.Log.LogAttrs(ctx, slog.LevelDebug, c.pkg+": request failed", slog.String("op", op), slog.String("error", err.Error()))
		return nil, nil, err
	}
	// The response's reads are stamped with their arrival where the
	// platform tells it; the headers' instant is their read's.
	read := c.ReadClock(sent, res.Trace.Start)
	res.Trace.Headers = read()
	return resp, read, nil
}

// Finish ends the exchange of a benchmark request whose answer Send
// returned and the caller has read into res, with err (nil when the
// answer was whole). After a whole answer it reads what may follow it (at
// most 4 KiB, normally nothing) so that the connection goes back to the
// pool when the caller closes the body. It gives err the kind
// KindTruncated unless it has one (or ctx's), redacts it, logs a debug
// record named what ("openai: completion") and returns err.
func (c *Conn) Finish(ctx context.Context, what, op string, resp *http.Response, stream bool, res *engine.Result, err error) error {
	if err == nil {
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	}
	if err != nil {
		err = c.Redact(engine.Wrap(ctx, engine.KindTruncated, op, err))
	}
	c.Log.LogAttrs(ctx, slog.LevelDebug, c.pkg+": "+what,
		slog.String("op", op), slog.Int("status", resp.StatusCode), slog.Bool("stream", stream),
		slog.Int("chunks", len(res.Trace.Chunks)), slog.Duration("elapsed", res.Trace.End.Sub(res.Trace.Start)),
		slog.Int("warnings", len(res.Warnings)), slog.Any("kind", engine.KindOf(err)))
	return err
}

// DialKind is the kind of a failure before the response: KindConnect when
// the TLS handshake failed (no connection could be opened), else
// KindReset.
func DialKind(err error) engine.Kind {
	var cv *tls.CertificateVerificationError
	var rh tls.RecordHeaderError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	if errors.As(err, &cv) || errors.As(err, &rh) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) {
		return engine.KindConnect
	}
	return engine.KindReset
}

// ReadClock returns the clock that stamps the reads of a response on
// conn, never before start: the kernel's receive instants (rxstamp) when
// the Conn keeps the real clock, else Now.
func (c *Conn) ReadClock(conn net.Conn, start time.Time) func() time.Time {
	return ReadClock(c.arrivals, c.Now, conn, start)
}

// ReadClock returns the clock that stamps the reads of a response on
// conn, never before start: the kernel's receive instants (rxstamp) when
// arrivals is set (the client keeps the real clock), else now.
func ReadClock(arrivals bool, now func() time.Time, conn net.Conn, start time.Time) func() time.Time {
	if !arrivals {
		return now
	}
	return rxstamp.Clock(rxstamp.Of(conn), start)
}
