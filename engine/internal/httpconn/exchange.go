package httpconn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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

// replayKey is the header whose presence, with no value, makes net/http
// treat a POST as replayable without sending anything on the wire (see
// http.Transport): a request whose reused connection turns out to have
// been closed by the server before any byte of the answer is then written
// again on another connection instead of failing.
const replayKey = "X-Idempotency-Key"

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

// Do sends the benchmark request hreq (built without a context: it is
// given ctx) on client and returns the response with the Exchange.
//
// A request is written again only where it cannot have been processed as
// far as the client can tell, as net/http does for GET: when it went out
// on a reused connection that failed before any byte of the response
// (the server had closed it while idle, as llama.cpp's server does after
// every streamed response although it answers "Keep-Alive", or reset it),
// it goes out again on another connection, until one is fresh: a failure
// on a connection opened for the request is final. Exchange.Start is the
// attempt that carried it and Exchange.Resent counts the others. Any other
// failure is returned as it is. So that net/http replays a POST, hreq gets
// an X-Idempotency-Key entry with no value, which is not sent.
//
// engine.NotifySend is called once, with Exchange.Start: at once when the
// connection is fresh (no attempt follows a fresh connection), else when
// Do returns, when it is known that no other attempt follows.
func Do(ctx context.Context, client *http.Client, now func() time.Time, hreq *http.Request) (*http.Response, Exchange, error) {
	if hreq.Header == nil {
		hreq.Header = http.Header{}
	}
	if _, ok := hreq.Header[replayKey]; !ok {
		if _, ok := hreq.Header["Idempotency-Key"]; !ok {
			hreq.Header[replayKey] = nil
		}
	}
	var (
		mu       sync.Mutex
		getConn  time.Time // the current attempt's
		attempts int
		ex       Exchange
		notified bool
	)
	notify := func(t time.Time) {
		if !notified {
			notified = true
			engine.NotifySend(ctx, t)
		}
	}
	// GetConn and GotConn run on this goroutine, inside Do, once per
	// attempt.
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
	}
	resp, err := client.Do(hreq.WithContext(httptrace.WithClientTrace(ctx, trace)))
	mu.Lock()
	ex.Resent = max(0, attempts-1)
	out := ex
	mu.Unlock()
	if !out.Start.IsZero() {
		notify(out.Start)
	}
	return resp, out, err
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
