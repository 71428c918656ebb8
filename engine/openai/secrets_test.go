package openai

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/internal/hostile"
	"github.com/inferbench/inferbench/internal/httpsafe"
)

// secretKey has a "/" and non-ASCII characters, so each escape of the
// echoes below changes how it is written.
const secretKey = "sk-live/9f2c+Zé😀x"

var escapes = map[string]func(string) string{
	"slashes":   hostile.EscapeSlashes,
	"non-ASCII": hostile.EscapeNonASCII,
	"all":       hostile.EscapeAll,
}

// noKey fails t when text holds the key, as it is or escaped.
func noKey(t *testing.T, what, text string) {
	t.Helper()
	if hostile.Leaks(text, secretKey) || httpsafe.Contains(text, secretKey) {
		t.Errorf("%s holds the key: %q", what, text)
	}
}

// TestEscapedEchoRedacted: a server echoes the Authorization header
// JSON-escaped in a 401 body, in a stream's error event and in the model
// list's error. No error text and no field a caller can reach holds the
// key, decoded or not.
func TestEscapedEchoRedacted(t *testing.T) {
	t.Setenv("TEST_OPENAI_ESCAPED_KEY", secretKey)
	for name, esc := range escapes {
		t.Run(name, func(t *testing.T) {
			srv := hostile.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.Contains(string(r.Header.Get("Accept")), "event-stream") {
					hostile.EchoAuthStream(esc)(w, r)
					return
				}
				hostile.EchoAuth(http.StatusUnauthorized, esc)(w, r)
			}))
			c := newClient(t, srv.URL, &Options{APIKeyEnv: "TEST_OPENAI_ESCAPED_KEY"})

			_, err := c.Complete(context.Background(), engine.Request{Model: "m", MaxTokens: 4})
			var se *engine.StatusError
			if engine.KindOf(err) != engine.KindStatus || !errors.As(err, &se) || se.Code != 401 {
				t.Fatalf("unstreamed: %v, want a 401 status error", err)
			}
			noKey(t, "the error", err.Error())
			noKey(t, "StatusError.Message", se.Message)
			noKey(t, "StatusError.Body", se.Body)
			if !strings.Contains(se.Message, httpsafe.Redacted) {
				t.Errorf("Message %q: want the echo redacted", se.Message)
			}

			_, err = c.Complete(context.Background(), engine.Request{Model: "m", MaxTokens: 4, Stream: true})
			var ste *engine.StreamError
			if engine.KindOf(err) != engine.KindStreamError || !errors.As(err, &ste) {
				t.Fatalf("streamed: %v, want a stream error", err)
			}
			noKey(t, "the stream error", err.Error())
			noKey(t, "StreamError.Message", ste.Message)

			_, err = c.Models(context.Background())
			if !errors.As(err, &se) || se.Code != 401 {
				t.Fatalf("Models: %v, want a 401", err)
			}
			noKey(t, "the Models error", err.Error())
			noKey(t, "its StatusError", se.Message+se.Body)
			for _, r := range srv.Requests() {
				if r.Header.Get("Authorization") != "Bearer "+secretKey {
					t.Errorf("%s %s went without the token", r.Method, r.Path)
				}
			}
		})
	}
}

// TestHeaderCredentialsRedacted: a credential set in Options.Header (an
// X-Api-Key gateway) is redacted as the API key is.
func TestHeaderCredentialsRedacted(t *testing.T) {
	srv := hostile.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"error":"key ` + hostile.EscapeAll(r.Header.Get("X-Api-Key")) + ` refused"}`))
	}))
	c := newClient(t, srv.URL, &Options{Header: http.Header{"X-Api-Key": {secretKey}}})
	_, err := c.Complete(context.Background(), engine.Request{Model: "m", MaxTokens: 4})
	var se *engine.StatusError
	if !errors.As(err, &se) || se.Code != 403 {
		t.Fatalf("%v, want a 403", err)
	}
	noKey(t, "the error", err.Error()+se.Message+se.Body)
}

// TestBenchmarkRequestNeverRedirected: a 301, 302, 307 or 308 on the chat
// endpoint is an error of kind status that names the status and the
// target; no request reaches the target, so the token is not sent there,
// and a 301 does not turn the POST into a GET.
func TestBenchmarkRequestNeverRedirected(t *testing.T) {
	t.Setenv("TEST_OPENAI_REDIRECT_KEY", secretKey)
	other := hostile.New(t, hostile.SSE(false, `{"choices":[{"index":0,"delta":{"content":"x"}}]}`))
	for _, code := range []int{301, 302, 307, 308} {
		for _, stream := range []bool{false, true} {
			src := hostile.New(t, hostile.Redirect(code, other.URL+"/v1/chat/completions?token="+hostile.EscapeSlashes(secretKey)))
			c := newClient(t, src.URL, &Options{APIKeyEnv: "TEST_OPENAI_REDIRECT_KEY"})
			_, err := c.Complete(context.Background(), engine.Request{Model: "m", MaxTokens: 4, Stream: stream})
			var se *engine.StatusError
			if engine.KindOf(err) != engine.KindStatus || !errors.As(err, &se) || se.Code != code {
				t.Fatalf("%d stream=%v: %v (kind %s), want a status error %d", code, stream, err, engine.KindOf(err), code)
			}
			if msg := err.Error(); !strings.Contains(msg, "redirect") || !strings.Contains(msg, other.URL+"/v1/chat/completions") {
				t.Errorf("%d: %q, want the redirect and its target named", code, msg)
			}
			noKey(t, "the error", err.Error()+se.Message)
			if rs := src.Requests(); len(rs) != 1 || rs[0].Method != http.MethodPost {
				t.Errorf("%d: the source saw %d requests, want 1 POST", code, len(rs))
			}
		}
	}
	if n := other.Count(); n != 0 {
		t.Errorf("%d requests reached the redirect's target", n)
	}
}

// TestModelsRedirects: the model list follows a redirect within the
// server's origin, with the token, and refuses one to another origin.
func TestModelsRedirects(t *testing.T) {
	t.Setenv("TEST_OPENAI_REDIRECT_KEY", secretKey)
	other := hostile.New(t, hostile.JSON(200, `{"data":[{"id":"stolen"}]}`))
	src := hostile.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			hostile.Redirect(http.StatusFound, "/api/v1/models")(w, r)
		case "/api/v1/models":
			hostile.JSON(200, `{"data":[{"id":"here"}]}`)(w, r)
		case "/away/v1/models":
			hostile.Redirect(http.StatusTemporaryRedirect, other.URL+"/v1/models")(w, r)
		}
	}))
	c := newClient(t, src.URL, &Options{APIKeyEnv: "TEST_OPENAI_REDIRECT_KEY"})
	ms, err := c.Models(context.Background())
	if err != nil || len(ms) != 1 || ms[0].ID != "here" {
		t.Fatalf("same origin: %v, %v; want the redirect followed", ms, err)
	}
	if rs := src.Requests(); len(rs) != 2 || rs[1].Header.Get("Authorization") != "Bearer "+secretKey {
		t.Errorf("same-origin requests %+v: want the token on both", rs)
	}
	c = newClient(t, src.URL+"/away", &Options{APIKeyEnv: "TEST_OPENAI_REDIRECT_KEY", Retries: 3})
	_, err = c.Models(context.Background())
	var se *engine.StatusError
	if engine.KindOf(err) != engine.KindStatus || !errors.As(err, &se) || se.Code != 307 || !strings.Contains(err.Error(), other.URL) {
		t.Fatalf("cross origin: %v, want a 307 status error naming the target", err)
	}
	if n := other.Count(); n != 0 {
		t.Errorf("%d requests reached another origin", n)
	}
	if n := src.Count(); n != 3 {
		t.Errorf("the source saw %d requests, want 3 (a refused redirect is not retried)", n)
	}
}

// TestModelsRetryAfterBounded: a 503 asking for Retry-After: 100000 ends
// the model list at once when even the capped wait (30 s) would outlast
// the call's deadline, from Options.Timeout or from the context; a short
// Retry-After is waited and retried.
func TestModelsRetryAfterBounded(t *testing.T) {
	srv := hostile.New(t, hostile.RetryAfter(http.StatusServiceUnavailable, "100000"))
	deadline := httpsafe.MaxRetryAfter / 3
	for name, c := range map[string]*Client{
		"Options.Timeout": newClient(t, srv.URL, &Options{Timeout: deadline}),
		"context":         newClient(t, srv.URL, nil),
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		if name == "context" {
			cancel()
			ctx, cancel = context.WithTimeout(context.Background(), deadline)
		}
		before := srv.Count()
		_, err := c.Models(ctx)
		cancel()
		var se *engine.StatusError
		if !errors.As(err, &se) || se.Code != 503 || !strings.Contains(err.Error(), "Retry-After") {
			t.Errorf("%s: %v, want the 503 with its Retry-After named", name, err)
		}
		if n := srv.Count() - before; n != 1 {
			t.Errorf("%s: %d attempts, want 1", name, n)
		}
	}

	short := hostile.New(t, hostile.RetryAfter(http.StatusServiceUnavailable, "0"))
	c := newClient(t, short.URL, &Options{Retries: 2, Timeout: time.Minute})
	if _, err := c.Models(context.Background()); err == nil || !strings.Contains(err.Error(), "3 attempt") {
		t.Errorf("Retry-After 0: %v, want 3 attempts", err)
	}
}
