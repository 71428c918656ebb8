package httpconn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"

	"github.com/inferbench/inferbench/engine"
)

// RequestIDHeader is the header that carries a benchmark request's id to
// the server: vLLM takes it as the request's id (its response id is then
// "chatcmpl-" + the id, and it echoes the header when started with
// --enable-request-id-headers); SGLang and llama.cpp ignore it.
const RequestIDHeader = "X-Request-Id"

// NewRequestID returns a new request id: "ib-" and 24 hexadecimal digits
// drawn from crypto/rand, unique in practice across runs and clients.
func NewRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand's contract)
	return "ib-" + hex.EncodeToString(b[:])
}

// SetRequestID gives h a new request id in RequestIDHeader unless it
// already has one (a caller's own, kept as it is), and returns the id.
func SetRequestID(h http.Header) string {
	if id := h.Get(RequestIDHeader); id != "" {
		return id
	}
	id := NewRequestID()
	h.Set(RequestIDHeader, id)
	return id
}

// An Exchange is what the transport told about how a benchmark request
// went out: the connection that carried it, when, and how many times it
// had to be written again.
type Exchange struct {
	// Start is the instant the transport handed over the connection that
	// carried the request, just before it was written and after any dial:
	// the last attempt's. Zero when no connection was obtained.
	Start time.Time
	// Connect is that connection's dial (GetConn to GotConn) when it was
	// opened for this request; nil on a connection already open.
	Connect *time.Duration
	// Conn is that connection; nil when none was obtained.
	Conn net.Conn
	// Resent counts the attempts before it: the request was written on a
	// reused connection that the server had closed, or closed without
	// answering a byte, and net/http wrote it again on another.
	Resent int
}

// maxAttempts bounds the attempts of one request (see Do): each failed
// one takes a connection out of the pool, so the pool's size bounds them
// first.
const maxAttempts = 64

// Do sends the benchmark request hreq (built without a context: it is
// given ctx) on client and returns the response with the Exchange.
//
// A request is written again only where it failed before any byte of a
// response on a reused keep-alive connection: the server had closed that
// connection (llama.cpp's server closes its connection after every
// streamed answer while its headers say "Keep-Alive", and the pool hands
// the dead connection to the next request, which then reads an end of
// file, or a reset where the close found the request's bytes unread). It
// goes out again on another connection, until one carries it or a
// connection opened for it fails; a failure on a connection opened for
// the request, any failure after the first byte of a response, a timeout
// and a cancellation are returned as they are. (net/http itself writes a
// request again, on another connection, when it found a pooled one dead
// before writing anything.) Exchange.Start is the attempt that carried
// the request and Exchange.Resent counts the others. hreq's body must be
// rewindable (GetBody, as http.NewRequest sets for a bytes.Reader) to be
// written again.
//
// engine.NotifySend is called once, with Exchange.Start: at once when the
// connection is fresh (no attempt follows a fresh connection), else when
// Do returns, when it is known that no other attempt follows.
func Do(ctx context.Context, client *http.Client, now func() time.Time, hreq *http.Request) (*http.Response, Exchange, error) {
	var (
		mu       sync.Mutex
		getConn  time.Time // the current attempt's
		attempts int       // connections handed over
		reused   bool      // the current attempt's connection had carried a request
		answered bool      // the current attempt read a byte of a response
		ex       Exchange
		notified bool
	)
	notify := func(t time.Time) {
		if !notified {
			notified = true
			engine.NotifySend(ctx, t)
		}
	}
	// GetConn and GotConn run on this goroutine, inside client.Do, once
	// per connection tried; GotFirstResponseByte on the connection's
	// reader.
	trace := &httptrace.ClientTrace{
		GetConn: func(string) {
			t := now()
			mu.Lock()
			getConn = t
			mu.Unlock()
		},
		GotConn: func(info httptrace.GotConnInfo) {
			t := now()
			mu.Lock()
			attempts++
			reused, answered = info.Reused, false
			ex.Start, ex.Conn, ex.Connect = t, info.Conn, nil
			if !info.Reused && !info.WasIdle && !getConn.IsZero() {
				d := t.Sub(getConn)
				ex.Connect = &d
			}
			mu.Unlock()
			if !info.Reused {
				notify(t)
			}
		},
		GotFirstResponseByte: func() {
			mu.Lock()
			answered = true
			mu.Unlock()
		},
	}
	tctx := httptrace.WithClientTrace(ctx, trace)
	req := hreq.WithContext(tctx)
	var (
		resp *http.Response
		err  error
	)
	for tries := 1; ; tries++ {
		// An attempt whose connection never came (a dial that failed) is
		// not a reused one: only GotConn says it was.
		mu.Lock()
		reused, answered = false, false
		mu.Unlock()
		resp, err = client.Do(req)
		mu.Lock()
		again := err != nil && reused && !answered && tries < maxAttempts && unanswered(err)
		mu.Unlock()
		if !again || ctx.Err() != nil || hreq.GetBody == nil && hreq.Body != nil && hreq.Body != http.NoBody {
			break
		}
		req = hreq.Clone(tctx)
		if hreq.GetBody != nil {
			body, berr := hreq.GetBody()
			if berr != nil {
				break
			}
			req.Body = body
		}
	}
	mu.Lock()
	ex.Resent = max(0, attempts-1)
	out := ex
	mu.Unlock()
	if !out.Start.IsZero() {
		notify(out.Start)
	}
	return resp, out, err
}

// unanswered reports whether err, the failure of a request on a reused
// connection before any byte of a response, is one the server cannot
// have answered: an end of file or a reset where a response should have
// begun (the server had closed the connection: with unread bytes in it,
// a close resets it), not a timeout.
func unanswered(err error) bool {
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout()) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
}

// closesAfterStream reports whether the server that sent resp closes the
// connection after a streamed response while its headers say keep-alive:
// llama.cpp's server (cpp-httplib) does, and says so in no header but
// Server.
func closesAfterStream(resp *http.Response) bool {
	return strings.HasPrefix(resp.Header.Get("Server"), "llama.cpp")
}

// closingBody is a response body whose connection is closed, not pooled,
// when the reader is done: the server closes it anyway, and a pooled
// connection the server has closed fails the next request that takes it.
type closingBody struct {
	io.ReadCloser
	conn net.Conn
}

// Close closes the connection first, so that the transport does not pool
// it, then the body.
func (b *closingBody) Close() error {
	if b.conn != nil {
		_ = b.conn.Close()
	}
	return b.ReadCloser.Close()
}

// NoReuseAfterStream makes resp's connection close when its body is
// closed, instead of going back to the pool, when resp is a stream from a
// server that closes the connection after one (see closesAfterStream);
// conn is the connection (Exchange.Conn). It returns whether it did.
func NoReuseAfterStream(resp *http.Response, conn net.Conn) bool {
	if conn == nil || !closesAfterStream(resp) || !isStream(resp) {
		return false
	}
	resp.Body = &closingBody{ReadCloser: resp.Body, conn: conn}
	return true
}

// isStream reports whether resp is a streamed answer: an event stream or
// newline-delimited JSON.
func isStream(resp *http.Response) bool {
	ct := strings.ToLower(resp.Header.Get("Content-Type"))
	return strings.HasPrefix(ct, "text/event-stream") || strings.HasPrefix(ct, "application/x-ndjson")
}

// Printable keeps at most n printable ASCII characters of an untrusted
// string (an id a server sent), dropping the others.
func Printable(s string, n int) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < n; i++ {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// asksStream reports whether hreq asks for a streamed answer (its Accept
// header).
func asksStream(hreq *http.Request) bool {
	a := strings.ToLower(hreq.Header.Get("Accept"))
	return strings.Contains(a, "text/event-stream") || strings.Contains(a, "application/x-ndjson")
}
