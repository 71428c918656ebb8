package httpconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/internal/httpsafe"
)

// NewRequest builds a request to the root + path with body (nil for none,
// else sent as JSON), the Accept header accept (none when empty), the
// bearer token, then the Conn's headers and extra's, each of which
// replaces what it names.
func (c *Conn) NewRequest(ctx context.Context, method, path string, body []byte, accept string, extra http.Header) (*http.Request, error) {
	var req *http.Request
	var err error
	if body != nil {
		req, err = http.NewRequestWithContext(ctx, method, c.Base+path, bytes.NewReader(body))
	} else {
		req, err = http.NewRequestWithContext(ctx, method, c.Base+path, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s %s: %w", c.pkg, method, c.Base+path, err)
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

// RedactBytes returns b with every credential the Conn sends replaced by
// httpsafe.Redacted, as sent or escaped.
func (c *Conn) RedactBytes(b []byte) []byte {
	return httpsafe.RedactBytes(b, c.secrets...)
}

// RedactString is RedactBytes of a string.
func (c *Conn) RedactString(s string) string {
	return httpsafe.Redact(s, c.secrets...)
}

// StatusError is the *engine.StatusError of an answer with status code
// and body b, redacted before its message is decoded and again after, so
// that a credential escaped in the JSON (\/, \uXXXX) is not decoded back
// into plain text.
func (c *Conn) StatusError(code int, b []byte) *engine.StatusError {
	se := engine.NewStatusError(code, c.RedactBytes(b))
	se.Message = httpsafe.Redact(se.Message, c.secrets...)
	se.Body = httpsafe.Redact(se.Body, c.secrets...)
	return se
}

// Redact returns err with the credentials removed from its text, keeping
// its type where callers branch on it (*engine.Error, *engine.StatusError)
// and its chain for errors.Is and errors.As.
func (c *Conn) Redact(err error) error {
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

// Excerpt returns the start of b for an error message: its first 200
// bytes, then "…" when there was more.
func Excerpt(b []byte) string {
	const max = 200
	if len(b) <= max {
		return string(b)
	}
	return string(b[:max]) + "…"
}
