package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferbench/inferbench/benchkit"
	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/internal/hostile"
	"github.com/inferbench/inferbench/internal/httpsafe"
	"github.com/inferbench/inferbench/promptsize/hf/hftest"
)

// escapedKey has a "/" and non-ASCII characters, so that every escape a
// server may write changes how it looks.
const escapedKey = "sk-serve/9f2c+Zé😀x"

// leaks reports whether text holds the key, as it is or escaped.
func leaks(text string) bool {
	return hostile.Leaks(text, escapedKey) || httpsafe.Contains(text, escapedKey)
}

// outcome is what a run left: its error and every text it wrote.
type outcome struct {
	err   error
	texts map[string]string
	doc   benchkit.LoadDocument
}

// runAgainst runs serve-load against srv with a local tokenizer and the
// results files in a temp dir.
func runAgainst(t *testing.T, srv *hostile.Server, args ...string) outcome {
	t.Helper()
	dir := t.TempDir()
	jsonl, out := filepath.Join(dir, "rows.jsonl"), filepath.Join(dir, "out.json")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"--base-url", srv.URL, "--tokenizer", hftest.WriteTokenizer(t),
		"--pp", "40", "--tg", "4", "--num-requests", "2", "--format", "json", "--jsonl", jsonl, "--json-out", out}, args...), &stdout, &stderr)
	o := outcome{err: err, texts: map[string]string{"stdout": stdout.String(), "stderr": stderr.String()}}
	if err != nil {
		o.texts["error"] = err.Error()
	}
	for _, p := range []string{jsonl, out} {
		if b, rerr := os.ReadFile(p); rerr == nil {
			o.texts[filepath.Base(p)] = string(b)
		}
	}
	if _, ok := o.texts["out.json"]; ok {
		o.doc = readDoc(t, out)
	}
	return o
}

// TestEscapedKeyNeverLeaks: a server echoes the Authorization header,
// escaped with \/ or \uXXXX, in a 401 body and in a stream's error event.
// The key, as it is or escaped, is in no error, output, JSONL row or
// results file, and every row names the redacted echo.
func TestEscapedKeyNeverLeaks(t *testing.T) {
	t.Setenv("INFERBENCH_TEST_ESCAPED_KEY", escapedKey)
	for name, esc := range map[string]func(string) string{
		"slashes": hostile.EscapeSlashes, "non-ASCII": hostile.EscapeNonASCII, "all": hostile.EscapeAll,
	} {
		for _, stream := range []bool{false, true} {
			srv := hostile.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.Contains(r.Header.Get("Accept"), "event-stream") {
					hostile.EchoAuthStream(esc)(w, r)
					return
				}
				hostile.EchoAuth(http.StatusUnauthorized, esc)(w, r)
			}))
			o := runAgainst(t, srv, "--model", "m", "--api-key-env", "INFERBENCH_TEST_ESCAPED_KEY", "--stream="+map[bool]string{true: "true", false: "false"}[stream])
			if code := cli.ExitCode(o.err); code != cli.ExitFailed {
				t.Fatalf("%s stream=%v: exit %d (%v), want %d", name, stream, code, o.err, cli.ExitFailed)
			}
			for what, text := range o.texts {
				if leaks(text) {
					t.Errorf("%s stream=%v: %s holds the key:\n%s", name, stream, what, text)
				}
			}
			if len(o.doc.Requests) != 2 {
				t.Fatalf("%s stream=%v: %d rows, want 2", name, stream, len(o.doc.Requests))
			}
			for _, r := range o.doc.Requests {
				if k := engine.Kind(r.ErrorKind); k != engine.KindStatus && k != engine.KindStreamError || !strings.Contains(r.Error, httpsafe.Redacted) {
					t.Errorf("%s stream=%v: row %d kind %q, error %q; want the echo redacted", name, stream, r.Index, r.ErrorKind, r.Error)
				}
			}
			for _, r := range srv.Requests() {
				if r.Header.Get("Authorization") != "Bearer "+escapedKey {
					t.Errorf("%s %s went without the token", r.Method, r.Path)
				}
			}
		}
	}
}

// TestRedirectIsARow: a redirect on the chat endpoint is never followed:
// each request is a row of kind status naming the redirect and its
// target, and nothing reaches the target.
func TestRedirectIsARow(t *testing.T) {
	t.Setenv("INFERBENCH_TEST_ESCAPED_KEY", escapedKey)
	other := hostile.New(t, hostile.JSON(200, `{}`))
	for _, code := range []int{301, 307} {
		srv := hostile.New(t, hostile.Redirect(code, other.URL+"/v1/chat/completions"))
		o := runAgainst(t, srv, "--model", "m", "--api-key-env", "INFERBENCH_TEST_ESCAPED_KEY")
		if len(o.doc.Requests) != 2 {
			t.Fatalf("%d: %d rows, want 2 (%v)", code, len(o.doc.Requests), o.err)
		}
		for _, r := range o.doc.Requests {
			if engine.Kind(r.ErrorKind) != engine.KindStatus || !strings.Contains(r.Error, "redirect to "+other.URL) {
				t.Errorf("%d: row %d kind %q, error %q; want the redirect named", code, r.Index, r.ErrorKind, r.Error)
			}
		}
	}
	if n := other.Count(); n != 0 {
		t.Errorf("%d requests reached the redirect's target", n)
	}
}

// TestEveryWaitBounded: an endless stream and a server that never sends
// its headers each end as a row of kind timeout within --timeout.
func TestEveryWaitBounded(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{"endless stream": hostile.Endless(), "no headers": hostile.NoHeaders()} {
		t.Run(name, func(t *testing.T) {
			srv := hostile.New(t, h)
			o := runAgainst(t, srv, "--model", "m", "--timeout", "300ms", "--num-requests", "1")
			if len(o.doc.Requests) != 1 {
				t.Fatalf("%d rows, want 1 (%v)", len(o.doc.Requests), o.err)
			}
			if r := o.doc.Requests[0]; engine.Kind(r.ErrorKind) != engine.KindTimeout {
				t.Errorf("row kind %q (%s), want timeout", r.ErrorKind, r.Error)
			}
		})
	}
}

// TestModelListRetryAfterBounded: a 503 asking for Retry-After: 100000 on
// /v1/models ends the run at once when even the capped wait would outlast
// --timeout, with the 503 and the Retry-After named.
func TestModelListRetryAfterBounded(t *testing.T) {
	srv := hostile.New(t, hostile.RetryAfter(http.StatusServiceUnavailable, "100000"))
	timeout := httpsafe.MaxRetryAfter / 3
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--base-url", srv.URL, "--tokenizer", hftest.WriteTokenizer(t),
		"--pp", "40", "--tg", "4", "--num-requests", "1", "--timeout", timeout.String()}, &stdout, &stderr)
	if code := cli.ExitCode(err); code != cli.ExitFailed || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "Retry-After") {
		t.Fatalf("run = %v (exit %d), want the model list's 503 and its Retry-After", err, code)
	}
	if n := srv.Count(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
