package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"unicode/utf8"
)

// A Kind says what went wrong with a request, as a short string that is
// stable across releases and fit for a result row's error column.
type Kind string

// The kinds of failure Complete reports. KindOf maps any error to one of
// them.
const (
	// KindNone is the kind of a nil error.
	KindNone Kind = ""
	// KindStatus: the server answered with an HTTP status of 400 or more
	// (the error is a *StatusError).
	KindStatus Kind = "status"
	// KindConnect: no connection could be opened (refused, unreachable,
	// name not resolved).
	KindConnect Kind = "connect"
	// KindReset: the connection was reset or closed before the response
	// headers arrived.
	KindReset Kind = "reset"
	// KindTimeout: a deadline passed (the context's, or a transport
	// timeout) before the response was complete.
	KindTimeout Kind = "timeout"
	// KindCanceled: the caller cancelled the context.
	KindCanceled Kind = "canceled"
	// KindTruncated: the response stopped early: the connection broke or
	// the stream ended without its closing "data: [DONE]".
	KindTruncated Kind = "truncated"
	// KindMalformed: the response could not be parsed: a chunk that is not
	// valid JSON, a line over the length bound, a wrong content type.
	KindMalformed Kind = "malformed"
	// KindStreamError: the server reported an error inside the stream
	// ("event: error", or a data chunk holding an error object) after
	// answering 200.
	KindStreamError Kind = "stream_error"
	// KindImplausibleUsage: the server reported a token count that cannot
	// be true (negative, falling during a stream, or beyond what was asked
	// by more than the stated margin). The result's figures are not
	// trusted; the error names both numbers. See CheckCount.
	KindImplausibleUsage Kind = "implausible_usage"
	// KindOther: any other error.
	KindOther Kind = "error"
)

// An Error is a failed request, classified. It wraps its cause, so
// errors.Is and errors.As see through it (errors.Is(err,
// context.Canceled) holds for a cancelled request).
type Error struct {
	// Kind classifies the failure.
	Kind Kind
	// Op says what was being done, e.g. "POST http://127.0.0.1:52415/bench/chat/completions"
	// or "read SSE stream".
	Op string
	// Err is the cause.
	Err error
}

// Error formats e as "engine: <op>: <kind>: <cause>".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("engine: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	b.WriteString(string(e.Kind))
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// MaxBodyExcerpt is the most bytes of a response body a StatusError keeps.
const MaxBodyExcerpt = 512

// A StatusError is a response with an HTTP status of 400 or more.
type StatusError struct {
	// Code is the HTTP status code.
	Code int
	// Message is the error message the body carried in one of the shapes
	// servers use ({"error": {"message": ...}} from exo, vLLM and
	// llama.cpp; {"error": "..."}; {"message": ...}; FastAPI's
	// {"detail": ...}), or empty.
	Message string
	// Body is the start of the response body: at most its first
	// MaxBodyExcerpt bytes, cut back to a UTF-8 boundary and followed by
	// "…" when the body was longer.
	Body string
}

// NewStatusError returns the StatusError of a response with the given code
// and body (which it does not keep: it copies an excerpt).
func NewStatusError(code int, body []byte) *StatusError {
	e := &StatusError{Code: code, Body: excerpt(body, MaxBodyExcerpt)}
	if ee, ok := parseErrorObject(body); ok {
		e.Message = ee.Message
	}
	return e
}

// Error formats e with the status expected and found, and the server's
// message or the body excerpt.
func (e *StatusError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = e.Body
	}
	if msg == "" {
		return fmt.Sprintf("engine: HTTP status %d, want 2xx (empty body)", e.Code)
	}
	return fmt.Sprintf("engine: HTTP status %d, want 2xx: %s", e.Code, msg)
}

// A StreamError is an error the server reported inside a stream that had
// already answered 200: exo's data: {"error": {"message", "type", "code"}},
// vLLM's {"object": "error", "message", ...}, or the data of an
// "event: error".
type StreamError struct {
	// Message is the server's message, or the raw data when it is not a
	// known error object.
	Message string
	// Type is the server's error type (exo: an HTTP reason phrase such as
	// "InternalServerError").
	Type string
	// Code is the server's error code, 0 if none.
	Code int
}

// Error formats e.
func (e *StreamError) Error() string {
	s := "server reported an error in the stream"
	if e.Code != 0 {
		s += fmt.Sprintf(" (code %d)", e.Code)
	}
	if e.Type != "" {
		s += " " + e.Type
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Sentinel errors wrapped by this package's errors, for errors.Is. Their
// text has no package prefix because they are always wrapped in one.
var (
	// ErrLineTooLong: an SSE line (or an event's joined data) exceeded the
	// reader's bound. Its kind is KindMalformed.
	ErrLineTooLong = errors.New("SSE line too long")
	// ErrNoDone: the stream ended without "data: [DONE]". Its kind is
	// KindTruncated.
	ErrNoDone = errors.New("stream ended without data: [DONE]")
	// ErrNoStats: generation_stats was null or absent.
	ErrNoStats = errors.New("no generation_stats")
)

// KindOf classifies err for a result row: KindNone for nil; the Kind of
// the outermost *Error in its chain; KindStatus for a *StatusError;
// KindCanceled for context.Canceled; KindTimeout for
// context.DeadlineExceeded, os.ErrDeadlineExceeded or a net.Error whose
// Timeout is true; KindConnect for a failed dial; KindOther otherwise.
func KindOf(err error) Kind {
	if err == nil {
		return KindNone
	}
	var e *Error
	if errors.As(err, &e) && e.Kind != KindNone {
		return e.Kind
	}
	var se *StatusError
	if errors.As(err, &se) {
		return KindStatus
	}
	return classify(err, KindOther)
}

// classify returns the kind that err's cause implies, or fallback.
func classify(err error, fallback Kind) Kind {
	switch {
	case errors.Is(err, context.Canceled):
		return KindCanceled
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return KindTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return KindTimeout
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return KindConnect
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) || errors.Is(err, syscall.ECONNREFUSED) {
		return KindConnect
	}
	return fallback
}

// Wrap classifies err from a request made under ctx and returns it as an
// *Error with op, for adapters. The kind is, in order: the context's (a
// cancelled ctx gives KindCanceled and an expired one KindTimeout, whatever
// the transport said, and the result then also wraps ctx.Err()); the kind
// the error itself implies (a timeout, a failed dial); else fallback, which
// the adapter picks by where the failure happened (KindReset before the
// response headers, KindTruncated while reading the body). An err that
// already holds an *Error or a *StatusError is returned as it is. Wrap(ctx,
// k, op, nil) is nil.
func Wrap(ctx context.Context, fallback Kind, op string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	var se *StatusError
	if errors.As(err, &e) || errors.As(err, &se) {
		return err
	}
	if cerr := ctx.Err(); cerr != nil {
		k := KindCanceled
		if errors.Is(cerr, context.DeadlineExceeded) {
			k = KindTimeout
		}
		if !errors.Is(err, cerr) {
			err = fmt.Errorf("%w (%w)", cerr, err)
		}
		return &Error{Kind: k, Op: op, Err: err}
	}
	return &Error{Kind: classify(err, fallback), Op: op, Err: err}
}

// readErrorKind is the kind of an error returned by a stream's Read.
func readErrorKind(err error) Kind {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return KindTruncated
	}
	return classify(err, KindTruncated)
}

// errorEnvelope holds the error shapes servers send.
type errorEnvelope struct {
	Error   json.RawMessage `json:"error"`
	Object  string          `json:"object"`
	Message json.RawMessage `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Detail  json.RawMessage `json:"detail"`
}

type errorObject struct {
	Message json.RawMessage `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// parseErrorObject extracts an error from a JSON body in one of the shapes
// servers use. ok is false when body holds none.
func parseErrorObject(body []byte) (ee StreamError, ok bool) {
	var env errorEnvelope
	if json.Unmarshal(body, &env) != nil {
		return StreamError{}, false
	}
	switch {
	case len(env.Error) > 0 && string(env.Error) != "null":
		var s string
		if json.Unmarshal(env.Error, &s) == nil {
			return StreamError{Message: s}, true
		}
		var o errorObject
		if json.Unmarshal(env.Error, &o) != nil {
			return StreamError{}, false
		}
		return StreamError{Message: rawText(o.Message), Type: o.Type, Code: rawCode(o.Code)}, true
	case env.Object == "error":
		return StreamError{Message: rawText(env.Message), Type: env.Type, Code: rawCode(env.Code)}, true
	case len(env.Detail) > 0 && string(env.Detail) != "null":
		return StreamError{Message: rawText(env.Detail)}, true
	case len(env.Message) > 0 && string(env.Message) != "null":
		return StreamError{Message: rawText(env.Message), Type: env.Type, Code: rawCode(env.Code)}, true
	}
	return StreamError{}, false
}

// rawText returns a JSON string's value, or the raw JSON of anything else.
func rawText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// rawCode returns a JSON number's integer value (or a numeric string's),
// else 0.
func rawCode(raw json.RawMessage) int {
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return n
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if _, err := fmt.Sscanf(s, "%d", &n); err == nil {
			return n
		}
	}
	return 0
}

// excerpt returns at most max bytes of b as a string, cut back to a UTF-8
// boundary, with "…" appended when it was cut.
func excerpt(b []byte, max int) string {
	if len(b) <= max {
		return string(b)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]) + "…"
}
