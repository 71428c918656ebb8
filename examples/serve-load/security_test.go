package main

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/inferbench/inferbench/benchkit/cli"
	"github.com/inferbench/inferbench/engine"
	"github.com/inferbench/inferbench/promptsize/hf/hftest"
)

// TestAPIKeyNeverLeaks runs serve-load with --api-key-env against a server
// that checks the bearer token and then fails every chat request with an
// error body that echoes the Authorization header back: the token goes out
// in that header only, and appears in no error, no output, no JSONL row
// and no results file (the echoed copy is redacted).
func TestAPIKeyNeverLeaks(t *testing.T) {
	const key = "sk-inferbench-test-9f2c81d7e4"
	t.Setenv("INFERBENCH_TEST_KEY", key)
	var authorized, bodiesWithKey atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), key) {
			bodiesWithKey.Add(1)
		}
		// Chat requests only: the connections opened before the run (a
		// same-origin GET of the model list) carry the token too.
		if r.Header.Get("Authorization") == "Bearer "+key && strings.HasSuffix(r.URL.Path, "/chat/completions") {
			authorized.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":{"message":"bad credentials: `+r.Header.Get("Authorization")+`"}}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	jsonl, out := filepath.Join(dir, "rows.jsonl"), filepath.Join(dir, "out.json")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--base-url", srv.URL, "--model", "m", "--tokenizer", hftest.WriteTokenizer(t),
		"--api-key-env", "INFERBENCH_TEST_KEY", "--pp", "40", "--tg", "4", "--num-requests", "3",
		"--format", "json", "--jsonl", jsonl, "--json-out", out}, &stdout, &stderr)
	if code := cli.ExitCode(err); code != cli.ExitFailed {
		t.Fatalf("exit %d (err %v), want %d", code, err, cli.ExitFailed)
	}
	if n := authorized.Load(); n != 3 {
		t.Errorf("%d requests carried the bearer token, want 3", n)
	}
	if n := bodiesWithKey.Load(); n != 0 {
		t.Errorf("%d request bodies held the token", n)
	}
	files := map[string]string{"error": err.Error(), "stdout": stdout.String(), "stderr": stderr.String()}
	for _, p := range []string{jsonl, out} {
		b, rerr := os.ReadFile(p)
		if rerr != nil {
			t.Fatal(rerr)
		}
		files[filepath.Base(p)] = string(b)
	}
	for name, text := range files {
		if strings.Contains(text, key) {
			t.Errorf("%s holds the API key:\n%s", name, text)
		}
	}
	rows := readRows(t, jsonl)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	for _, r := range rows {
		if engine.Kind(r.ErrorKind) != engine.KindStatus || !strings.Contains(r.Error, "Bearer [REDACTED]") {
			t.Errorf("request %d: kind %q, error %q; want a status error with the echoed token redacted", r.Index, r.ErrorKind, r.Error)
		}
	}
}

// TestTLSVerifiedByDefault points serve-load at an HTTPS server whose
// certificate no system root signs: every request fails on the
// certificate, and no request reaches the handler.
func TestTLSVerifiedByDefault(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	defer srv.Close()
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "rows.jsonl")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--base-url", srv.URL, "--model", "m", "--tokenizer", hftest.WriteTokenizer(t),
		"--pp", "40", "--tg", "4", "--num-requests", "2", "--jsonl", jsonl}, &stdout, &stderr)
	if code := cli.ExitCode(err); code != cli.ExitFailed {
		t.Fatalf("exit %d (err %v), want %d", code, err, cli.ExitFailed)
	}
	rows := readRows(t, jsonl)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	for _, r := range rows {
		if engine.Kind(r.ErrorKind) != engine.KindConnect || !strings.Contains(r.Error, "certificate") {
			t.Errorf("request %d: error %q (%s), want a certificate error", r.Index, r.Error, r.ErrorKind)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests reached the handler over an unverified connection", n)
	}
}
