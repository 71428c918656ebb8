package main

import (
	"bytes"
	"context"
	"encoding/json"
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

const offlineKey = "sk-offline/9f2c+Zé😀x"

// leaks reports whether text holds the key, as it is or escaped.
func leaks(text string) bool {
	return hostile.Leaks(text, offlineKey) || httpsafe.Contains(text, offlineKey)
}

// runOffline runs offline against srv with the given flags (after a small
// load) and returns its error, every text it wrote, and its results.
func runOffline(t *testing.T, srv *hostile.Server, args ...string) (map[string]string, benchkit.LoadDocument, error) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.json")
	var stdout, stderr bytes.Buffer
	// --allow-saturated: secrets are under test, not the burst's skew.
	err := run(context.Background(), append([]string{"--allow-saturated", "--base-url", srv.URL, "--num-seqs", "2",
		"--min-input-len", "40", "--max-input-len", "50", "--min-output-len", "4", "--max-output-len", "4", "--json-out", out}, args...), &stdout, &stderr)
	texts := map[string]string{"stdout": stdout.String(), "stderr": stderr.String()}
	if err != nil {
		texts["error"] = err.Error()
	}
	doc := newLoadDocument()
	if b, rerr := os.ReadFile(out); rerr == nil {
		texts["out.json"] = string(b)
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("results JSON: %v", err)
		}
	}
	return texts, doc, err
}

// TestEscapedKeyNeverLeaks: a 401 echoing the Authorization header
// escaped (\/ or \uXXXX) leaves the key in no error, output or results
// file; every row is a status error with the echo redacted.
func TestEscapedKeyNeverLeaks(t *testing.T) {
	t.Setenv("INFERBENCH_TEST_OFFLINE_KEY", offlineKey)
	for name, esc := range map[string]func(string) string{
		"slashes": hostile.EscapeSlashes, "non-ASCII": hostile.EscapeNonASCII, "all": hostile.EscapeAll,
	} {
		srv := hostile.New(t, hostile.EchoAuth(http.StatusUnauthorized, esc))
		texts, doc, err := runOffline(t, srv, "--model", "m", "--tokenizer", hftest.WriteTokenizer(t), "--api-key-env", "INFERBENCH_TEST_OFFLINE_KEY")
		if code := cli.ExitCode(err); code != cli.ExitFailed {
			t.Fatalf("%s: exit %d (%v), want %d", name, code, err, cli.ExitFailed)
		}
		for what, text := range texts {
			if leaks(text) {
				t.Errorf("%s: %s holds the key:\n%s", name, what, text)
			}
		}
		if len(doc.Requests) != 2 {
			t.Fatalf("%s: %d rows, want 2", name, len(doc.Requests))
		}
		for _, r := range doc.Requests {
			if engine.Kind(r.ErrorKind) != engine.KindStatus || !strings.Contains(r.Error, httpsafe.Redacted) {
				t.Errorf("%s: row %d kind %q, error %q; want a 401 with the echo redacted", name, r.Index, r.ErrorKind, r.Error)
			}
		}
	}
}

// TestEveryWaitBounded: an endless stream and a server that never sends
// its headers are failed requests of kind timeout after --timeout; a
// redirect is a status row naming it, with nothing sent to its target.
func TestEveryWaitBounded(t *testing.T) {
	other := hostile.New(t, hostile.JSON(200, `{}`))
	for name, c := range map[string]struct {
		h    http.HandlerFunc
		kind engine.Kind
		text string
	}{
		"endless stream": {hostile.Endless(), engine.KindTimeout, ""},
		"no headers":     {hostile.NoHeaders(), engine.KindTimeout, ""},
		"redirect":       {hostile.Redirect(http.StatusPermanentRedirect, other.URL+"/v1/chat/completions"), engine.KindStatus, "308 redirect to " + other.URL},
	} {
		t.Run(name, func(t *testing.T) {
			srv := hostile.New(t, c.h)
			_, doc, err := runOffline(t, srv, "--model", "m", "--tokenizer", hftest.WriteTokenizer(t), "--timeout", "300ms", "--num-seqs", "1")
			if code := cli.ExitCode(err); code != cli.ExitFailed || len(doc.Requests) != 1 {
				t.Fatalf("exit %d (%v), %d rows; want %d and 1 row", code, err, len(doc.Requests), cli.ExitFailed)
			}
			if r := doc.Requests[0]; engine.Kind(r.ErrorKind) != c.kind || !strings.Contains(r.Error, c.text) {
				t.Errorf("row kind %q, error %q; want %s naming %q", r.ErrorKind, r.Error, c.kind, c.text)
			}
		})
	}
	if n := other.Count(); n != 0 {
		t.Errorf("%d requests reached the redirect's target", n)
	}
}
