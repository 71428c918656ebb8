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
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/engine/internal/rxstamp"
)

// Send writes the benchmark request hreq (built without a context: it is
// given ctx) on the Bench client (see Do) and records in res what the
// exchange told before the body: Trace.Start, the instant the transport
// handed over the connection that carried the request (which
// engine.NotifySend receives); Connect, that connection's dial when it
// was opened for this request; RequestID, the X-Request-Id it carried;
// Resent, with a warning wrapping Config.ErrResent, when it was written
// again on another connection because a reused one had been closed by
// the server before any byte of the answer; then Trace.End when the
// request failed, else Trace.Headers, the headers' arrival, and
// ServerRequestID, the X-Request-Id the server answered with.
//
// A streamed answer from a server that closes the connection after a
// stream while its headers say keep-alive (llama.cpp's) gets its
// connection closed with the body, not pooled (see Finish), so that the
// next request does not take a connection the server has closed; once
// one has come, the Conn's streamed requests go out with Connection:
// close, which keeps the transport from pooling their connections at all
// (closing with the body leaves a moment in which another request may
// take the connection, and then has to write itself again).
//
// On success it returns the response, whose body the caller closes, and
// the clock that stamps the body's reads (see ReadClock). On failure its
// error is the redacted *engine.Error of op: of kind KindConnect when the
// TLS handshake failed, else KindReset, or ctx's kind.
func (c *Conn) Send(ctx context.Context, op string, hreq *http.Request, res *engine.Result) (*http.Response, func() time.Time, error) {
	res.RequestID = hreq.Header.Get(RequestIDHeader)
	if c.closeStreams.Load() && asksStream(hreq) {
		// The server closes a stream's connection: the transport is told
		// not to pool it (and the server, with Connection: close).
		hreq.Close = true
	}
	resp, ex, err := Do(ctx, c.Bench, c.Now, hreq)
	res.Trace.Start = ex.Start
	res.Connect = ex.Connect
	if ex.Resent > 0 {
		res.Resent = ex.Resent
		res.Warnings = append(res.Warnings, ResentWarning(c.errResent, ex.Resent))
	}
	if err != nil {
		res.Trace.End = c.Now()
		err = c.Redact(engine.Wrap(ctx, DialKind(err), op, err))
		c.Log.LogAttrs(ctx, slog.LevelDebug, c.pkg+": request failed", slog.String("op", op), slog.String("error", err.Error()))
		return nil, nil, err
	}
	// The response's reads are stamped with their arrival where the
	// platform tells it; the headers' instant is their read's.
	read := c.ReadClock(ex.Conn, res.Trace.Start)
	res.Trace.Headers = read()
	res.ServerRequestID = c.RedactString(Printable(resp.Header.Get(RequestIDHeader), maxIDLen))
	if NoReuseAfterStream(resp, ex.Conn) {
		c.closeStreams.Store(true)
	}
	return resp, read, nil
}

// maxIDLen bounds an id the server sends that a result keeps.
const maxIDLen = 200

// ResentWarning is the warning of a request written again resent times,
// wrapping the adapter's sentinel errResent.
func ResentWarning(errResent error, resent int) error {
	return fmt.Errorf("%w: the server had closed the reused connection it went out on before any byte of an answer (%d time(s)); it was written again on another, and Trace.Start is when that one was handed over", errResent, resent)
}

// Finish ends the exchange of a benchmark request whose answer Send
// returned and the caller has read into res, with err (nil when the
// answer was whole). After a whole answer it reads what may follow it (at
// most 4 KiB, normally nothing) so that the connection goes back to the
// pool when the caller closes the body, unless Send marked the
// connection to be closed with the body (a stream from a server that
// closes it). It gives err the kind
// KindTruncated unless it has one (or ctx's), redacts it, logs a debug
// record named what ("openai: completion") and returns err.
func (c *Conn) Finish(ctx context.Context, what, op string, resp *http.Response, stream bool, res *engine.Result, err error) error {
	if _, closing := resp.Body.(*closingBody); err == nil && !closing {
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
