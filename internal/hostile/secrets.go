package hostile

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf16"
)

// Escapes of an echoed secret, as servers write it into JSON.
var (
	// EscapeSlashes writes "/" as "\/" (PHP's json_encode, some proxies),
	// and quotes and backslashes as JSON must.
	EscapeSlashes = func(s string) string {
		return strings.ReplaceAll(jsonString(s, false), "/", `\/`)
	}
	// EscapeNonASCII writes every non-ASCII character as \uXXXX (a UTF-16
	// surrogate pair above U+FFFF), as Python's json.dumps does.
	EscapeNonASCII = func(s string) string { return jsonString(s, false) }
	// EscapeAll writes every character as \uXXXX.
	EscapeAll = func(s string) string { return jsonString(s, true) }
)

// jsonString escapes s for the inside of a JSON string: quotes,
// backslashes and controls always, every non-ASCII character as \uXXXX,
// and every character when all.
func jsonString(s string, all bool) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case all || r >= 0x80 || r < 0x20:
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// EchoAuth returns a handler that answers status with a JSON error body
// whose message echoes the request's Authorization header, escaped with
// escape: a server that repeats a bad credential back, which the client
// must not keep or print.
func EchoAuth(status int, escape func(string) string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"invalid credentials: %s","type":"auth_error","code":%d}}`,
			escape(r.Header.Get("Authorization")), status)
	}
}

// EchoAuthStream returns a handler that answers 200 text/event-stream, sends
// one content chunk, then an error event whose message echoes the
// Authorization header escaped with escape, then [DONE].
func EchoAuthStream(escape func(string) string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		SSE(false,
			`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"a"}}]}`,
			`{"error":{"message":"session expired for `+escape(r.Header.Get("Authorization"))+`","type":"auth_error","code":401}}`,
		)(w, r)
	}
}

// Redirect returns a handler that answers every request with status and
// Location: location, and a short body.
func Redirect(status int, location string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", location)
		w.WriteHeader(status)
		io.WriteString(w, "moved\n")
	}
}

// RetryAfter returns a handler that answers every request with status and
// Retry-After: value, with a JSON error body.
func RetryAfter(status int, value string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", value)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, `{"error":{"message":"overloaded, come back later"}}`)
	}
}

// NoHeaders returns a handler that accepts the request and never answers:
// no status line, no header, until the client gives up (its context ends
// or it closes the connection) or the server closes.
func NoHeaders() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}
}

// Endless returns a handler that answers 200 text/event-stream and sends
// one comment line (": keep-alive") after another, without end, until the
// client goes away: a stream that never ends and never says anything a
// count could bound, so only a timeout can stop it. Each line is flushed;
// the writes block when the client stops reading.
func Endless() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f, _ := w.(http.Flusher)
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			if f != nil {
				f.Flush()
			}
		}
	}
}

// Leaks reports whether text holds secret in a form a reader could turn
// back into it: as it is, escaped by EscapeSlashes, EscapeNonASCII or
// EscapeAll (with lower- or upper-case hex), any of those escaped once
// more for a JSON string (a results file holding an echo), or percent
// encoded. It is a check of its own, independent of the redaction under
// test.
func Leaks(text, secret string) bool {
	forms := []string{secret, url.QueryEscape(secret), url.PathEscape(secret)}
	for _, esc := range []func(string) string{EscapeSlashes, EscapeNonASCII, EscapeAll} {
		e := esc(secret)
		for _, f := range []string{e, upperHex(e)} {
			forms = append(forms, f, strings.ReplaceAll(f, `\`, `\\`))
		}
	}
	for _, f := range forms {
		if strings.Contains(text, f) {
			return true
		}
	}
	return false
}

// upperHex returns e with the hex digits of its \uXXXX escapes in upper
// case.
func upperHex(e string) string {
	var b strings.Builder
	for i := 0; i < len(e); i++ {
		if e[i] == '\\' && i+6 <= len(e) && e[i+1] == 'u' {
			b.WriteString(`\u`)
			b.WriteString(strings.ToUpper(e[i+2 : i+6]))
			i += 5
			continue
		}
		b.WriteByte(e[i])
	}
	return b.String()
}
