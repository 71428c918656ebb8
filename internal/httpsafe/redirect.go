package httpsafe

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/inferbench/inferbench/engine"
)

// MaxRedirects is how many same-origin redirects SameOrigin follows in one
// call, as net/http does by default.
const MaxRedirects = 10

// A RedirectError is a redirect a client refused to follow. It is what
// http.Client.Do wraps (in a *url.Error) when NoRedirects or SameOrigin
// stops a redirect, so no request reached Location. It wraps an
// *engine.StatusError of the redirect's status, so that engine.KindOf
// gives engine.KindStatus and engine.Wrap keeps it as it is.
type RedirectError struct {
	// Code is the redirect's HTTP status (301, 302, 303, 307, 308).
	Code int
	// Location is where the redirect pointed, resolved against the
	// request's URL, with secrets redacted.
	Location string
	// Reason says why it was not followed.
	Reason string
}

// Error formats e as "HTTP <code> redirect to <location> not followed:
// <reason>".
func (e *RedirectError) Error() string {
	return fmt.Sprintf("HTTP %d redirect to %s not followed: %s", e.Code, e.Location, e.Reason)
}

// Unwrap returns an *engine.StatusError of the redirect's status.
func (e *RedirectError) Unwrap() error {
	return &engine.StatusError{Code: e.Code, Message: e.Error()}
}

// The reasons of a RedirectError.
const (
	ReasonBenchmark   = "a benchmark request never follows a redirect"
	ReasonCrossOrigin = "a redirect to another origin (scheme, host or port) is never followed, so that no credential leaves"
	ReasonTooMany     = "too many redirects"
)

// NoRedirects returns an http.Client.CheckRedirect that refuses every
// redirect with a *RedirectError, its Location redacted of secrets: the
// benchmark path's policy. A redirect would move the request (a 301 or
// 302 even turns a POST into a GET) and send its credentials elsewhere.
// The *url.Error that http.Client.Do wraps around it names the target URL
// as it is: pass the whole error through RedactError.
func NoRedirects(secrets ...string) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		return newRedirectError(req, ReasonBenchmark, secrets)
	}
}

// SameOrigin returns an http.Client.CheckRedirect that follows a redirect
// only to the origin (scheme, host and port) of the first request, at
// most MaxRedirects times, and refuses any other with a *RedirectError:
// the control plane's policy. Headers, credentials included, then never
// reach another origin.
func SameOrigin(secrets ...string) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) == 0 {
			return nil
		}
		if !sameOrigin(req.URL, via[0].URL) {
			return newRedirectError(req, ReasonCrossOrigin, secrets)
		}
		if len(via) >= MaxRedirects {
			return newRedirectError(req, ReasonTooMany, secrets)
		}
		return nil
	}
}

func newRedirectError(req *http.Request, reason string, secrets []string) *RedirectError {
	code := 0
	if req.Response != nil {
		code = req.Response.StatusCode
	}
	return &RedirectError{Code: code, Location: Redact(req.URL.Redacted(), secrets...), Reason: reason}
}

// sameOrigin reports whether a and b have the same scheme, host and port,
// a missing port being the scheme's default.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) &&
		strings.EqualFold(a.Hostname(), b.Hostname()) &&
		port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}
